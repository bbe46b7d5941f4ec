import { cors as connectCors } from "@connectrpc/connect";
import fastifyCors, { type FastifyCorsOptions } from "@fastify/cors";
import type { FastifyInstance } from "fastify";
import { API_KEY_HEADER } from "../auth/request-gate.js";

/**
 * Cross-origin access for browsers (CORS_ORIGINS), shared by the relgraph server and standalone key
 * nodes: a dApp on another origin calls REST, Connect or gRPC-Web, then asks the key nodes to decrypt.
 * With no origins configured nothing is registered, so only pages relgraph serves itself (/demo,
 * /docs) can call it from a browser.
 */

/** Request headers a browser may send: what Connect and gRPC-Web need (connect-es's list), and ApiKey. */
export const CORS_ALLOWED_HEADERS: readonly string[] = [...connectCors.allowedHeaders, API_KEY_HEADER, "x-request-id"];

/**
 * Response headers a page may read: gRPC-Web's status trailers-in-headers, and relgraph's own (a
 * rate-limited key's budget, so that a dApp can slow down before it is refused).
 */
export const CORS_EXPOSED_HEADERS: readonly string[] = [
  ...connectCors.exposedHeaders,
  "x-request-id",
  "retry-after",
  "ratelimit-limit",
  "ratelimit-remaining",
  "ratelimit-reset",
];

/** How long a browser may cache a preflight answer, in seconds. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * Registers @fastify/cors on `app` for `origins` (exact origins, or "*" for any); does nothing for
 * an empty list. ApiKeys travel in a header, never in cookies, so credentials are not allowed.
 */
export async function registerCors(app: FastifyInstance, origins: readonly string[]): Promise<void> {
  if (origins.length === 0) return;
  const options: FastifyCorsOptions = {
    origin: origins.includes("*") ? "*" : [...origins],
    methods: ["GET", "POST"],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    credentials: false,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
  };
  await app.register(fastifyCors, options);
}
