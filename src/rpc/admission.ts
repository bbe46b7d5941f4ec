import { promisify } from "node:util";
import zlib from "node:zlib";
import { create, type DescService } from "@bufbuild/protobuf";
import { ErrorDetailSchema } from "../../gen/relgraph/v1/relation_service_pb.js";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, contentTypeUnaryJson, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { contentTypeProto as grpcWebContentTypeProto } from "@connectrpc/connect/protocol-grpc-web";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Http2ServerRequest } from "node:http2";
import { API_KEY_HEADER, type RequestGate } from "../auth/request-gate.js";
import type { Caller } from "../domain/caller.js";
import { InvalidArgumentError } from "../domain/errors.js";
import { protocolOfContentType, type ObserveCall } from "./call-metrics.js";
import { tooLarge, toConnectError, type ErrorLogger } from "../transport/errors.js";
import { encodeGrpcMessage, respondGrpcError } from "../transport/grpc-message.js";
import { endUnreadRequest } from "../transport/refused-upload.js";
import { headerValue } from "../transport/header-value.js";

/*
 * What connect-es reads, it reads before any interceptor runs: a call's ApiKey interceptor saw the
 * request only after its whole body had been read and inflated. The hook here checks the key (and a
 * declared content-length) when the request arrives, before connect-es reads a byte, and answers a
 * refusal in the caller's own protocol. Bodies connect-es does read are capped by its readMaxBytes, and
 * inflated by the compressions below, which stop at the same cap.
 */

/** Options of rpcAdmission. */
export interface RpcAdmissionOptions {
  services: DescService[];
  gate: RequestGate;
  maxRequestBytes: number;
  /** Counts each refusal by its status code, as withCallMetrics counts the calls answered (call-metrics.ts). */
  observe?: ObserveCall;
}

/**
 * Registers an onRequest hook on every RPC path of `services`: refuses a missing, unknown or
 * rate-limited ApiKey, or a declared body over the cap, before the body is read. Returns the Caller
 * a request was admitted as (null: not admitted here), for connect-fastify's contextValues.
 */
export function rpcAdmission(app: FastifyInstance, { services, gate, maxRequestBytes, observe }: RpcAdmissionOptions): (request: FastifyRequest) => Caller | null {
  const prefixes = services.map((service) => `/${service.typeName}/`);
  const methods = new Set(services.flatMap((service) => service.methods.map((method) => `/${service.typeName}/${method.name}`)));
  const admitted = new WeakMap<object, Caller>();
  const refuse = (request: FastifyRequest, reply: FastifyReply, error: ConnectError): FastifyReply => {
    const path = request.url.split("?")[0]!;
    // An unknown method is counted under its route's pattern: a client cannot mint label values.
    const operation = methods.has(path) ? path : (request.routeOptions.url ?? "unknown");
    observe?.(operation, protocolOfContentType(headerValue(request.headers["content-type"]) ?? ""), String(error.code), reply.elapsedTime / 1000);
    return answerRefusal(request, reply, error);
  };
  const admit = async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      const { caller } = await gate.admit(headerValue(request.headers[API_KEY_HEADER]));
      const path = request.url.split("?")[0]!;
      if (!methods.has(path)) return refuse(request, reply, noSuchMethod(request));
      const length = headerValue(request.headers["content-length"]);
      if (length !== undefined && Number(length) > maxRequestBytes) throw tooLarge(maxRequestBytes);
      admitted.set(request.raw, caller);
    } catch (err) {
      return refuse(request, reply, toConnectError(err, request.log));
    }
  };
  // A callback hook: REST and every other request pass through it, and a promise each was a cost
  // (see create-server.ts). Once a refusal is sent, Fastify runs no further hook or handler.
  app.addHook("onRequest", (request, reply, done) => {
    // A CORS preflight carries no ApiKey by design; transport/cors.ts answers it.
    if (request.method === "OPTIONS" || !prefixes.some((prefix) => request.url.startsWith(prefix))) return done();
    admit(request, reply).then(() => done(), done);
  });
  // Unknown methods reach the hook above through this route (Fastify's own 404 runs no hooks of
  // this context).
  for (const prefix of prefixes) app.all(`${prefix}*`, async (request, reply) => refuse(request, reply, noSuchMethod(request)));
  return (request) => admitted.get(request.raw) ?? null;
}

