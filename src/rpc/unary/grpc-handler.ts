import type { ServerHttp2Stream } from "node:http2";
import { fromBinary, type DescMethod } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { contentTypeProto, parseContentType, parseTimeout } from "@connectrpc/connect/protocol-grpc";
import { API_KEY_HEADER } from "../../auth/request-gate.js";
import { respondGrpcError } from "../../transport/grpc-message.js";
import type { Http2StreamClaim } from "../../transport/one-port.js";
import { REQUEST_ID_HEADER, requestIdOf } from "../../transport/request-id.js";
import { unreadable } from "../../transport/malformed-request.js";
import { toBinaryFast } from "../../transport/protobuf-binary.js";
import { headerValue } from "../../transport/header-value.js";
import { readBody, type UnaryCaller } from "./unary-call.js";

/** The gRPC message prefix: a compressed flag byte, then the message length (big-endian uint32). */
const ENVELOPE_PREFIX_BYTES = 5;
/** The envelope flag of a compressed message. */
const COMPRESSED_FLAG = 0b1;

/**
 * The common case of gRPC, served straight off the HTTP/2 stream (see ../unary-call.ts for why): a
 * unary call with a binary, uncompressed request. Every other stream (gRPC-JSON, compressed
 * requests, gRPC-Web, Connect, reflection, REST) is left to Fastify and connect-es.
 */
export function createGrpcUnaryHandler(caller: UnaryCaller): Http2StreamClaim {
  return (stream, headers) => {
    const path = headers[":path"];
    const method = caller.methodAt(path);
    const encoding = headers["grpc-encoding"];
    if (
      method === undefined ||
      headers[":method"] !== "POST" ||
      parseContentType(headers["content-type"] ?? null)?.binary !== true ||
      (encoding !== undefined && encoding !== "identity")
    ) {
      return false;
    }
    // A client that resets its stream must not crash the server; the reply is simply dropped.
    stream.on("error", () => {});
    const timeout = headerValue(headers["grpc-timeout"]);
    const requestId = requestIdOf(headers);
    caller
      .call(
        {
          method,
          path: path!,
          requestId,
          protocol: "grpc",
          apiKey: headerValue(headers[API_KEY_HEADER]),
          contentLength: headerValue(headers["content-length"]),
          timeout: timeout === undefined ? {} : parseTimeout(timeout, Number.MAX_SAFE_INTEGER),
          timeoutHeader: "grpc-timeout",
          readRequest: async () => decodeRequest(method, await readBody(stream, caller.maxRequestBytes)),
        },
        // The envelope's prefix is written in front of the message, which is encoded behind it.
        (reply) => envelope(toBinaryFast(method.output, reply, ENVELOPE_PREFIX_BYTES)),
      )
      .then(
        (message) => respondOk(stream, message, requestId),
        (error: ConnectError) => respondGrpcError(stream, error, requestId),
      )
      // The stream can close between the check and the write; the reply then has nowhere to go.
      .catch(() => stream.destroy());
    return true;
  };
}

/** The one request message of a unary call: exactly one uncompressed envelope. */
function decodeRequest(method: DescMethod, body: Buffer): unknown {
  if (body.length === 0) throw unreadable.noMessage();
  if (body.length < ENVELOPE_PREFIX_BYTES || body.readUInt32BE(1) !== body.length - ENVELOPE_PREFIX_BYTES) throw unreadable.notOneMessage();
  // Only the compressed bit means anything in a request; connect-es reads past the others, and so does this.
  if ((body[0]! & COMPRESSED_FLAG) !== 0) throw unreadable.compressedWithoutEncoding();
  try {
    return fromBinary(method.input, body.subarray(ENVELOPE_PREFIX_BYTES));
  } catch {
    throw unreadable.malformedMessage(method);
  }
}

/** Fills in the prefix of an uncompressed envelope whose message follows ENVELOPE_PREFIX_BYTES reserved bytes. */
function envelope(framed: Uint8Array): Uint8Array {
  framed[0] = 0;
  new DataView(framed.buffer, framed.byteOffset, ENVELOPE_PREFIX_BYTES).setUint32(1, framed.length - ENVELOPE_PREFIX_BYTES);
  return framed;
}

/**
 * Answers with the message and an OK status. The headers are one object literal: spread from a
 * constant, then given the request id, the object was a slow one to read, and Node's respond(),
 * which copies it key by key, spent 3–5 µs more per call on it. The trailers and their listener
 * are shared by every call.
 */
function respondOk(stream: ServerHttp2Stream, envelope: Uint8Array, requestId: string): void {
  if (stream.destroyed || stream.closed) return;
  stream.respond({ ":status": 200, "content-type": contentTypeProto, [REQUEST_ID_HEADER]: requestId }, RESPOND_WITH_TRAILERS);
  stream.on("wantTrailers", sendOkTrailers);
  stream.end(envelope);
}

const RESPOND_WITH_TRAILERS = { waitForTrailers: true } as const;
const OK_TRAILERS = { "grpc-status": "0" } as const;

/** The stream's wantTrailers listener (emitted once per stream): an OK status. */
function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}
