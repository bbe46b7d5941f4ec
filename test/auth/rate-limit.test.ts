import { describe, expect, it } from "vitest";
import { createRateLimiter } from "../../src/auth/rate-limit.js";
import { RateLimitedError } from "../../src/domain/errors.js";

/** Calls take() n times, returning how many were allowed. */
function allowed(take: () => void, n: number): number {
  let ok = 0;
  for (let i = 0; i < n; i += 1) {
    try {
      take();
      ok += 1;
    } catch (error) {
      expect(error).toBeInstanceOf(RateLimitedError);
    }
  }
  return ok;
}

describe("createRateLimiter", () => {
  it("allows a burst, then refuses with 10110 until tokens refill", () => {
    let clock = 0;
    const limiter = createRateLimiter({ perSecond: 2, burst: 5, now: () => clock });
    expect(allowed(() => limiter.take("a"), 10)).toBe(5);
    expect(() => limiter.take("a")).toThrow(RateLimitedError);

    clock += 499;
    expect(() => limiter.take("a")).toThrow(RateLimitedError);
    clock += 1;
    expect(allowed(() => limiter.take("a"), 3)).toBe(1);

    clock += 60_000;
    expect(allowed(() => limiter.take("a"), 10)).toBe(5);
  });

  it("keeps a separate budget per ApiKey", () => {
    const clock = 0;
    const limiter = createRateLimiter({ perSecond: 1, burst: 2, now: () => clock });
    expect(allowed(() => limiter.take("a"), 5)).toBe(2);
    expect(allowed(() => limiter.take("b"), 5)).toBe(2);
  });

  it("defaults the burst to the per-second rate when the burst is 0", () => {
    const limiter = createRateLimiter({ perSecond: 3, burst: 0, now: () => 0 });
    expect(allowed(() => limiter.take("a"), 10)).toBe(3);
  });

  it("is disabled when perSecond is 0", () => {
    const limiter = createRateLimiter({ perSecond: 0, burst: 0, now: () => 0 });
    expect(allowed(() => limiter.take("a"), 10_000)).toBe(10_000);
  });

  it("drops buckets of idle keys", () => {
    let clock = 0;
    const limiter = createRateLimiter({ perSecond: 10, burst: 10, now: () => clock });
    for (let i = 0; i < 1000; i += 1) limiter.take(`key-${i}`);
    expect(limiter.size).toBe(1000);
    clock += 1_000;
    limiter.take("active");
    expect(limiter.size).toBe(1);
  });

  it("keeps the bucket of a key that has not refilled yet", () => {
    let clock = 0;
    const limiter = createRateLimiter({ perSecond: 1, burst: 4, now: () => clock });
    clock = 3_900;
    expect(allowed(() => limiter.take("busy"), 4)).toBe(4);
    clock = 4_000;
    // This take is due to sweep; dropping the drained bucket would hand "busy" a fresh burst.
    limiter.take("other");
    expect(limiter.size).toBe(2);
    expect(() => limiter.take("busy")).toThrow(RateLimitedError);
  });
});
