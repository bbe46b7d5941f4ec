import { createContextValues } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import type { FastifyInstance } from "fastify";
import { RelationService } from "../gen/relgraph/v1/relation_service_pb.js";
import type { SiweVerifier } from "./auth/siwe.js";
import { keyNodeRoutes } from "./crypto/key-node.js";
import type { KeyShare, PublicKeyNetwork } from "./crypto/key-network.js";
import { REST_ANSWER_HEADERS, restFacade } from "./rest/facade.js";
import type { AdmittingGate } from "./auth/request-gate.js";
import { clampDeadlineHeaders } from "./transport/deadline-headers.js";
import { ADMITTED_CALLER, createApiKeyInterceptor, createDeadlineInterceptor, createErrorInterceptor } from "./rpc/interceptors.js";
import { withContractRefusals } from "./rpc/protocol-errors.js";
import { protocolOfContentType, withCallMetrics } from "./rpc/call-metrics.js";
import { registerHealth } from "./rpc/health.js";
import { registerReflection } from "./rpc/reflection.js";
import type { RelationServiceMethods } from "./rpc/relation-service.js";
import { cappedCompressions, rpcAdmission } from "./rpc/admission.js";
import { connectServiceImpl } from "./rpc/connect-service.js";
import type { RelgraphMetrics } from "./metrics/metrics.js";
import type { GraphStore } from "./store/store.js";
import { InvalidArgumentError } from "./domain/errors.js";
import { errorEnvelope, toPublicError } from "./transport/errors.js";
import { registerCors } from "./transport/cors.js";
import { collectRoutes, webPages } from "./web/pages.js";

/** /readyz answers within a second, as the contract says, even while the store hangs. */
const READY_TIMEOUT_MS = 900;

/** The RelationService's routes, each method's and the catch-all for unknown methods. */
const RPC_PREFIX = `/${RelationService.typeName}/`;

/** Path where the server publishes its key network (public material; no ApiKey needed). */
export const KEY_NETWORK_PATH = "/key-network";

/** Everything the app serves, already built by the composition root (cli/serve.ts) or a test. */
export interface AppOptions {
  service: RelationServiceMethods;
  gate: AdmittingGate;
  store: Pick<GraphStore, "ping">;
  /** The key network clients decrypt with, published at KEY_NETWORK_PATH. */
  keyNetwork: PublicKeyNetwork | null;
  /** Key nodes served inside this server (the development network only). */
  keyNodes?: { prefix: string; share: KeyShare }[];
  /** Decryption-share requests each in-process key node takes per client address. */
  keyNodeRateLimit?: { perSecond: number; burst: number };
  /** Verifies the authorizations that in-process key nodes receive. */
  verifier: SiweVerifier;
  /** CORS_ORIGINS: origins browsers may call from (transport/cors.ts); none by default. */
  corsOrigins?: readonly string[];
  /** Largest request body, before and after decompression (MAX_REQUEST_BYTES). */
  maxRequestBytes: number;
  /**
   * Served at GET /metrics. RelationService calls are counted by their status code (0 is OK) both
   * ways: here through rpc/call-metrics.ts, on the fast paths in rpc/unary/unary-call.ts. Every other
   * request Fastify answers is counted by its HTTP status.
   */
  metrics?: RelgraphMetrics;
}

/**
 * relgraph as a Fastify plugin: the RelationService over Connect, gRPC and gRPC-Web, gRPC reflection,
 * the REST facade, health endpoints, and the key network. create-server.ts builds the server around it; cli/commands/serve.ts listens.
 */
