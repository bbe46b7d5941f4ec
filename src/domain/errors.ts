/**
 * relgraph's domain errors. Each carries the contract's string code; transport/errors.ts is the one place
 * that turns them into a Connect code, an HTTP status and an envelope. `message` is the client-facing
 * `desc`, so it names the parameter at fault and never carries internals.
 */
export abstract class RelgraphError extends Error {
  /** The contract's string code, e.g. "11600". */
  abstract readonly code: ErrorCode;
  constructor(desc: string, options?: { cause?: unknown }) {
    super(desc, options);
    this.name = new.target.name;
  }
}

/** The contract's error codes (contract.md, "Codes"). */
export type ErrorCode =
  | "10001"
  | "10002"
  | "10100"
  | "10101"
  | "10102"
  | "10110"
  | "11600"
  | "11602"
  | "11603"
  | "50000"
  | "50300";

/** Thrown when a request under /api/v1/ (or an RPC) carries no ApiKey. */
export class MissingApiKeyError extends RelgraphError {
  readonly code = "10001";
}

/** Thrown when the ApiKey is unknown or revoked. */
export class InvalidApiKeyError extends RelgraphError {
  readonly code = "10002";
}

/** Thrown when the SIWE authorization has expired, is not yet valid, or was issued too long ago. */
export class AuthorizationExpiredError extends RelgraphError {
  readonly code = "10100";
}

/** Thrown when sig/message is missing, malformed, wrongly signed, or has the wrong statement or domain. */
export class InvalidAuthorizationError extends RelgraphError {
  readonly code = "10101";
}

/** Thrown when the SIWE signer is not one of the queried user's addresses. */
export class NotOwnerError extends RelgraphError {
  readonly code = "10102";
}

/** Thrown when an ApiKey (or a key node's client) exceeds its request rate. */
export class RateLimitedError extends RelgraphError {
  readonly code = "10110";
  constructor(
    desc: string,
    /** Whole seconds until a request would be admitted again: the Retry-After header. */
    readonly retryAfterSeconds = 1,
    /** The ApiKey's budget, for the RateLimit-* headers (absent for the key nodes' per-address limit). */
    readonly rateLimit?: RateLimitState,
  ) {
    super(desc);
  }
}

/** Where an ApiKey stands in its current rate-limit window: the RateLimit-* headers of REST answers. */
export interface RateLimitState {
  /** Requests the key may make per window. */
  limit: number;
  /** Requests left in the current window. */
  remaining: number;
  /** Whole seconds until the window ends and the budget is whole again. */
  resetSeconds: number;
}

/** Thrown when a parameter is missing or invalid; the message names the parameter. */
export class InvalidArgumentError extends RelgraphError {
  readonly code = "11600";
}

/**
 * Thrown when a request body is larger than MAX_REQUEST_BYTES, before or after decompression. It is a
 * bad request (11600) that HTTP shows as 413 and gRPC as RESOURCE_EXHAUSTED (transport/errors.ts).
 */
export class RequestTooLargeError extends RelgraphError {
  readonly code = "11600";
}

/** Thrown when a queried user (or address) does not exist. */
export class UserNotFoundError extends RelgraphError {
  readonly code = "11602";
}

/** Thrown when a cursor is forged, garbled, belongs to another query, or has expired. */
export class InvalidCursorError extends RelgraphError {
  readonly code = "11603";
}

/** Thrown when the store cannot be reached; the cause is logged, never sent to clients. */
export class StoreUnavailableError extends RelgraphError {
  readonly code = "50300";
}

/** Thrown when a dependency other than the store (a key node, the Lit network) cannot be reached. */
export class UpstreamUnavailableError extends RelgraphError {
  readonly code = "50300";
}
