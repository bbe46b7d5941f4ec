import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addr, fixtureRecords } from "../support/fixtures.js";
import { startRelgraph, TEST_API_KEY, type RunningRelgraph } from "../support/relgraph-server.js";

/**
 * The contract: a 10110 answer carries Retry-After. Every answer to a rate-limited key also says
 * where the key stands (RateLimit-Limit, -Remaining, -Reset), here on the memory engine's limiter.
 */
describe("rate-limited REST answers", () => {
  let server: RunningRelgraph;
  beforeAll(async () => {
    server = await startRelgraph({ records: fixtureRecords(), env: { RATE_LIMIT: "2", RATE_LIMIT_WINDOW_SECONDS: "3600" } });
  });
  afterAll(() => server?.close());

  const ask = () => fetch(`${server.url}/api/v1/mutualFriend?address=${addr("alice")},${addr("bob")}&limit=2`, { headers: { ApiKey: TEST_API_KEY } });

  it("counts down in RateLimit-* headers, then answers 429 with code 10110 and a Retry-After of whole seconds", async () => {
    for (const left of ["1", "0"]) {
      const response = await ask();
      expect(response.status).toBe(200);
      expect(response.headers.get("ratelimit-limit")).toBe("2");
      expect(response.headers.get("ratelimit-remaining")).toBe(left);
      const reset = Number(response.headers.get("ratelimit-reset"));
      expect(reset).toBeGreaterThan(3500);
      expect(reset).toBeLessThanOrEqual(3600);
    }
    const response = await ask();
    expect(response.status).toBe(429);
    expect(await response.json()).toMatchObject({ code: "10110", data: null });
    expect(response.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    expect(response.headers.get("ratelimit-remaining")).toBe("0");
    expect(response.headers.get("retry-after")).toBe(response.headers.get("ratelimit-reset"));
  });

  it("sends no RateLimit-* headers when no limit applies", async () => {
    const open = await startRelgraph({ records: fixtureRecords() });
    try {
      const response = await fetch(`${open.url}/api/v1/mutualContractInteraction?address=${addr("alice")},${addr("bob")}`, { headers: { ApiKey: TEST_API_KEY } });
      expect(response.status).toBe(200);
      expect(response.headers.get("ratelimit-limit")).toBeNull();
    } finally {
      await open.close();
    }
  });
});
