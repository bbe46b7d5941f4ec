import { RateLimitedError } from "../domain/errors.js";

/** Options of createRateLimiter. */
export interface RateLimiterOptions {
  /** Sustained requests per second per client (KEY_NODE_RATE_LIMIT_PER_SECOND); 0 disables limiting. */
  perSecond: number;
  /** Requests a client may make at once (KEY_NODE_RATE_LIMIT_BURST); below 1 it defaults to max(1, perSecond). */
  burst: number;
  /** A monotonic clock in milliseconds; injectable for tests. */
  now?: () => number;
}

/**
 * A request budget per client, in this process only: what the key nodes limit each client address
 * with. ApiKeys are limited across instances by api-key-rate-limit.ts.
 */
export interface RateLimiter {
  /** Spends one request of the client's budget, or throws RateLimitedError (10110) when none is left. */
  take(keyId: string): void;
  /** Buckets currently held: the keys active within the last full-refill period (for metrics). */
  readonly size: number;
}

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date. */
  at: number;
}

/**
 * Creates a token bucket per client: each holds up to `burst` tokens and refills at `perSecond`.
 * A bucket that has refilled completely is indistinguishable from a new one, so idle buckets are
 * dropped in a sweep run at most once per full-refill period; memory follows the active keys only.
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const { perSecond } = options;
  if (perSecond <= 0) return { take() {}, size: 0 };
  const burst = options.burst >= 1 ? options.burst : Math.max(1, perSecond);
  const now = options.now ?? (() => performance.now());
  const perMs = perSecond / 1000;
  const refillMs = burst / perMs;
  const buckets = new Map<string, Bucket>();
  let lastSweep = now();

  function sweep(at: number): void {
    lastSweep = at;
    for (const [keyId, bucket] of buckets) {
      if (bucket.tokens + (at - bucket.at) * perMs >= burst) buckets.delete(keyId);
    }
  }

  return {
    take(keyId) {
      const at = now();
      if (at - lastSweep >= refillMs) sweep(at);
      const bucket = buckets.get(keyId) ?? { tokens: burst, at };
      bucket.tokens = Math.min(burst, bucket.tokens + (at - bucket.at) * perMs);
      bucket.at = at;
      buckets.set(keyId, bucket);
      if (bucket.tokens < 1) {
        const waitSeconds = Math.ceil((1 - bucket.tokens) / perMs / 1000);
        throw new RateLimitedError(`rate limit exceeded for this ApiKey; retry in ${waitSeconds} s`, waitSeconds);
      }
      bucket.tokens -= 1;
    },
    get size() {
      return buckets.size;
    },
  };
}
