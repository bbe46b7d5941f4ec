import type { OutgoingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { API_KEY_HEADER, type AdmittingGate } from "../auth/request-gate.js";
import { parseQuery } from "./codec.js";
import { answerRoute, REST_CONTENT_TYPE, restRouteAt, type RelationServiceCalls, type RestAnswer } from "./facade.js";
import type { ErrorLogger } from "../transport/errors.js";
import type { Http2StreamClaim } from "../transport/one-port.js";
import { REQUEST_ID_HEADER, requestIdOf } from "../transport/request-id.js";
import { headerValue } from "../transport/header-value.js";

/** Options of createRestH2cHandler. */
export interface RestH2cOptions {
  /** The implementation the REST facade calls (rest/facade.ts). */
  service: RelationServiceCalls;
  gate: AdmittingGate;
  log: ErrorLogger & { info(obj: object, msg?: string): void; child?(bindings: object): ErrorLogger };
  /** Told of every answer as Fastify's onResponse hook tells it (app.ts): the route's path, "rest", the HTTP status, seconds. */
  observe?: (operation: string, protocol: string, code: string, seconds: number) => void;
}

/**
 * The common case of REST over h2c, served straight off the HTTP/2 stream: Node's compatibility
 * API and Fastify cost an h2c request markedly more CPU than the same request over HTTP/1.1
 * (bench/README.md). It claims only a GET of a route's exact path with no body, no content-type and
 * no Origin, and answers it with the facade's own answerRoute and query parser, so status, headers
 * and bytes are Fastify's (test/server/differential.test.ts holds them to that). Everything else
 * (HEAD, other methods, unknown or percent-encoded paths, bodies, browsers' cross-origin requests,
 * whose CORS headers are transport/cors.ts's) is left to Fastify.
 */
export function createRestH2cHandler({ service, gate, log, observe }: RestH2cOptions): Http2StreamClaim {
  return (stream, headers) => {
    if (headers[":method"] !== "GET" || !stream.endAfterHeaders) return false;
    if (headers["content-length"] !== undefined || headers["content-type"] !== undefined || headers.origin !== undefined) return false;
    const url = headers[":path"] ?? "";
    const queryAt = url.indexOf("?");
    const route = restRouteAt(queryAt < 0 ? url : url.slice(0, queryAt));
    if (route === undefined) return false;
    let query;
    try {
      query = parseQuery(queryAt < 0 ? "" : url.slice(queryAt + 1));
    } catch {
      return false; // Fastify's to answer, as it answers any failure of its parser
    }

    const started = performance.now();
    // A client that resets its stream must not crash the server; the answer is simply dropped.
    stream.on("error", () => {});
    const requestId = requestIdOf(headers);
    // Failures are logged with the request's id, as Fastify's request.log does; the child is made only then.
    const errorLog: ErrorLogger = {
      error: (obj, msg) => (log.child?.({ reqId: requestId }) ?? log).error(obj, msg),
      warn: (obj, msg) => (log.child?.({ reqId: requestId }) ?? log).warn(obj, msg),
    };
    answerRoute(route, service, gate, headerValue(headers[API_KEY_HEADER]), query, errorLog)
      .then((answer) => {
        if (!respond(stream, answer, requestId)) return;
        const elapsed = performance.now() - started;
        log.info({ reqId: requestId, url: route.path, res: { statusCode: answer.status }, responseTime: elapsed }, "request completed");
        observe?.(route.path, "rest", String(answer.status), elapsed / 1000);
      })
      // The stream can close between the check and the write; the answer then has nowhere to go.
      .catch(() => stream.destroy());
    return true;
  };
}

/**
 * Writes `answer` with the headers Fastify would send (Node adds the date); false when the stream is
 * gone. The headers are one literal, then the answer's own added (as in rpc/unary/grpc-handler.ts, a spread
 * made an object that Node's respond() reads several µs slower).
 */
function respond(stream: ServerHttp2Stream, answer: RestAnswer, requestId: string): boolean {
  if (stream.destroyed || stream.closed) return false;
  const body = Buffer.from(answer.body, "utf8");
  const headers: OutgoingHttpHeaders = { ":status": answer.status, [REQUEST_ID_HEADER]: requestId, "content-type": REST_CONTENT_TYPE, "content-length": body.length };
  for (const name in answer.headers) headers[name] = answer.headers[name];
  stream.respond(headers);
  stream.end(body);
  return true;
}
