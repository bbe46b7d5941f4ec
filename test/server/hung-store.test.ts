import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStore } from "../../src/store/index.js";
import { addr, fixtureRecords } from "../support/fixtures.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";
import { SERVING_WAYS, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { restGet } from "./http.js";

/*
 * A Redis that stops answering without closing its socket (here: SIGSTOP) must
 * not hold every call for long. The bounds are hang guards, far from what a healthy call takes and
 * far below the 15 s every call used to wait: /readyz answers within its second, a query gives up
 * after the store timeout (2 s), and once the connection is known stalled, the next fail at once.
 */
const READY_GUARD_MS = 1_500;
const FIRST_CALL_GUARD_MS = 5_000;
const FAIL_FAST_GUARD_MS = 1_000;

async function timed<T>(action: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await action();
  return { value, ms: performance.now() - started };
}

describe.each(SERVING_WAYS)("a hung Redis ($name)", ({ env, fastPaths }) => {
  let redis: TestRedisServer;
  let server: RunningRelgraph;
  let paused = false;
  const pause = (on: boolean) => {
    process.kill(redis.pid, on ? "SIGSTOP" : "SIGCONT");
    paused = on;
  };
  const question = { address: `${addr("alice")},${addr("bob")}`, limit: 2 };

  beforeAll(async () => {
    redis = await startRedisServer();
    // The engine's own RESP set reader (FAST_PATHS) has a connection of its own, and a stall breaker of its own.
    const store = await createStore({ redisUrl: redis.url, redisClusterNodes: [], fastPaths });
    server = await startRelgraph({ store, records: fixtureRecords(), env });
  });
  afterAll(async () => {
    if (paused) pause(false);
    await server?.close();
    await redis?.stop();
  });

  it("answers /readyz with 503 within a second, fails queries fast, and recovers when Redis does", async () => {
    expect((await restGet(server.url, "/api/v1/mutualFriend", question)).body.code).toBe("0");
    pause(true);

    const ready = await timed(() => fetch(`${server.url}/readyz`));
    expect(ready.value.status).toBe(503);
    expect(ready.ms).toBeLessThan(READY_GUARD_MS);

    const first = await timed(() => restGet(server.url, "/api/v1/mutualFriend", question));
    expect(first.value.status).toBe(503);
    expect(first.value.body.code).toBe("50300");
    expect(first.ms).toBeLessThan(FIRST_CALL_GUARD_MS);

    for (let i = 0; i < 5; i++) {
      const next = await timed(() => restGet(server.url, "/api/v1/mutualFriend", question));
      expect(next.value.body.code).toBe("50300");
      expect(next.ms).toBeLessThan(FAIL_FAST_GUARD_MS);
    }

    pause(false);
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = (await fetch(`${server.url}/readyz`)).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(200);
    expect((await restGet(server.url, "/api/v1/mutualFriend", question)).body.code).toBe("0");
  });
});