export async function relgraphApp(app: FastifyInstance, options: AppOptions): Promise<void> {
  const { service, gate, store, keyNetwork, keyNodes = [], verifier, corsOrigins = [], maxRequestBytes, keyNodeRateLimit, metrics } = options;
  // Before any route: /openapi.json names every route served (web/openapi.ts).
  const routes = collectRoutes(app);

  app.setErrorHandler((err: Error & { statusCode?: number }, request, reply) => {
    if (request.url.startsWith("/api/v1/")) reply.headers(REST_ANSWER_HEADERS);
    // Fastify's own 4xx (a malformed URL, an oversized body) are the client's fault; all else is ours.
    if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode).send(errorEnvelope(toPublicError(new InvalidArgumentError("malformed request"))));
    }
    const failure = toPublicError(err, request.log);
    return reply.code(failure.http).send(errorEnvelope(failure));
  });

  // First, so that its hooks cover every route below, the in-process key nodes included.
  await registerCors(app, corsOrigins);

  // Before connect-es arms its deadline timer from these headers.
  // Callback hooks on every request (see create-server.ts).
  app.addHook("onRequest", (request, _reply, done) => {
    clampDeadlineHeaders(request.raw.headers);
    done();
  });
  // connect-es reads a call's body before its interceptors run: the key is checked on arrival instead.
  const admitted = rpcAdmission(app, { services: [RelationService], gate, maxRequestBytes, observe: metrics?.observeRequest });
  await app.register(fastifyConnectPlugin, {
    readMaxBytes: maxRequestBytes,
    acceptCompression: cappedCompressions(maxRequestBytes, app.log),
    contextValues: (request) => createContextValues().set(ADMITTED_CALLER, admitted(request)),
    // grpc-js always advertises gzip, and compressing every reply over 1 KB halved gRPC throughput
    // (`npm run bench`). relgraph's replies are at most tens of KB, served to nearby services:
    // compress only the rare large one. Compressed requests are still accepted.
    compressMinBytes: 64 * 1024,
    routes(router) {
      router.service(RelationService, connectServiceImpl(RelationService, service), {
        // The error interceptor is outermost, so ApiKey failures are translated too.
        interceptors: [createErrorInterceptor(app.log), createDeadlineInterceptor(), createApiKeyInterceptor(gate)],
      });
      // What connect-es refuses before the interceptors run is answered in the contract's codes too.
      router.handlers.forEach((handler, i) => {
        if (handler.service !== RelationService) return;
        const answered = withContractRefusals(handler, { maxRequestBytes, log: app.log });
        router.handlers[i] = metrics ? withCallMetrics(answered, metrics.observeRequest) : answered;
      });
      // Reflection carries only the public schema, so it needs no ApiKey: `buf curl` works bare.
      registerReflection(router, { services: [RelationService] });
      // Like /readyz, for Kubernetes gRPC probes and grpc_health_probe: no ApiKey.
      registerHealth(router, { services: [RelationService], ready: () => within(store.ping(), READY_TIMEOUT_MS).then(() => true) });
    },
  });

  await app.register(restFacade, { service, gate, maxRequestBytes });
  await app.register(webPages, { routes });

  if (metrics) {
    app.addHook("onResponse", (request, reply, done) => {
      const operation = request.routeOptions.url ?? "unknown";
      // Calls and refusals of the RelationService are counted by their status code where they are
      // answered (withCallMetrics above, rpcAdmission); a gRPC refusal never gets here (hijacked).
      if (operation.startsWith(RPC_PREFIX)) return done();
      metrics.observeRequest(operation, protocolOf(request.headers["content-type"], operation), String(reply.statusCode), reply.elapsedTime / 1000);
      done();
    });
    app.get("/metrics", async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()));
  }

  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (request, reply) => {
    try {
      await within(store.ping(), READY_TIMEOUT_MS);
      return { status: "ready" };
    } catch (err) {
      request.log.warn({ err }, "readiness check failed");
      return reply.code(503).send({ status: "unavailable" });
    }
  });

  app.get(KEY_NETWORK_PATH, async (_request, reply) => {
    if (!keyNetwork) return reply.code(404).send({ error: "this server encrypts with the Lit network; see its docs" });
    return keyNetwork;
  });
  for (const node of keyNodes) {
    await app.register(keyNodeRoutes, { prefix: node.prefix, share: node.share, verifier, rateLimit: keyNodeRateLimit });
  }
}

/** The protocol of a request Fastify answered, for metrics labels. */
function protocolOf(contentType = "", operation: string): string {
  if (contentType.startsWith("application/grpc")) return protocolOfContentType(contentType);
  if (operation.startsWith("/api/v1/")) return "rest";
  if (operation.startsWith("/relgraph.") || operation.startsWith("/grpc.")) return "connect";
  return "http";
}

/** Rejects when `work` has not settled within `ms`. */
async function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
