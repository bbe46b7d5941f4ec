import { createContextKey, type Interceptor } from "@connectrpc/connect";
import { API_KEY_HEADER, type RequestGate } from "../auth/request-gate.js";
import { toConnectError, type ErrorLogger } from "../transport/errors.js";

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
