import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addr, fixtureRecords } from "../support/fixtures.js";
import { startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { restGet } from "./http.js";

/** The contract: a 10110 answer carries Retry-After. */
describe("rate-limited REST answers", () => {
  let server: RunningRelgraph;
  beforeAll(async () => {
    server = await startRelgraph({ records: fixtureRecords(), env: { RATE_LIMIT_PER_SECOND: "1", RATE_LIMIT_BURST: "1" } });
  });
  afterAll(() => server?.close());

  it("answers 429 with code 10110 and a Retry-After of whole seconds", async () => {
    const question = { address: `${addr("alice")},${addr("bob")}`, limit: 2 };
    expect((await restGet(server.url, "/api/v1/mutualFriend", question)).body.code).toBe("0");
    const response = await fetch(`${server.url}/api/v1/mutualFriend?address=${question.address}&limit=2`, { headers: { ApiKey: "test-key" } });
    expect(response.status).toBe(429);
    expect(await response.json()).toMatchObject({ code: "10110", data: null });
    expect(response.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
  });
});
