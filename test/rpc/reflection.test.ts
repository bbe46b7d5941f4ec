import { execFile } from "node:child_process";
import type { Http2Server, Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { create, createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import type { DescService, MessageInitShape } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  file_google_protobuf_empty,
  file_google_protobuf_timestamp,
} from "@bufbuild/protobuf/wkt";
import { Code, createClient, createRouterTransport } from "@connectrpc/connect";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import { Http2SessionManager, createGrpcTransport } from "@connectrpc/connect-node";
import { fastify } from "fastify";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { registerReflection } from "../../src/rpc/reflection.js";

const bufBin = fileURLToPath(new URL("../../node_modules/.bin/buf", import.meta.url));
const relgraphFile = "relgraph/v1/relation_service.proto";
const reflectionServices = ["grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"];
const addressA = "0x52908400098527886E0F7030069857D2E4169EE7";
const addressB = "0x8617e340b3d01fa5f11f306f4090fd50e238070d";

type Request = MessageInitShape<typeof v1.ServerReflectionRequestSchema>;

/** Sends all requests on one reflection stream and collects the responses. */
async function reflect(transport: Transport, requests: Request[]): Promise<v1.ServerReflectionResponse[]> {
  async function* send() {
    yield* requests;
  }
  const responses: v1.ServerReflectionResponse[] = [];
  for await (const response of createClient(v1.ServerReflection, transport).serverReflectionInfo(send())) {
    responses.push(response);
  }
  return responses;
}

/** Names of the files in a file_descriptor_response, decoded from their FileDescriptorProto bytes. */
function fileNames(response: v1.ServerReflectionResponse | undefined): string[] {
  expect(response?.messageResponse.case).toBe("fileDescriptorResponse");
  if (response?.messageResponse.case !== "fileDescriptorResponse") return [];
  return response.messageResponse.value.fileDescriptorProto.map(
    (bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name,
  );
}

describe("reflection on a real h2c server", () => {
  let app: FastifyInstance<Http2Server, Http2ServerRequest, Http2ServerResponse>;
  let baseUrl: string;
  // Which services the server saw calls for, so that a buf run provably used the version asked for.
  const calledServices = new Set<string>();
  const recordService: Interceptor = (next) => (req) => {
    calledServices.add(req.service.typeName);
    return next(req);
  };

  beforeAll(async () => {
    app = fastify({ http2: true });
    await app.register(fastifyConnectPlugin, {
      interceptors: [recordService],
      routes: (router) => {
        // Echoing the addresses proves that buf encoded the request from the reflected schema.
        router.service(RelationService, {
          mutualContractInteraction: (req) => ({ data: req.address.map((a) => a.toLowerCase()).sort() }),
        });
        registerReflection(router, { services: [RelationService] });
      },
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const address = app.server.address();
    if (address === null || typeof address === "string") throw new Error("server has no TCP address");
    baseUrl = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await app?.close();
  });

  async function bufCurl(...args: string[]): Promise<string> {
    const { stdout } = await promisify(execFile)(bufBin, [
      "curl",
      "--http2-prior-knowledge",
      "--protocol",
      "grpc",
      ...args,
    ]);
    return stdout;
  }

  const protocols = [
    { name: "default (v1 first)", flags: [], service: "grpc.reflection.v1.ServerReflection" },
    { name: "grpc-v1", flags: ["--reflect-protocol", "grpc-v1"], service: "grpc.reflection.v1.ServerReflection" },
    {
      name: "grpc-v1alpha",
      flags: ["--reflect-protocol", "grpc-v1alpha"],
      service: "grpc.reflection.v1alpha.ServerReflection",
    },
  ];

  describe.each(protocols)("buf curl with reflection $name", ({ flags, service }) => {
    it("lists the services, the reflection services included", async () => {
      calledServices.clear();
      const lines = (await bufCurl(...flags, "--list-services", baseUrl)).trim().split("\n");
      expect(lines.sort()).toEqual(["relgraph.v1.RelationService", ...reflectionServices].sort());
      expect([...calledServices]).toEqual([service]);
    });

    it("lists the five methods of RelationService", async () => {
      const lines = (await bufCurl(...flags, "--list-methods", baseUrl)).trim().split("\n");
      expect(lines).toContain("grpc.reflection.v1.ServerReflection/ServerReflectionInfo");
      expect(lines.filter((line) => line.startsWith("relgraph.")).sort()).toEqual(
        [
          "MultiDimensionalRecommendation",
          "MutualContractInteraction",
          "MutualFriend",
          "Profile",
          "RelationshipGraph",
        ].map((method) => `relgraph.v1.RelationService/${method}`),
      );
    });

    it("calls MutualContractInteraction with a JSON body and prints JSON", async () => {
      calledServices.clear();
      const stdout = await bufCurl(
        ...flags,
        "-d",
        JSON.stringify({ address: [addressB, addressA] }),
        `${baseUrl}/relgraph.v1.RelationService/MutualContractInteraction`,
      );
      expect(JSON.parse(stdout)).toEqual({ data: [addressA.toLowerCase(), addressB] });
      expect([...calledServices].sort()).toEqual(["relgraph.v1.RelationService", service].sort());
    });
  });

  describe("a Connect gRPC client", () => {
    let transport: Transport;
    // Our own session manager, so that the HTTP/2 session can be closed and app.close() need not
    // wait for it to time out.
    let sessionManager: Http2SessionManager;
    beforeAll(() => {
      sessionManager = new Http2SessionManager(baseUrl);
      transport = createGrpcTransport({ baseUrl, sessionManager });
    });
    afterAll(() => sessionManager.abort());

    it("answers list_services", async () => {
      const [response] = await reflect(transport, [
        { host: "relgraph", messageRequest: { case: "listServices", value: "*" } },
      ]);
      expect(response?.validHost).toBe("relgraph");
      expect(response?.originalRequest?.messageRequest).toEqual({ case: "listServices", value: "*" });
      expect(response?.messageResponse.case).toBe("listServicesResponse");
      if (response?.messageResponse.case !== "listServicesResponse") return;
      expect(response.messageResponse.value.service.map((s) => s.name)).toEqual([
        "relgraph.v1.RelationService",
        ...reflectionServices,
      ]);
    });

    it("answers file_containing_symbol for messages, services, methods and fields", async () => {
      const symbols = [
        "relgraph.v1.UserInfo",
        ".relgraph.v1.MutualContractInteractionRequest",
        "relgraph.v1.RelationService",
        "relgraph.v1.RelationService.MutualFriend",
        "relgraph.v1.UserInfo.relation_id",
      ];
      const responses = await reflect(
        transport,
        symbols.map((value) => ({ messageRequest: { case: "fileContainingSymbol", value } })),
      );
      expect(responses.map(fileNames)).toEqual(symbols.map(() => [relgraphFile]));
      const first = responses[0]?.messageResponse;
      if (first?.case !== "fileDescriptorResponse") throw new Error("no file descriptor");
      const proto = fromBinary(FileDescriptorProtoSchema, first.value.fileDescriptorProto[0] ?? new Uint8Array());
      expect(proto.package).toBe("relgraph.v1");
      expect(proto.messageType.map((m) => m.name)).toContain("UserInfo");
      expect(proto.service[0]?.method).toHaveLength(5);
    });

    it("answers an unknown symbol with a NOT_FOUND error response and keeps the stream open", async () => {
      const responses = await reflect(transport, [
        { messageRequest: { case: "fileContainingSymbol", value: "relgraph.v1.Nope" } },
        { messageRequest: { case: "fileContainingSymbol", value: "relgraph.v1.RelationService.Nope" } },
        { messageRequest: { case: "fileByFilename", value: "nope.proto" } },
        { messageRequest: { case: "fileByFilename", value: relgraphFile } },
      ]);
      for (const response of responses.slice(0, 3)) {
        expect(response.messageResponse.case).toBe("errorResponse");
        if (response.messageResponse.case === "errorResponse") {
          expect(response.messageResponse.value.errorCode).toBe(5);
          expect(response.messageResponse.value.errorMessage).toMatch(/not found/);
        }
      }
      expect(fileNames(responses[3])).toEqual([relgraphFile]);
    });

    it("answers extension queries: NOT_FOUND, or the (empty) list of a known type", async () => {
      const [extension, knownType, unknownType] = await reflect(transport, [
        {
          messageRequest: {
            case: "fileContainingExtension",
            value: { containingType: "relgraph.v1.UserInfo", extensionNumber: 100 },
          },
        },
        { messageRequest: { case: "allExtensionNumbersOfType", value: "relgraph.v1.UserInfo" } },
        { messageRequest: { case: "allExtensionNumbersOfType", value: "relgraph.v1.Nope" } },
      ]);
      expect(extension?.messageResponse).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
      expect(knownType?.messageResponse).toMatchObject({
        case: "allExtensionNumbersResponse",
        value: { baseTypeName: "relgraph.v1.UserInfo", extensionNumber: [] },
      });
      expect(unknownType?.messageResponse).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
    });

    it("serves v1alpha from the same implementation", async () => {
      async function* send() {
        yield { messageRequest: { case: "fileContainingSymbol" as const, value: "relgraph.v1.Profile" } };
      }
      const responses: v1alpha.ServerReflectionResponse[] = [];
      for await (const r of createClient(v1alpha.ServerReflection, transport).serverReflectionInfo(send())) {
        responses.push(r);
      }
      expect(responses).toHaveLength(1);
      const answer = responses[0]?.messageResponse;
      expect(answer?.case).toBe("fileDescriptorResponse");
      if (answer?.case !== "fileDescriptorResponse") return;
      expect(answer.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name)).toEqual([
        relgraphFile,
      ]);
    });
  });
});

/**
 * A proto2 service file with imports and an extension, built at run time because relgraph's own
 * proto has neither.
 */
function createPingerService(): DescService {
  const LABEL_OPTIONAL = FieldDescriptorProto_Label.OPTIONAL;
  const proto = create(FileDescriptorProtoSchema, {
    name: "test/pinger.proto",
    package: "test",
    syntax: "proto2",
    dependency: ["google/protobuf/empty.proto", "google/protobuf/timestamp.proto"],
    messageType: [
      {
        name: "PingRequest",
        field: [
          {
            name: "at",
            number: 1,
            label: LABEL_OPTIONAL,
            type: FieldDescriptorProto_Type.MESSAGE,
            typeName: ".google.protobuf.Timestamp",
          },
        ],
        extensionRange: [{ start: 100, end: 200 }],
      },
    ],
    enumType: [{ name: "Mood", value: [{ name: "MOOD_UNSPECIFIED", number: 0 }] }],
    extension: [
      {
        name: "note",
        number: 100,
        label: LABEL_OPTIONAL,
        type: FieldDescriptorProto_Type.STRING,
        extendee: ".test.PingRequest",
      },
    ],
    service: [
      {
        name: "Pinger",
        method: [{ name: "Ping", inputType: ".test.PingRequest", outputType: ".google.protobuf.Empty" }],
      },
    ],
  });
  const wkt = [file_google_protobuf_empty, file_google_protobuf_timestamp];
  const registry = createFileRegistry(proto, (name) => wkt.find((file) => file.proto.name === name));
  const service = registry.getService("test.Pinger");
  if (!service) throw new Error("test.Pinger did not load");
  return service;
}

describe("reflection of files with dependencies (in-memory transport)", () => {
  const transport = createRouterTransport((router) => {
    registerReflection(router, { services: [createPingerService()] });
  });
  const deps = ["google/protobuf/empty.proto", "google/protobuf/timestamp.proto"];

  it("sends each file once per stream, but always the file asked for", async () => {
    const responses = await reflect(transport, [
      { messageRequest: { case: "fileContainingSymbol", value: "test.Pinger" } },
      { messageRequest: { case: "fileByFilename", value: "google/protobuf/empty.proto" } },
      { messageRequest: { case: "fileContainingSymbol", value: "test.Pinger.Ping" } },
      { messageRequest: { case: "fileContainingSymbol", value: "google.protobuf.Timestamp" } },
    ]);
    expect(responses.map(fileNames)).toEqual([
      ["test/pinger.proto", ...deps],
      ["google/protobuf/empty.proto"],
      ["test/pinger.proto"],
      ["google/protobuf/timestamp.proto"],
    ]);
  });

  it("finds enums and the imported files' own symbols", async () => {
    const responses = await reflect(transport, [
      { messageRequest: { case: "fileContainingSymbol", value: ".test.Mood" } },
      { messageRequest: { case: "fileContainingSymbol", value: "google.protobuf.Empty" } },
    ]);
    expect(responses.map(fileNames)).toEqual([["test/pinger.proto", ...deps], ["google/protobuf/empty.proto"]]);
  });

  it("starts afresh on a new stream", async () => {
    const responses = await reflect(transport, [
      { messageRequest: { case: "fileByFilename", value: "test/pinger.proto" } },
    ]);
    expect(responses.map(fileNames)).toEqual([["test/pinger.proto", ...deps]]);
  });

  it("finds extensions by extendee and number", async () => {
    const extension = (extensionNumber: number): Request => ({
      messageRequest: { case: "fileContainingExtension", value: { containingType: "test.PingRequest", extensionNumber } },
    });
    const [byNumber, numbers, missing] = await reflect(transport, [
      extension(100),
      { messageRequest: { case: "allExtensionNumbersOfType", value: ".test.PingRequest" } },
      extension(101),
    ]);
    expect(fileNames(byNumber)).toEqual(["test/pinger.proto", ...deps]);
    expect(numbers?.messageResponse).toMatchObject({
      case: "allExtensionNumbersResponse",
      value: { baseTypeName: "test.PingRequest", extensionNumber: [100] },
    });
    expect(missing?.messageResponse).toMatchObject({ case: "errorResponse", value: { errorCode: Code.NotFound } });
  });

  it("answers a request without a message_request with INVALID_ARGUMENT", async () => {
    const [response] = await reflect(transport, [{ host: "x" }]);
    expect(response?.messageResponse).toMatchObject({ case: "errorResponse", value: { errorCode: 3 } });
  });
});