/**
 * An unknown method, answered as REST answers an unknown path (11600): UNIMPLEMENTED on gRPC and
 * gRPC-Web, as gRPC clients expect, and 404 on Connect (whose UNIMPLEMENTED would be a 501).
 */
function noSuchMethod(request: FastifyRequest): ConnectError {
  const desc = `no such method: ${request.url.split("?")[0]!}`;
  const detail = create(ErrorDetailSchema, { code: new InvalidArgumentError(desc).code, desc });
  const grpc = (headerValue(request.headers["content-type"]) ?? "").startsWith("application/grpc");
  return new ConnectError(desc, grpc ? Code.Unimplemented : Code.NotFound, undefined, [{ desc: ErrorDetailSchema, value: detail }]);
}

/** Answers a refused RPC in the caller's protocol: a trailers-only gRPC or gRPC-Web reply, or a Connect error. */
function answerRefusal(request: FastifyRequest, reply: FastifyReply, error: ConnectError): FastifyReply {
  const contentType = headerValue(request.headers["content-type"]) ?? "";
  const grpcWeb = contentType.startsWith("application/grpc-web");
  if (grpcWeb || contentType.startsWith("application/grpc")) {
    const stream = (request.raw as unknown as Partial<Http2ServerRequest>).stream;
    if (!grpcWeb && stream !== undefined) {
      // gRPC's trailers-only form, as the fast path answers it: one HEADERS frame that ends the stream.
      reply.hijack();
      respondGrpcError(stream, error, request.id);
      return reply;
    }
    const headers: Record<string, string> = { "content-type": grpcWebContentTypeProto };
    setTrailerStatus(new Headers(), error).forEach((value, name) => (headers[name] = value));
    headers["grpc-message"] = encodeGrpcMessage(error.rawMessage);
    endUnreadRequest(request.raw, reply.raw);
    return reply.code(200).headers(headers).send();
  }
  endUnreadRequest(request.raw, reply.raw);
  return reply.code(codeToHttpStatus(error.code)).header("content-type", contentTypeUnaryJson).send(Buffer.from(errorToJsonBytes(error, {})));
}

const gunzip = promisify(zlib.gunzip);
const brotliDecompress = promisify(zlib.brotliDecompress);
const gzip = promisify(zlib.gzip);
const brotliCompress = promisify(zlib.brotliCompress);

/**
 * gzip and br for connect-es, inflating at most `maxBytes`: a small compressed body that inflates past
 * it is refused as too large (RequestTooLargeError, with the contract's code) as soon as it gets there.
 */
export function cappedCompressions(maxBytes: number, log: ErrorLogger): Compression[] {
  const capped = (name: string, inflate: (bytes: Uint8Array, options: zlib.ZlibOptions) => Promise<Buffer>, deflate: (bytes: Uint8Array) => Promise<Buffer>): Compression => ({
    name,
    compress: async (bytes: Uint8Array) => new Uint8Array(await deflate(bytes)),
    async decompress(bytes: Uint8Array) {
      if (bytes.length === 0) return new Uint8Array(0);
      try {
        return new Uint8Array(await inflate(bytes, { maxOutputLength: maxBytes }));
      } catch (err) {
        if ((err as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") throw toConnectError(tooLarge(maxBytes), log);
        throw toConnectError(new InvalidArgumentError(`the request is not valid ${name} data`), log);
      }
    },
  });
  return [capped("gzip", gunzip, (b) => gzip(b)), capped("br", brotliDecompress, (b) => brotliCompress(b))];
}
