import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  MutualFriendRequestSchema,
  MutualFriendResponseSchema,
  RelationService,
} from "../../../gen/relgraph/v1/relation_service_pb.js";
import { InvalidApiKeyError } from "../../../src/domain/errors.js";
import { createConnectUnaryHandler } from "../../../src/rpc/unary/connect-handler.js";
import { createGrpcUnaryHandler } from "../../../src/rpc/unary/grpc-handler.js";
import { createUnaryCaller } from "../../../src/rpc/unary/unary-call.js";
import { createOnePortServer, type Http2StreamClaim, type RequestClaim } from "../../../src/transport/one-port.js";
import { addr, fixtureRecords } from "../../support/fixtures.js";
import { TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../../support/relgraph-server.js";
import { createRelationGrpcClient, errorDetailsOf } from "../../server/grpc-client.js";

const MUTUAL_FRIEND_PATH = `/${RelationService.typeName}/${RelationService.method.mutualFriend.name}`;

/** A gRPC message envelope: flags byte, big-endian length, message. */
function envelope(message: Uint8Array, flags = 0): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame[0] = flags;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

interface RawReply {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
}

/** One POST over a fresh h2c session, exactly as given: for requests no gRPC library would send. */
async function rawPost(url: string, path: string, body: Uint8Array, headers: http2.OutgoingHttpHeaders = {}): Promise<RawReply> {
  const session = http2.connect(url);
  try {
    return await new Promise<RawReply>((resolve, reject) => {
      const request = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc+proto",
        te: "trailers",
        apikey: TEST_API_KEY,
        ...headers,
      });
      const reply: RawReply = { headers: {}, trailers: {}, body: Buffer.alloc(0) };
      const chunks: Buffer[] = [];
      request.on("response", (h) => (reply.headers = h));
      request.on("trailers", (t) => (reply.trailers = t));
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => resolve({ ...reply, body: Buffer.concat(chunks) }));
      request.on("error", reject);
      request.end(body);
    });
  } finally {
    session.close();
  }
}

/** grpc-status and the contract code of a trailers-only error reply. */
function errorOf(reply: RawReply): { status: string; code: string | undefined; message: string } {
  const status = String(reply.headers["grpc-status"] ?? reply.trailers["grpc-status"]);
  const bin = String(reply.headers["grpc-status-details-bin"] ?? "");
  const metadata = new grpc.Metadata();
  if (bin) metadata.set("grpc-status-details-bin", Buffer.from(bin, "base64"));
  const code = bin ? errorDetailsOf({ metadata } as grpc.ServiceError).details[0]?.code : undefined;
  return { status, code, message: decodeURIComponent(String(reply.headers["grpc-message"] ?? "")) };
}

