import type { IncomingHttpHeaders } from "node:http";
import { MAX_DEADLINE_MS } from "./deadline.js";

/** The longest grpc-timeout Node can keep: MAX_DEADLINE_MS in whole seconds (the spec allows at most 8 digits). */
const MAX_GRPC_TIMEOUT = `${Math.floor(MAX_DEADLINE_MS / 1000)}S`;
const GRPC_TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 0.001, n: 0.000001 };

/**
 * Rewrites a deadline header (gRPC and gRPC-Web's grpc-timeout, Connect's connect-timeout-ms) that
 * is longer than Node's timers can hold to the longest they can. connect-es arms a timer with the
 * client's deadline as given, and Node fires one of 2^31 ms or more after 1 ms, failing the call at
 * once. The fast paths clamp when they arm theirs (rpc/unary/unary-call.ts, rpc/interceptors.ts); this covers
 * the calls connect-es serves. Malformed values are left for connect-es to refuse.
 */
export function clampDeadlineHeaders(headers: IncomingHttpHeaders): void {
  const grpc = headers["grpc-timeout"];
  if (typeof grpc === "string") {
    const parsed = /^(\d{1,8})([HMSmun])$/.exec(grpc);
    if (parsed && Number(parsed[1]) * GRPC_TIMEOUT_UNIT_MS[parsed[2]!]! > MAX_DEADLINE_MS) headers["grpc-timeout"] = MAX_GRPC_TIMEOUT;
  }
  const connect = headers["connect-timeout-ms"];
  if (typeof connect === "string" && /^\d{1,10}$/.test(connect) && Number(connect) > MAX_DEADLINE_MS) {
    headers["connect-timeout-ms"] = String(MAX_DEADLINE_MS);
  }
}
