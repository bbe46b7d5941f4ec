import type { Caller } from "../domain/caller.js";
import type { RateLimitState } from "../domain/errors.js";
import type { ApiKeyAuthenticator } from "./api-keys.js";
import type { ApiKeyRateLimiter } from "./api-key-rate-limit.js";

/** Name of the metadata entry (gRPC) / header (Connect, REST) that carries the ApiKey. */
export const API_KEY_HEADER = "apikey";

/**
 * Admits or refuses a request by its ApiKey (authentication plus rate limit); throws domain errors.
 * It resolves with the Caller the request is answered for, which each protocol passes on to the
 * service beside the request message.
 */
export interface RequestGate {
  admit(apiKey: string | undefined): Promise<Admitted>;
}

/** What every admission tells: whose request it is. */
export interface Admitted {
  caller: Caller;
}

/** What admitting a request also tells: where its ApiKey stands in its rate-limit window (null: unlimited). */
export interface Admission extends Admitted {
  rateLimit: RateLimitState | null;
}

/** A RequestGate that also says how much budget is left: REST sends it as the RateLimit-* headers. */
export interface AdmittingGate extends RequestGate {
  admit(apiKey: string | undefined): Promise<Admission>;
}

/**
 * Admits a request when its ApiKey authenticates and its key's rate limit has room: the key's own
 * limit (`keys create --rate`), else `defaultLimit` (RATE_LIMIT; 0: unlimited).
 */
export function createRequestGate(authenticator: ApiKeyAuthenticator, limiter: ApiKeyRateLimiter, defaultLimit: number): AdmittingGate {
  return {
    async admit(apiKey) {
      const { keyId, rateLimit } = await authenticator.authenticate(apiKey);
      return { caller: { keyId }, rateLimit: await limiter.take(keyId, rateLimit ?? defaultLimit) };
    },
  };
}
