/**
 * relgraph's speed layer, in one place, and switched off with FAST_PATHS=off: server.ts installs
 * its protocol paths (installFastPaths), and the commands that open a store (serve, ingest, follow)
 * hand the redis engine its connections (storeConnections). Without it every RPC goes through
 * connect-es and every Redis command through node-redis; with it, answers are the same
 * (test/fast/differential.test.ts holds them to that), only cheaper:
 *
 * - unary-call.ts: one unary call as both protocol paths run it (the gate, the deadline, errors);
 * - protocol-grpc/, protocol-connect/: unary gRPC and Connect POSTs served below Fastify;
 * - protocol-rest/: REST GETs over h2c served off the HTTP/2 stream, with the REST facade's own code;
 * - protobuf/: binary encoding and UTF-8 without protobuf-es's generic machinery;
 * - resp/: RESP2 connections of its own for the redis engine's id-set reads and bulk writes, which
 *   store-connections.ts hands out without loading the protocol paths (ingest and follow serve no RPC).
 */

import type { DescService } from "@bufbuild/protobuf";
import type { AdmittingGate } from "../auth/request-gate.js";
import type { RelationServiceCalls } from "../rest/facade.js";
import type { Http2StreamClaim, RequestClaim } from "../transport/one-port.js";
import { createConnectUnaryHandler } from "./protocol-connect/unary-handler.js";
import { createGrpcUnaryHandler } from "./protocol-grpc/unary-handler.js";
import { createRestH2cHandler } from "./protocol-rest/h2c-handler.js";
import { useFastUtf8Encoding } from "./protobuf/text-encoding.js";
import { createUnaryCaller, type UnaryCallerOptions } from "./unary-call.js";

/** What the one-port server offers each request before Fastify (transport/one-port.ts). */
export interface FastClaims {
  claimStream: Http2StreamClaim;
  claimRequest: RequestClaim;
}

/** Options of installFastPaths. */
export interface FastPathOptions extends UnaryCallerOptions {
  service: DescService;
  /** What the REST facade calls; given, REST GETs over h2c are served off the stream (protocol-rest/). */
  rest?: { service: RelationServiceCalls; gate: AdmittingGate };
}

/**
 * Installs the protocol fast paths for `service`: returns the claims the one-port server offers
 * every request. Also makes protobuf-es encode strings without TextEncoder, process-wide (same bytes).
 */
export function installFastPaths(options: FastPathOptions): FastClaims {
  useFastUtf8Encoding();
  const caller = createUnaryCaller(options);
  const grpc = createGrpcUnaryHandler(caller);
  const connect = createConnectUnaryHandler(caller);
  const rest = options.rest ? createRestH2cHandler({ ...options.rest, log: options.log, observe: options.observe }) : null;
  return {
    claimStream: rest === null ? grpc : (stream, headers) => grpc(stream, headers) || rest(stream, headers),
    // A browser's request (it names its Origin) goes through Fastify, whose CORS hooks answer it.
    claimRequest: (req, res) => req.headers.origin === undefined && connect(req, res),
  };
}

export { respConnections, storeConnections } from "./store-connections.js";
