import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { create, fromBinary, toBinary, type DescMethod, type DescService, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { InvalidArgumentError } from "../domain/errors.js";
import { encodeGrpcMessage } from "../transport/grpc-message.js";
import { toConnectError, type ErrorLogger } from "./errors.js";
import { API_KEY_HEADER, type RequestGate } from "./interceptors.js";

/**
 * Offered every new HTTP/2 stream before Fastify sees it: true means the stream is served here,
 * false leaves it untouched for Fastify (and so for connect-es).
 */
export type Http2StreamClaim = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => boolean;

/** Options of createGrpcUnaryPath. */
export interface GrpcUnaryPathOptions {
  service: DescService;
  /** The same implementation connect-es serves: one async method per RPC, by its local name. */
  impl: object;
  gate: RequestGate;
  log: ErrorLogger & { info(obj: object, msg?: string): void };
}

/** Largest request accepted; relgraph's requests are a few hundred bytes (50 identities at most). */
const MAX_REQUEST_BYTES = 1 << 20;
/** The gRPC message prefix: a compressed flag byte, then the message length (big-endian uint32). */
const ENVELOPE_PREFIX_BYTES = 5;
const PROTO_CONTENT_TYPE = /^application\/grpc(\+proto)?$/;
const RESPONSE_HEADERS = { ":status": 200, "content-type": "application/grpc+proto" } as const;

/**
 * The common case of gRPC, served straight off the HTTP/2 stream: a unary call with a binary,
 * uncompressed request. connect-es runs every gRPC call, unary ones too, through its streaming
 * pipeline of async iterables and an abort controller per call; profiles (`npm run bench -- --cpu-prof`)
 * put that at about 0.9 ms of CPU per call, seven times what the same call costs here. Every other
 * stream (gRPC-JSON, compressed requests, gRPC-Web, Connect, reflection, REST) is left to Fastify
 * and connect-es.
 *
 * The call goes through what the connect-es route applies (app.ts): the ApiKey gate, then the same
 * implementation, with every failure translated by toConnectError, so the codes, ErrorDetails and
 * grpc-message on the wire are the same on both paths (test/server/protocols.test.ts holds them to it).
 */
export function createGrpcUnaryPath({ service, impl, gate, log }: GrpcUnaryPathOptions): Http2StreamClaim {
  const methods = new Map<string, DescMethod>();
  for (const method of service.methods) {
    if (method.methodKind === "unary") methods.set(`/${service.typeName}/${method.name}`, method);
  }
  const implementation = impl as Record<string, (request: unknown) => Promise<MessageInitShape<DescMethod["output"]>>>;

  return (stream, headers) => {
    const path = headers[":path"];
    const method = path === undefined ? undefined : methods.get(path);
    const encoding = headers["grpc-encoding"];
    if (
      method === undefined ||
      headers[":method"] !== "POST" ||
      !PROTO_CONTENT_TYPE.test(headers["content-type"] ?? "") ||
      (encoding !== undefined && encoding !== "identity")
    ) {
      return false;
    }
    // A client that resets its stream must not crash the server; the reply is simply dropped.
    stream.on("error", () => {});
    const started = performance.now();
    const call = async () => {
      const request = decodeRequest(method, await readBody(stream));
      await gate.admit(headerValue(headers[API_KEY_HEADER]));
      const reply = await implementation[method.localName]!(request);
      return toBinary(method.output, create(method.output, reply));
    };
    void withTimeout(call(), headerValue(headers["grpc-timeout"])).then(
      (bytes) => {
        respondOk(stream, bytes);
        log.info({ rpc: path, grpcStatus: 0, responseTime: performance.now() - started }, "request completed");
      },
      (err: unknown) => {
        // A deadline the client set is the client's; everything else speaks the contract's codes.
        const failure = err instanceof DeadlineExceeded ? err.error : toConnectError(err, log);
        respondError(stream, failure);
        log.info({ rpc: path, grpcStatus: failure.code, responseTime: performance.now() - started }, "request completed");
      },
    );
    return true;
  };
}

/** Thrown when the client's grpc-timeout elapses first; carries the error the client is sent. */
class DeadlineExceeded extends Error {
  readonly error = new ConnectError("the operation timed out", Code.DeadlineExceeded);
}

/** Races `work` against the client's grpc-timeout, as connect-es does; no header, no timer. */
async function withTimeout<T>(work: Promise<T>, grpcTimeout: string | undefined): Promise<T> {
  if (grpcTimeout === undefined) return work;
  const { timeoutMs, error } = parseTimeout(grpcTimeout, Number.MAX_SAFE_INTEGER);
  if (error) throw new InvalidArgumentError(`grpc-timeout "${grpcTimeout.slice(0, 16)}" is malformed`);
  if (timeoutMs === undefined) return work;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceeded()), timeoutMs);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** The whole request body; rejects when the stream closes first or the body is too large. */
function readBody(stream: ServerHttp2Stream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        reject(new InvalidArgumentError(`the request is larger than ${MAX_REQUEST_BYTES} bytes`));
        stream.pause();
        return;
      }
      chunks.push(chunk);
    });
    stream.once("end", () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    stream.once("close", () => reject(new Error("the client closed the stream before sending its request")));
  });
}

/** The one request message of a unary call: exactly one uncompressed envelope. */
function decodeRequest(method: DescMethod, body: Buffer): unknown {
  if (body.length < ENVELOPE_PREFIX_BYTES) throw new InvalidArgumentError("the gRPC request carries no message");
  if (body[0] !== 0) throw new InvalidArgumentError("the gRPC request message is flagged compressed, but no grpc-encoding was given");
  if (body.readUInt32BE(1) !== body.length - ENVELOPE_PREFIX_BYTES) {
    throw new InvalidArgumentError("a unary gRPC request must carry exactly one message");
  }
  try {
    return fromBinary(method.input, body.subarray(ENVELOPE_PREFIX_BYTES));
  } catch {
    throw new InvalidArgumentError(`the request is not a valid ${method.input.typeName} message`);
  }
}

function respondOk(stream: ServerHttp2Stream, message: Uint8Array): void {
  if (stream.destroyed || stream.closed) return;
  const frame = Buffer.allocUnsafe(ENVELOPE_PREFIX_BYTES + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, ENVELOPE_PREFIX_BYTES);
  stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
  stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
  stream.end(frame);
}

/**
 * A trailers-only response: connect-es's own setTrailerStatus builds grpc-status and
 * grpc-status-details-bin, and grpc-message is encoded as the gRPC spec says (see grpc-message.ts).
 */
function respondError(stream: ServerHttp2Stream, error: ConnectError): void {
  if (stream.destroyed || stream.closed) return;
  const headers: OutgoingHttpHeaders = { ...RESPONSE_HEADERS };
  setTrailerStatus(new Headers(), error).forEach((value, name) => {
    headers[name] = value;
  });
  headers["grpc-message"] = encodeGrpcMessage(error.rawMessage);
  stream.respond(headers, { endStream: true });
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
