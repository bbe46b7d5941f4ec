import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { parseTimeout as parseConnectTimeout } from "@connectrpc/connect/protocol-connect";
import { parseTimeout as parseGrpcTimeout } from "@connectrpc/connect/protocol-grpc";
import { API_KEY_HEADER, type RequestGate } from "../auth/request-gate.js";
import type { Caller } from "../domain/caller.js";
import { DeadlineExceeded, withDeadline } from "../transport/deadline.js";
import { toConnectError, type ErrorLogger } from "../transport/errors.js";

/**
 * The Caller a call was admitted as: set before its body was read (admission.ts), so that it is not
 * counted twice, or by the ApiKey interceptor; null until then. connectServiceImpl hands it to the service.
 */
export const ADMITTED_CALLER = createContextKey<Caller | null>(null, { description: "relgraph: the Caller the ApiKey was admitted as" });

/** Requires the `apikey` metadata on every call it wraps that was not admitted already. */
export function createApiKeyInterceptor(gate: RequestGate): Interceptor {
  return (next) => async (req) => {
    if (req.contextValues.get(ADMITTED_CALLER) === null) {
      const { caller } = await gate.admit(req.header.get(API_KEY_HEADER) ?? undefined);
      req.contextValues.set(ADMITTED_CALLER, caller);
    }
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
      // A deadline the client set is the client's, as on the fast paths (unary/unary-call.ts).
      if (err instanceof ConnectError && err.code === Code.DeadlineExceeded) throw err;
      throw toConnectError(err, log);
    }
  };
}

/**
 * Ends a call at the client's deadline (grpc-timeout, connect-timeout-ms), as the fast paths do:
 * connect-es answers only once the implementation returns, and its own deadline signal fires after
 * 1 ms for a deadline past Node's longest timer. A malformed deadline never gets here: connect-es
 * refuses it first (protocol-errors.ts).
 */
export function createDeadlineInterceptor(): Interceptor {
  return (next) => async (req) => {
    const grpcTimeout = req.header.get("grpc-timeout");
    const connectTimeout = req.header.get("connect-timeout-ms");
    const { timeoutMs } =
      grpcTimeout !== null
        ? parseGrpcTimeout(grpcTimeout, Number.MAX_SAFE_INTEGER)
        : connectTimeout !== null
          ? parseConnectTimeout(connectTimeout, Number.MAX_SAFE_INTEGER)
          : { timeoutMs: undefined };
    try {
      return await withDeadline(next(req), timeoutMs);
    } catch (err) {
      throw err instanceof DeadlineExceeded ? err.error : err;
    }
  };
}
