import type { RequestGate } from "../rpc/interceptors.js";
import type { ApiKeyAuthenticator } from "./api-keys.js";
import type { RateLimiter } from "./rate-limit.js";

/** Admits a request when its ApiKey authenticates and its key's rate limit has room. */
export function createRequestGate(authenticator: ApiKeyAuthenticator, limiter: RateLimiter): RequestGate {
  return {
    async admit(apiKey) {
      const { keyId } = await authenticator.authenticate(apiKey);
      limiter.take(keyId);
    },
  };
}
