import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import { RateLimitedError, RelgraphError, StoreUnavailableError, type RateLimitState } from "../domain/errors.js";
import type { SharedStateStore } from "../store/store.js";

/** Per-ApiKey request budgets, shared by every server instance on the store. */
export interface ApiKeyRateLimiter {
  /**
   * Spends one request of the key's budget of `limit` requests per window: where the key stands
   * then, or null when `limit` is 0 (unlimited). Throws RateLimitedError (10110) when the budget is
   * spent, StoreUnavailableError when the store cannot count.
   */
  take(keyId: string, limit: number): Promise<RateLimitState | null>;
}

/** Options of createApiKeyRateLimiter. */
export interface ApiKeyRateLimiterOptions {
  /** The store: a Redis engine (evalScript) counts in Redis, for every instance; the memory engine counts in this process. */
  store: Pick<SharedStateStore, "evalScript">;
  /** The window's length in seconds (RATE_LIMIT_WINDOW_SECONDS). */
  windowSeconds: number;
}

/** The Redis key prefix of the counters: rg:rate:KEYID, one per key and window, expiring with it. */
const KEY_PREFIX = "rg:rate";

/**
 * Creates the limiter, through rate-limiter-flexible: a fixed-window counter per ApiKey, which on
 * Redis is one Lua script (INCR and PTTL) per request over the store's own connection, so the
 * store's timeout and stall breaker cover it. A key over its budget is also refused from this
 * process's memory for the rest of its window, so a client hammering past its limit costs Redis nothing.
 * One limiter is kept per distinct limit (keys differ only in their limits); they share the counters.
 */
export function createApiKeyRateLimiter(options: ApiKeyRateLimiterOptions): ApiKeyRateLimiter {
  const { store, windowSeconds } = options;
  const evalScript = store.evalScript?.bind(store);
  // rate-limiter-flexible calls node-redis's eval(script, { keys, arguments }); this is that, on the store.
  const storeClient = evalScript && {
    eval: (script: string, call: { keys: string[]; arguments: string[] }) => evalScript(script, call.keys, call.arguments),
  };
  const limiters = new Map<number, RateLimiterAbstract>();
  const limiterFor = (points: number): RateLimiterAbstract => {
    let limiter = limiters.get(points);
    if (limiter) return limiter;
    const common = { points, duration: windowSeconds, keyPrefix: KEY_PREFIX };
    limiter = storeClient
      ? new RateLimiterRedis({ ...common, storeClient, useRedisPackage: true, inMemoryBlockOnConsumed: points + 1 })
      : new RateLimiterMemory(common);
    limiters.set(points, limiter);
    return limiter;
  };

  return {
    async take(keyId, limit) {
      if (limit <= 0) return null;
      let spent: RateLimiterRes;
      try {
        spent = await limiterFor(limit).consume(keyId);
      } catch (outcome) {
        if (!(outcome instanceof RateLimiterRes)) {
          if (outcome instanceof RelgraphError) throw outcome;
          throw new StoreUnavailableError("the store is unavailable", { cause: outcome });
        }
        const retryAfterSeconds = secondsOf(outcome.msBeforeNext);
        throw new RateLimitedError(`rate limit exceeded for this ApiKey (${limit} requests per ${windowSeconds} s); retry in ${retryAfterSeconds} s`, retryAfterSeconds, {
          limit,
          remaining: 0,
          resetSeconds: retryAfterSeconds,
        });
      }
      return { limit, remaining: spent.remainingPoints, resetSeconds: secondsOf(spent.msBeforeNext) };
    },
  };
}

/** Whole seconds, at least 1, of a window's remaining milliseconds. */
function secondsOf(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
