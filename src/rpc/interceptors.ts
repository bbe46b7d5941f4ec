import { createContextKey, type Interceptor } from "@connectrpc/connect";
import { toConnectError, type ErrorLogger } from "./errors.js";

/**
 * Admits or refuses a request by its ApiKey (authentication plus rate limit); throws domain errors.
 * What it resolves with is the gate's own (REST sends its rate-limit state as headers).
 */
export interface RequestGate {
  admit(apiKey: string | undefined): Promise<unknown>;
}

/** Name of the metadata entry (gRPC) / header (Connect, REST) that carries the ApiKey. */
export const API_KEY_HEADER = "apikey";

/** Set on calls that were admitted before their body was read (rpc-admission.ts), so they are not counted twice. */
export const ADMITTED = createContextKey(false, { description: "relgraph: ApiKey already admitted" });

/** Requires the `apikey` metadata on every call it wraps that was not admitted already. */
export function createApiKeyInterceptor(gate: RequestGate): Interceptor {
  return (next) => async (req) => {
    if (!req.contextValues.get(ADMITTED)) await gate.admit(req.header.get(API_KEY_HEADER) ?? undefined);
    return next(req);
  };
}

/**
 * Translates every failure into a ConnectError with the contract's code as an ErrorDetail. It must be
 * the outermost interceptor so that errors of the other interceptors are translated too.
 */
export function createErrorInterceptor(log: ErrorLogger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      throw toConnectError(err, log);
    }
  };
}
