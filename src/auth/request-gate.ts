import type { RateLimitState } from "../domain/errors.js";
import type { ApiKeyAuthenticator } from "./api-keys.js";
import type { ApiKeyRateLimiter } from "./api-key-rate-limit.js";

/** Name of the metadata entry (gRPC) / header (Connect, REST) that carries the ApiKey. */
export const API_KEY_HEADER = "apikey";

/**
 * Admits or refuses a request by its ApiKey (authentication plus rate limit); throws domain errors.
 * What it resolves with is the gate's own (REST sends its rate-limit state as headers).
 */
export interface RequestGate {
  admit(apiKey: string | undefined): Promise<unknown>;
}

/** What admitting a request tells: where its ApiKey stands in its rate-limit window (null: unlimited). */
export interface Admission {
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
      return { rateLimit: await limiter.take(keyId, rateLimit ?? defaultLimit) };
    },
  };
}