describe("the unary fast paths, as relgraph serves them", () => {
  let server: RunningRelgraph;
  const sessions: Http2SessionManager[] = [];
  const transport = (options: Omit<Parameters<typeof createGrpcTransport>[0], "baseUrl">): Transport => {
    const sessionManager = new Http2SessionManager(server.url);
    sessions.push(sessionManager);
    return createGrpcTransport({ baseUrl: server.url, sessionManager, ...options });
  };
  const request = { address: [addr("alice"), addr("bob")], limit: 3 };

  beforeAll(async () => {
    // These are the fast gRPC path's own answers: it is on here whatever FAST_PATHS the suite runs with.
    server = await startRelgraph({ records: fixtureRecords(), env: { FAST_PATHS: "on" } });
  });
  afterAll(async () => {
    for (const manager of sessions) manager.abort();
    await server?.close();
  });

  it("gives the same answer as connect-es, which still serves gRPC-JSON and compressed gRPC and Connect requests", async () => {
    const headers = { apikey: TEST_API_KEY };
    const binary = await createClient(RelationService, transport({})).mutualFriend(request, { headers });
    const json = await createClient(RelationService, transport({ useBinaryFormat: false })).mutualFriend(request, { headers });
    const gzip = await createClient(RelationService, transport({ sendCompression: compressionGzip, compressMinBytes: 0 })).mutualFriend(request, { headers });
    expect(binary.data.map((u) => u.relationId?.relationId)).toEqual(["carol", "dave", "erin"]);
    expect(equals(MutualFriendResponseSchema, json, binary)).toBe(true);
    expect(equals(MutualFriendResponseSchema, gzip, binary)).toBe(true);
    const connectGzip = createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", useBinaryFormat: true, sendCompression: compressionGzip, compressMinBytes: 0 });
    expect(equals(MutualFriendResponseSchema, await createClient(RelationService, connectGzip).mutualFriend(request, { headers }), binary)).toBe(true);
  });

  it("answers a raw unary call with one message, then grpc-status 0 in the trailers", async () => {
    const reply = await rawPost(server.url, MUTUAL_FRIEND_PATH, envelope(toBinary(MutualFriendRequestSchema, create(MutualFriendRequestSchema, request))));
    expect(reply.headers[":status"]).toBe(200);
    expect(reply.headers["content-type"]).toBe("application/grpc+proto");
    expect(reply.trailers["grpc-status"]).toBe("0");
    expect(reply.body.readUInt32BE(1)).toBe(reply.body.length - 5);
    const message = fromBinary(MutualFriendResponseSchema, reply.body.subarray(5));
    expect(message.data.map((u) => u.relationId?.relationId)).toEqual(["carol", "dave", "erin"]);
    expect(message.cursor).not.toBe("");
  });

  it("refuses malformed envelopes and messages with 11600, naming the problem", async () => {
    const valid = toBinary(MutualFriendRequestSchema, create(MutualFriendRequestSchema, request));
    const cases: [string, Uint8Array, RegExp][] = [
      ["no message", new Uint8Array(0), /carries no message/],
      ["a length that disagrees with the body", envelope(valid).subarray(0, 10), /exactly one message/],
      ["two messages", Buffer.concat([envelope(valid), envelope(valid)]), /exactly one message/],
      ["a compressed flag without grpc-encoding", envelope(valid, 1), /flagged compressed/],
      ["bytes that are no MutualFriendRequest", envelope(Uint8Array.from([0x0a, 0xff, 0xff])), /not a valid relgraph\.v1\.MutualFriendRequest/],
    ];
    for (const [what, body, message] of cases) {
      const error = errorOf(await rawPost(server.url, MUTUAL_FRIEND_PATH, body));
      expect(error.status, what).toBe(String(grpc.status.INVALID_ARGUMENT));
      expect(error.code, what).toBe("11600");
      expect(error.message, what).toMatch(message);
    }
  });

  it("refuses an unknown ApiKey with 10002, as the connect-es routes do", async () => {
    const body = envelope(toBinary(MutualFriendRequestSchema, create(MutualFriendRequestSchema, request)));
    const error = errorOf(await rawPost(server.url, MUTUAL_FRIEND_PATH, body, { apikey: "not-a-key" }));
    expect(error).toEqual({ status: String(grpc.status.UNAUTHENTICATED), code: "10002", message: "ApiKey is unknown or revoked" });
  });
});

