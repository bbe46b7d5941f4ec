import { createRegistry, fromBinary, toBinary, type DescMessage, type DescMethod, type MessageShape } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { AnySchema, anyUnpack, type Any } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import { ErrorDetailSchema, RelationService, type ErrorDetail } from "../../gen/relgraph/v1/relation_service_pb.js";
import { TEST_API_KEY } from "../support/relgraph-server.js";

/*
 * A real @grpc/grpc-js client of relgraph.v1.RelationService, built the way a grpc-js user without
 * generated grpc-js stubs would: makeGenericClientConstructor with protobuf-es (de)serializers.
 */

type UnaryCallback = (error: grpc.ServiceError | null, response?: unknown) => void;
type UnaryMethod = (request: unknown, metadata: grpc.Metadata, callback: UnaryCallback) => grpc.ClientUnaryCall;

/** A grpc-js client with one promise-returning method per RPC (by the RPC's local name). */
export interface RelationGrpcClient {
  call<M extends DescMethod>(method: M, request: MessageShape<M["input"]>, apiKey?: string | null): Promise<MessageShape<M["output"]>>;
  /** The underlying grpc-js client (its channel), e.g. to check connectivity. */
  client: grpc.Client;
  close(): void;
}

function definitionOf(method: DescMethod): grpc.MethodDefinition<unknown, unknown> {
  return {
    path: `/${RelationService.typeName}/${method.name}`,
    requestStream: false,
    responseStream: false,
    requestSerialize: (message) => Buffer.from(toBinary(method.input, message as MessageShape<DescMessage>)),
    requestDeserialize: (bytes) => fromBinary(method.input, bytes),
    responseSerialize: (message) => Buffer.from(toBinary(method.output, message as MessageShape<DescMessage>)),
    responseDeserialize: (bytes) => fromBinary(method.output, bytes),
  };
}

/** Connects a grpc-js client to `host:port` over plaintext HTTP/2. */
export function createRelationGrpcClient(target: string): RelationGrpcClient {
  const definition: grpc.ServiceDefinition = Object.fromEntries(RelationService.methods.map((m) => [m.localName, definitionOf(m)]));
  const Client = grpc.makeGenericClientConstructor(definition, "RelationService");
  const client = new Client(target, grpc.credentials.createInsecure());
  const methods = client as unknown as Record<string, UnaryMethod>;
  return {
    client,
    call(method, request, apiKey = TEST_API_KEY) {
      const metadata = new grpc.Metadata();
      if (apiKey !== null) metadata.set("apikey", apiKey);
      return new Promise((resolve, reject) => {
        methods[method.localName]!.call(client, request, metadata, (error, response) =>
          error ? reject(error) : resolve(response as MessageShape<(typeof method)["output"]>),
        );
      });
    },
    close: () => client.close(),
  };
}

const registry = createRegistry(ErrorDetailSchema);

/**
 * The relgraph.v1.ErrorDetail entries of a grpc-js error, read from its `grpc-status-details-bin`
 * trailer: a google.rpc.Status (1: code, 2: message, 3: repeated Any details), decoded by hand since
 * no google.rpc schema is generated here.
 */
export function errorDetailsOf(error: grpc.ServiceError): { status: { code: number; message: string }; details: ErrorDetail[] } {
  const [bin] = error.metadata.get("grpc-status-details-bin");
  if (!(bin instanceof Buffer)) throw new Error("the error has no grpc-status-details-bin trailer");
  const reader = new BinaryReader(bin);
  const status = { code: 0, message: "" };
  const anys: Any[] = [];
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1) status.code = reader.int32();
    else if (field === 2) status.message = reader.string();
    else if (field === 3) anys.push(fromBinary(AnySchema, reader.bytes()));
    else reader.skip(wireType);
  }
  const details = anys.map((any) => anyUnpack(any, registry)).filter((m): m is ErrorDetail => m?.$typeName === ErrorDetailSchema.typeName);
  return { status, details };
}
