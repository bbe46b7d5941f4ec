import http from "node:http";
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorDetailSchema, MutualFriendRequestSchema, RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import * as grpc from "@grpc/grpc-js";
import { addr, fixtureRecords } from "../support/fixtures.js";
import { SERVING_WAYS, TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { errorDetailsOf } from "./grpc-client.js";

/*
 * No request body is read or inflated past MAX_REQUEST_BYTES (64 KiB by
 * default), on any protocol or path, and a caller without an ApiKey is refused before its body is read.
 */

const PATH = `/${RelationService.typeName}/${RelationService.method.mutualFriend.name}`;
const LIMIT = 64 * 1024;

/** A gRPC message envelope. */
function envelope(message: Uint8Array, compressed = false): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame[0] = compressed ? 1 : 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

interface H2Reply {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
}

/**
 * One request over a fresh h2c session. With `end: false` the body is sent but the stream is left
 * open, as a client still uploading would: the answer must come anyway.
 */
async function h2Request(url: string, headers: http2.OutgoingHttpHeaders, body: Uint8Array, end = true): Promise<H2Reply> {
  const session = http2.connect(url);
  session.on("error", () => {});
  try {
    return await new Promise<H2Reply>((resolve, reject) => {
      const request = session.request({ ":method": "POST", ":path": PATH, ...headers });
      const reply: H2Reply = { headers: {}, trailers: {}, body: Buffer.alloc(0) };
      const chunks: Buffer[] = [];
      request.on("response", (h) => {
        reply.headers = h;
        // A trailers-only answer (gRPC) is complete with its headers.
        if (!end && h["grpc-status"] !== undefined) resolve(reply);
      });
      request.on("trailers", (t) => (reply.trailers = t));
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => resolve({ ...reply, body: Buffer.concat(chunks) }));
      request.on("error", reject);
      if (end) request.end(body);
      else request.write(body);
    });
  } finally {
    session.destroy();
  }
}

/** The trailers of a gRPC-Web reply: its last frame (flag 0x80) holds them as HTTP/1 header lines. */
function grpcWebTrailers(body: Buffer): http2.IncomingHttpHeaders {
  const trailers: http2.IncomingHttpHeaders = {};
  for (let at = 0; at + 5 <= body.length; at += 5 + body.readUInt32BE(at + 1)) {
    if (body[at] !== 0x80) continue;
    for (const line of body.subarray(at + 5, at + 5 + body.readUInt32BE(at + 1)).toString("latin1").split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon > 0) trailers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
  }
  return trailers;
}

/** grpc-status and the ErrorDetail code of a gRPC or gRPC-Web error reply, wherever it carries them. */
function grpcError(reply: H2Reply): { status: string; code: string | undefined } {
  const trailers = { ...grpcWebTrailers(reply.body), ...reply.trailers, ...reply.headers };
  const status = String(trailers["grpc-status"]);
  const bin = trailers["grpc-status-details-bin"];
  if (bin === undefined) return { status, code: undefined };
  const metadata = new grpc.Metadata();
  metadata.set("grpc-status-details-bin", Buffer.from(String(bin), "base64"));
  return { status, code: errorDetailsOf({ metadata } as grpc.ServiceError).details[0]?.code };
}

/** The contract code carried by a Connect JSON error. */
function connectDetailCode(body: { details?: { type: string; value: string }[] }): string | undefined {
  const detail = body.details?.find((d) => d.type === ErrorDetailSchema.typeName);
  return detail ? fromBinary(ErrorDetailSchema, Buffer.from(detail.value, "base64")).code : undefined;
}

const mutualFriend = (size: number) =>
  toBinary(MutualFriendRequestSchema, create(MutualFriendRequestSchema, { address: [addr("alice"), "x".repeat(size)], limit: 2 }));

/** 16 MiB of JSON whitespace around an empty object: tiny compressed, huge inflated, and valid JSON if read whole. */
const JSON_BOMB = gzipSync(Buffer.concat([Buffer.alloc(16 << 20, 0x20), Buffer.from("{}")]));

