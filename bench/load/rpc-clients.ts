import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { createClient, type CallOptions } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import grpc from "@grpc/grpc-js";
import { RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import type { HttpRequest } from "./http-load.js";
import type { Call } from "./load.js";

/** The RelationService RPCs by their local (camelCase) names. */
export type RpcName = keyof typeof RelationService.method;

/** A request of any RPC, in init form (plain object of the request message's fields). */
export type RpcRequest = MessageInitShape<DescMessage>;

/** An RPC client the bench drives. */
export interface RpcClient {
  /** A Call cycling over `requests`; the answer is not decoded beyond what the transport must do. */
  caller(name: RpcName, requests: readonly RpcRequest[]): Call;
  /** One call, decoded: how many items its `data` holds (1 for a message such as EncryptedData). */
  probe(name: RpcName, request: RpcRequest): Promise<number>;
  close(): void;
}

/**
 * grpc-js channels the bench's gRPC calls are dealt over. One channel is one HTTP/2 connection with
 * every call in flight multiplexed on it: client and server then take turns, each idle while the
 * other works through the batch the connection delivered (1.2 of the 2 cores busy), where autocannon
 * spreads REST over 50 connections. Eight channels, as several client instances of a microservice
 * would open, kept 1.6 cores busy and served 20–50% more calls than one, alternating on the rig
 * (about as many as 50 channels did).
 */
export const GRPC_CHANNELS = 8;

/**
 * @grpc/grpc-js over GRPC_CHANNELS channels, calls dealt round-robin, requests serialized once up
 * front so that the client spends as little of the shared CPU as it can.
 */
export function createGrpcClient(port: number, apiKey: string): RpcClient {
  const clients = Array.from(
    { length: GRPC_CHANNELS },
    () =>
      new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
        // The load generator shares the cores with relgraph: channelz bookkeeping and the retry
        // machinery, which a load generator never uses, cost it 10–15% of its CPU per call.
        "grpc.enable_channelz": 0,
        "grpc.enable_retries": 0,
        // grpc-js otherwise shares one connection among all clients of the same target and options.
        "grpc.use_local_subchannel_pool": 1,
      }),
  );
  let turn = 0;
  const metadata = new grpc.Metadata();
  metadata.set("apikey", apiKey);
  const path = (name: RpcName) => `/${RelationService.typeName}/${RelationService.method[name].name}`;
  const same = (bytes: Buffer) => bytes;
  const unary = (name: RpcName, body: Buffer) =>
    new Promise<Buffer>((resolve, reject) =>
      clients[turn++ % GRPC_CHANNELS]!.makeUnaryRequest(path(name), same, same, body, metadata, (error, value) =>
        error ? reject(error) : resolve(value!),
      ),
    );
  const encode = (name: RpcName, request: RpcRequest) => {
    const input = RelationService.method[name].input as DescMessage;
    return Buffer.from(toBinary(input, create(input, request)));
  };
  return {
    caller(name, requests) {
      const bodies = requests.map((request) => encode(name, request));
      return (i) => unary(name, bodies[i % bodies.length]!);
    },
    async probe(name, request) {
      const output = RelationService.method[name].output as DescMessage;
      return dataItems(fromBinary(output, await unary(name, encode(name, request))));
    },
    close: () => clients.forEach((client) => client.close()),
  };
}

/** connect-node's Connect transport, binary Protobuf over HTTP/2 (h2c), as a generated client uses it. */
export function createConnectClient(port: number, apiKey: string): RpcClient {
  const baseUrl = `http://127.0.0.1:${port}`;
  const sessionManager = new Http2SessionManager(baseUrl);
  const transport = createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true, sessionManager });
  const client = createClient(RelationService, transport);
  const options: CallOptions = { headers: { apikey: apiKey } };
  const invoke = (name: RpcName, request: RpcRequest) =>
    (client[name] as (request: RpcRequest, options: CallOptions) => Promise<unknown>)(request, options);
  return {
    caller(name, requests) {
      return (i) => invoke(name, requests[i % requests.length]!);
    },
    async probe(name, request) {
      return dataItems(await invoke(name, request));
    },
    close: () => sessionManager.abort(),
  };
}

function dataItems(response: unknown): number {
  const data = (response as { data?: unknown }).data;
  if (Array.isArray(data)) return data.length;
  return data === undefined ? 0 : 1;
}

/** Headers of a binary Connect unary call, besides the ApiKey. */
export const CONNECT_POST_HEADERS = { "Content-Type": "application/proto", "Connect-Protocol-Version": "1" } as const;

/**
 * Connect unary calls as plain HTTP POSTs, for an HTTP load generator: the bytes a Connect client
 * sends over HTTP/1.1 (binary message, Content-Type application/proto), encoded once up front.
 */
export function connectPosts(name: RpcName, requests: readonly RpcRequest[]): HttpRequest[] {
  const method = RelationService.method[name];
  const input = method.input as DescMessage;
  return requests.map((request) => ({
    method: "POST",
    path: `/${RelationService.typeName}/${method.name}`,
    body: Buffer.from(toBinary(input, create(input, request))),
  }));
}

/** Items in the `data` of one Connect unary answer sent over plain HTTP (see connectPosts); throws on a failure. */
export async function probeConnectPost(baseUrl: string, apiKey: string, name: RpcName, request: HttpRequest): Promise<number> {
  const response = await fetch(baseUrl + request.path, { method: "POST", headers: { ...CONNECT_POST_HEADERS, apikey: apiKey }, body: request.body ? new Uint8Array(request.body) : undefined });
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (response.status !== 200) throw new Error(`Connect POST answered ${response.status}: ${Buffer.from(bytes).toString("utf8").slice(0, 200)}`);
  return dataItems(fromBinary(RelationService.method[name].output as DescMessage, bytes));
}
