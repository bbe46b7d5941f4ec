import Fastify, { type FastifyInstance, type FastifyReply, type FastifyServerOptions } from "fastify";
import { RelationService } from "../gen/relgraph/v1/relation_service_pb.js";
import { stdSerializers } from "pino";
import { relgraphApp, type AppOptions } from "./app.js";
import { redactUrlsDeep } from "./config/redact.js";
import { InvalidArgumentError } from "./domain/errors.js";
import { parseQuery } from "./rest/codec.js";
import { createRestH2cHandler } from "./rest/h2c-handler.js";
import { createConnectUnaryHandler } from "./rpc/unary/connect-handler.js";
import { createGrpcUnaryHandler } from "./rpc/unary/grpc-handler.js";
import { createUnaryCaller } from "./rpc/unary/unary-call.js";
import { useFastUtf8Encoding } from "./transport/utf8-encoding.js";
import { refusal, REST_CONTENT_TYPE } from "./rest/facade.js";
import { answerClientError } from "./transport/client-errors.js";
import { REQUEST_ID_HEADER, requestIdOf } from "./transport/request-id.js";
import { createOnePortServer, type Http2StreamClaim, type OnePortHandler, type RequestClaim, type SlowClientLimits } from "./transport/one-port.js";

/** Options of createServer. */
export interface ServerOptions {
  /** pino level, or false to log nothing (tests). */
  logLevel: string | false;
  /** How long in-flight requests and HTTP/2 sessions may finish on close. */
  closeGraceMs?: number;
  /** Timeouts and HTTP/2 stream limits against slow clients; the transport's defaults otherwise. */
  limits?: Partial<SlowClientLimits>;
  /**
   * FAST_PATHS: serve unary gRPC and Connect calls below Fastify (rpc/unary/), and REST GETs over h2c
   * off the stream (rest/h2c-handler.ts); false leaves every call to connect-es and Fastify. Default true.
   */
  fastPaths?: boolean;
}

/** What the one-port server offers each request before Fastify, with the fast paths on (transport/one-port.ts). */
interface FastPathClaims {
  claimStream: Http2StreamClaim;
  claimRequest: RequestClaim;
}

/** Query parameters that are credentials: a SIWE authorization stays valid until it expires. */
const SECRET_QUERY_PARAMS = ["sig", "message"];

/**
 * Creates the Fastify instance that serves relgraph on one port: HTTP/1.1 and h2c share it (see
 * transport/one-port.ts). Logs are structured (pino) and never contain ApiKeys or authorizations.
 */
export async function createServer(app: AppOptions, options: ServerOptions): Promise<FastifyInstance> {
  const closeGraceMs = options.closeGraceMs ?? 5_000;
  const logger: FastifyServerOptions["logger"] =
    options.logLevel === false
      ? false
      : {
          level: options.logLevel,
          redact: ["req.headers.apikey", "req.headers.authorization"],
          serializers: {
            req: (req) => ({ method: req.method, url: redactQuery(req.url), remoteAddress: req.ip }),
            // Driver and RPC errors quote the URL they failed on, credentials included.
            err: (err: Error) => redactUrlsDeep(stdSerializers.err(err)) as ReturnType<typeof stdSerializers.err>,
            cause: (cause: unknown) => redactUrlsDeep(cause instanceof Error ? stdSerializers.err(cause) : cause),
          },
        };
  // With the fast paths, unary gRPC and Connect calls are served below Fastify (rpc/unary/unary-call.ts
  // says why). They log through Fastify's logger, which exists only once Fastify has called the
  // server factory: the claims are installed after it.
  let fast: FastPathClaims | null = null;
  const server = Fastify({
    logger,
    // Fastify's handler serves HTTP/2 compatibility requests as well as HTTP/1.1 ones.
    serverFactory: (handler) =>
      createOnePortServer(handler as OnePortHandler, {
        closeGraceMs,
        limits: options.limits,
        claimStream: (stream, headers) => fast !== null && fast.claimStream(stream, headers),
        claimRequest: (req, res) => fast !== null && fast.claimRequest(req, res),
      }),
    // Keep-alive HTTP/1.1 connections must not hold up a shutdown.
    forceCloseConnections: "idle",
    // REST is GET only, so no legal request under /api/v1/ has a body this large either.
    bodyLimit: app.maxRequestBytes,
    return503OnClosing: true,
    clientErrorHandler: answerClientError,
    // X-Request-Id is accepted (when sane) or generated; Fastify puts it in every log line as reqId.
    requestIdHeader: false,
    genReqId: (req) => requestIdOf(req.headers),
    // Fastify's default parser, named: the REST fast path over h2c parses with the same function.
    routerOptions: { querystringParser: parseQuery },
    // What Fastify's router refuses before any route or hook (a malformed percent-encoding in the
    // path) is answered in the envelope too, with its request id: Fastify's own JSON named neither.
    frameworkErrors: (_err, request, reply) => {
      const answer = refusal(new InvalidArgumentError("the request's URL is malformed"));
      (reply as FastifyReply).code(answer.status).headers(answer.headers).header(REQUEST_ID_HEADER, request.id).type(REST_CONTENT_TYPE).send(answer.body);
    },
  });
  // Hooks that every request passes through take a callback, not a promise: an async hook costs
  // each request a promise and a turn of the microtask queue, per hook (the REST path had five).
  server.addHook("onRequest", (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
  if (options.fastPaths !== false) {
    // protobuf-es then encodes strings without TextEncoder, process-wide (the same bytes).
    useFastUtf8Encoding();
    const caller = createUnaryCaller({
      service: RelationService,
      impl: app.service,
      gate: app.gate,
      log: server.log,
      maxRequestBytes: app.maxRequestBytes,
      observe: app.metrics?.observeRequest,
    });
    const grpc = createGrpcUnaryHandler(caller);
    const connect = createConnectUnaryHandler(caller);
    // With CORS_ORIGINS set, @fastify/cors adds its headers to every answer: REST stays on Fastify then.
    const rest =
      (app.corsOrigins ?? []).length === 0
        ? createRestH2cHandler({ service: app.service, gate: app.gate, log: server.log, observe: app.metrics?.observeRequest })
        : null;
    fast = {
      claimStream: rest === null ? grpc : (stream, headers) => grpc(stream, headers) || rest(stream, headers),
      // A browser's request (it names its Origin) goes through Fastify, whose CORS hooks answer it.
      claimRequest: (req, res) => req.headers.origin === undefined && connect(req, res),
    };
  }
  await server.register(relgraphApp, app);
  return server;
}

/**
 * Closes the server when the process is asked to stop: in-flight requests finish, open HTTP/2
 * sessions are told to go away, and the process exits even if something hangs past the grace period.
 */
export function closeOnSignals(server: FastifyInstance, onClosed: () => Promise<void>, graceMs = 10_000): void {
  let closing = false;
  const stop = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    server.log.info({ signal }, "shutting down");
    const force = setTimeout(() => {
      server.log.error("shutdown took too long; exiting");
      process.exit(1);
    }, graceMs);
    force.unref();
    server
      .close()
      .then(onClosed)
      .then(
        () => process.exit(0),
        (err: unknown) => {
          server.log.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

function redactQuery(url: string): string {
  const q = url.indexOf("?");
  if (q < 0) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const name of SECRET_QUERY_PARAMS) if (params.has(name)) params.set(name, "[redacted]");
  return `${url.slice(0, q)}?${params.toString()}`;
}