describe.each(SERVING_WAYS)("request size limits and admission before reading ($name)", ({ env }) => {
  let server: RunningRelgraph;

  beforeAll(async () => {
    server = await startRelgraph({ records: fixtureRecords(), env });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("refuses a gzip bomb over Connect with resource_exhausted (HTTP 429, the Connect protocol's) and code 11600", async () => {
    expect(JSON_BOMB.length).toBeLessThan(LIMIT);
    const response = await fetch(server.url + PATH, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip", apikey: TEST_API_KEY },
      body: JSON_BOMB,
    });
    const body = await response.json();
    expect(response.status).toBe(429);
    expect(body.code).toBe("resource_exhausted");
    expect(connectDetailCode(body)).toBe("11600");
  });

  it("refuses a gzip bomb over gRPC with RESOURCE_EXHAUSTED and code 11600", async () => {
    const bomb = gzipSync(Buffer.alloc(16 << 20));
    const reply = await h2Request(
      server.url,
      { "content-type": "application/grpc+proto", "grpc-encoding": "gzip", te: "trailers", apikey: TEST_API_KEY },
      envelope(bomb, true),
    );
    expect(grpcError(reply)).toEqual({ status: "8", code: "11600" });
  });

  it("refuses an uncompressed body over the limit on the gRPC fast path", async () => {
    const reply = await h2Request(
      server.url,
      { "content-type": "application/grpc+proto", te: "trailers", apikey: TEST_API_KEY },
      envelope(mutualFriend(LIMIT)),
    );
    expect(grpcError(reply)).toEqual({ status: "8", code: "11600" });
  });

  it("refuses an uncompressed body over the limit on the gRPC-Web path", async () => {
    const reply = await h2Request(
      server.url,
      { "content-type": "application/grpc-web+proto", "x-grpc-web": "1", apikey: TEST_API_KEY },
      envelope(mutualFriend(LIMIT)),
    );
    expect(grpcError(reply).status).toBe("8");
  });

  it("answers an oversized Connect upload instead of leaving the client hanging (item 14)", async () => {
    const response = await fetch(server.url + PATH, {
      method: "POST",
      headers: { "content-type": "application/proto", apikey: TEST_API_KEY },
      body: Buffer.from(mutualFriend(2 << 20)),
    });
    const body = await response.json();
    expect(body.code).toBe("resource_exhausted");
    expect(connectDetailCode(body)).toBe("11600");
  });

  it("answers an oversized chunked upload (no content-length) over HTTP/1.1 and over h2c", async () => {
    const request = http.request(server.url + PATH, { method: "POST", headers: { "content-type": "application/proto", apikey: TEST_API_KEY } });
    const answered = answerOf(request);
    // Written in pieces with no end: a client that would go on uploading for ever.
    const piece = Buffer.alloc(16 * 1024, 1);
    for (let i = 0; i < 64; i++) request.write(piece);
    const { status, body } = await answered;
    expect(status).toBe(429);
    expect(connectDetailCode(JSON.parse(body))).toBe("11600");
    const reply = await h2Request(
      server.url,
      { "content-type": "application/grpc+proto", te: "trailers", apikey: TEST_API_KEY },
      Buffer.alloc(4 << 20, 1),
      false,
    );
    expect(grpcError(reply)).toEqual({ status: "8", code: "11600" });
  });

  it("refuses a call without an ApiKey before reading its body, on the gRPC fast path", async () => {
    const reply = await h2Request(server.url, { "content-type": "application/grpc+proto", te: "trailers" }, Buffer.alloc(1000), false);
    expect(grpcError(reply)).toEqual({ status: "16", code: "10001" });
  });

  it("refuses a call without an ApiKey before reading its body, on the connect-es paths", async () => {
    const compressed = await h2Request(
      server.url,
      { "content-type": "application/grpc+proto", "grpc-encoding": "gzip", te: "trailers", apikey: "nope" },
      Buffer.alloc(1000),
      false,
    );
    expect(grpcError(compressed)).toEqual({ status: "16", code: "10002" });
    const web = await h2Request(server.url, { "content-type": "application/grpc-web+proto" }, Buffer.alloc(1000), false);
    expect(grpcError(web)).toEqual({ status: "16", code: "10001" });
  });

  it("refuses a REST request whose body is over the limit with 413 in the envelope", async () => {
    const request = http.request(`${server.url}/api/v1/mutualFriend?limit=2`, {
      method: "GET",
      headers: { apikey: TEST_API_KEY, "content-type": "application/json", "content-length": String(LIMIT + 14) },
    });
    const answered = answerOf(request);
    request.end(JSON.stringify({ padding: "x".repeat(LIMIT) }));
    const { status, body } = await answered;
    expect(status).toBe(413);
    expect(JSON.parse(body)).toMatchObject({ code: "11600", data: null });
  });
});

/** The status and body of the answer to an HTTP/1.1 request the caller goes on writing. */
function answerOf(request: http.ClientRequest): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request.on("response", (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text }));
    });
    request.on("error", reject);
  });
}