describe("createGrpcUnaryHandler on its own", () => {
  let url: string;
  let port: number;
  let h2: ReturnType<typeof createOnePortServer>;
  const claimed: string[] = [];
  /** Calls of the stub that never answer, so that only a deadline or a cancellation ends them. */
  const hanging: (() => void)[] = [];

  beforeAll(async () => {
    const stub = {
      mutualFriend: (req: { limit: number }) => {
        if (req.limit === 99) return new Promise((resolve) => hanging.push(() => resolve({ data: [], cursor: "released" })));
        if (req.limit === 98) throw new Error("redis://secret-host:6379 is down");
        // Replies that cannot be encoded (in binary; in JSON) must fail the call, not the process.
        if (req.limit === 97) return Promise.resolve(undefined as never);
        if (req.limit === 96) return Promise.resolve({ data: [{ address: [42] }] } as never);
        return Promise.resolve({ data: [], cursor: `limit ${req.limit}` });
      },
    };
    const caller = createUnaryCaller({
      service: RelationService,
      impl: stub,
      gate: {
        async admit(key) {
          if (key !== TEST_API_KEY) throw new InvalidApiKeyError("ApiKey is unknown or revoked");
          return { caller: { keyId: "test" } };
        },
      },
      log: { info() {}, warn() {}, error() {} },
      maxRequestBytes: 64 * 1024,
    });
    const grpcPath = createGrpcUnaryHandler(caller);
    const connectPath = createConnectUnaryHandler(caller);
    const claimStream: Http2StreamClaim = (stream, headers) => {
      const taken = grpcPath(stream, headers);
      if (taken) claimed.push(`grpc ${String(headers[":path"])}`);
      return taken;
    };
    const claimRequest: RequestClaim = (req, res) => {
      const taken = connectPath(req, res);
      if (taken) claimed.push(`connect ${req.url}`);
      return taken;
    };
    h2 = createOnePortServer((_req, res) => res.writeHead(404).end("not claimed"), { claimStream, claimRequest, closeGraceMs: 200 });
    await new Promise<void>((resolve) => h2.listen(0, "127.0.0.1", resolve));
    port = (h2.address() as AddressInfo).port;
    url = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    for (const release of hanging) release();
    await new Promise((resolve) => h2.close(resolve));
  });

  it("claims only unary binary gRPC calls of the service; everything else reaches the handler", async () => {
    claimed.length = 0;
    const body = envelope(toBinary(MutualFriendRequestSchema, create(MutualFriendRequestSchema, { limit: 5 })));
    const passes: [string, string, http2.OutgoingHttpHeaders][] = [
      ["gRPC-JSON", MUTUAL_FRIEND_PATH, { "content-type": "application/grpc+json" }],
      ["gzip-compressed", MUTUAL_FRIEND_PATH, { "grpc-encoding": "gzip" }],
      ["gRPC-Web", MUTUAL_FRIEND_PATH, { "content-type": "application/grpc-web+proto" }],
      ["Connect streaming", MUTUAL_FRIEND_PATH, { "content-type": "application/connect+proto" }],
      ["Connect, gzip-compressed", MUTUAL_FRIEND_PATH, { "content-type": "application/proto", "content-encoding": "gzip" }],
      ["Connect, another protocol version", MUTUAL_FRIEND_PATH, { "content-type": "application/proto", "connect-protocol-version": "2" }],
      ["an unknown method", `/${RelationService.typeName}/Nope`, {}],
      ["another service", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", {}],
    ];
    for (const [what, path, headers] of passes) {
      const reply = await rawPost(url, path, body, headers);
      expect(reply.headers[":status"], what).toBe(404);
      expect(reply.body.toString(), what).toBe("not claimed");
    }
    expect(claimed).toEqual([]);
    const reply = await rawPost(url, MUTUAL_FRIEND_PATH, body, { "content-type": "application/grpc", "grpc-encoding": "identity" });
    expect(reply.trailers["grpc-status"]).toBe("0");
    expect(fromBinary(MutualFriendResponseSchema, reply.body.subarray(5)).cursor).toBe("limit 5");
    expect(claimed).toEqual([`grpc ${MUTUAL_FRIEND_PATH}`]);
    claimed.length = 0;
    const get = await fetch(`${url}${MUTUAL_FRIEND_PATH}?connect=v1&encoding=json&message=%7B%7D`);
    expect(await get.text()).toBe("not claimed");
    expect(claimed).toEqual([]);
  });

  it("serves Connect unary POSTs, binary and JSON, over HTTP/1.1", async () => {
    claimed.length = 0;
    const binary = await fetch(url + MUTUAL_FRIEND_PATH, {
      method: "POST",
      headers: { "content-type": "application/proto", "connect-protocol-version": "1", apikey: TEST_API_KEY },
      body: toBinary(MutualFriendRequestSchema, create(MutualFriendRequestSchema, { limit: 4 })),
    });
    expect(binary.status).toBe(200);
    expect(binary.headers.get("content-type")).toBe("application/proto");
    expect(fromBinary(MutualFriendResponseSchema, new Uint8Array(await binary.arrayBuffer())).cursor).toBe("limit 4");
    const json = await fetch(url + MUTUAL_FRIEND_PATH, {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8", apikey: TEST_API_KEY },
      body: JSON.stringify({ limit: 6 }),
    });
    expect(json.headers.get("content-type")).toBe("application/json");
    expect(await json.json()).toEqual({ cursor: "limit 6" });
    expect(claimed).toEqual([`connect ${MUTUAL_FRIEND_PATH}`, `connect ${MUTUAL_FRIEND_PATH}`]);
  });

  it("answers Connect failures with connect-es's JSON error body, the mapped status and the contract code", async () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(url + MUTUAL_FRIEND_PATH, { method: "POST", headers: { "content-type": "application/json", apikey: TEST_API_KEY, ...headers }, body });
    const malformed = await post("{not json");
    expect(malformed.status).toBe(400);
    const error = (await malformed.json()) as { code: string; message: string; details: { type: string; value: string }[] };
    expect(error.code).toBe("invalid_argument");
    expect(error.message).toMatch(/not a valid relgraph\.v1\.MutualFriendRequest message/);
    expect(error.details.map((d) => d.type)).toEqual(["relgraph.v1.ErrorDetail"]);
    const unknownKey = await post("{}", { apikey: "nope" });
    expect(unknownKey.status).toBe(401);
    expect(((await unknownKey.json()) as { code: string }).code).toBe("unauthenticated");
    const late = await post(JSON.stringify({ limit: 99 }), { "connect-timeout-ms": "50" });
    expect(((await late.json()) as { code: string }).code).toBe("deadline_exceeded");
  });

  it("ends a call at the client's grpc-timeout with DEADLINE_EXCEEDED", async () => {
    const body = envelope(toBinary(MutualFriendRequestSchema, create(MutualFriendRequestSchema, { limit: 99 })));
    const reply = await rawPost(url, MUTUAL_FRIEND_PATH, body, { "grpc-timeout": "50m" });
    expect(errorOf(reply).status).toBe(String(grpc.status.DEADLINE_EXCEEDED));
    const malformed = await rawPost(url, MUTUAL_FRIEND_PATH, body, { "grpc-timeout": "soon" });
    expect(errorOf(malformed)).toMatchObject({ status: String(grpc.status.INVALID_ARGUMENT), code: "11600" });
  });

  it("reports an unexpected failure, or a reply that cannot be encoded, as 50000 without its text", async () => {
    const client = createRelationGrpcClient(`127.0.0.1:${port}`);
    try {
      for (const limit of [98, 97]) {
        const error = await client.call(RelationService.method.mutualFriend, create(MutualFriendRequestSchema, { limit })).then(
          () => expect.unreachable("the failing call succeeded"),
          (err: grpc.ServiceError) => err,
        );
        expect(error.code).toBe(grpc.status.INTERNAL);
        expect(errorDetailsOf(error).details.map((d) => d.code)).toEqual(["50000"]);
        expect(error.details).toBe("internal error");
        expect(JSON.stringify(error.metadata.toJSON())).not.toContain("secret-host");
      }
      const connect = await fetch(url + MUTUAL_FRIEND_PATH, {
        method: "POST",
        headers: { "content-type": "application/json", apikey: TEST_API_KEY },
        body: JSON.stringify({ limit: 96 }),
      });
      expect(connect.status).toBe(500);
      expect(((await connect.json()) as { message: string }).message).toBe("internal error");
    } finally {
      client.close();
    }
  });

  it("survives a client that cancels mid-call, and keeps serving on the same channel", async () => {
    const client = createRelationGrpcClient(`127.0.0.1:${port}`);
    try {
      const grpcClient = client.client as unknown as Record<string, (...args: unknown[]) => grpc.ClientUnaryCall>;
      const waiting = hanging.length;
      const metadata = new grpc.Metadata();
      metadata.set("apikey", TEST_API_KEY);
      const call = grpcClient.mutualFriend!.call(client.client, create(MutualFriendRequestSchema, { limit: 99 }), metadata, () => {});
      await expect.poll(() => hanging.length).toBe(waiting + 1);
      call.cancel();
      hanging.at(-1)!();
      const next = await client.call(RelationService.method.mutualFriend, create(MutualFriendRequestSchema, { limit: 7 }));
      expect(next.cursor).toBe("limit 7");
    } finally {
      client.close();
    }
  });
});
