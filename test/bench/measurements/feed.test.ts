import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ingestRecords } from "../../../src/ingest/ingest.js";
import { createRedisStore } from "../../../src/store/redis/redis-store.js";
import type { GraphStore } from "../../../src/store/store.js";
import { startRedisServer, type TestRedisServer } from "../../support/redis-servers.js";

/*
 * The feed's bench hook, small: it must push what it says, drain through real `relgraph follow`
 * processes, and count every record as applied (none rejected). Loaded from dist/, as `npm run
 * bench` runs it, since it starts dist/src/cli/main.js beside itself.
 */

type FeedBench = typeof import("../../../bench/measurements/feed.js");

describe("measureFeed", () => {
  let server: TestRedisServer;
  let store: GraphStore;
  let bench: FeedBench;
  const users = 200;
  beforeAll(async () => {
    bench = (await import(new URL("../../../dist/bench/measurements/feed.js", import.meta.url).href)) as FeedBench;
    server = await startRedisServer();
    store = await createRedisStore({ url: server.url });
    await ingestRecords(store, Array.from({ length: users }, (_, i) => ({ type: "user", relationId: `u${i + 1}`, addresses: [] })));
  });
  afterAll(async () => {
    await store?.close();
    await server?.stop();
  });

  it("writes seeded, valid change records about the stored users", () => {
    const lines = [...bench.changeRecords(users, 1_000, "s")];
    expect(lines).toEqual([...bench.changeRecords(users, 1_000, "s")]);
    for (const line of lines) {
      const record = JSON.parse(line) as { a?: string; b?: string; from?: string; to?: string };
      const [x, y] = record.a === undefined ? [record.from!, record.to!] : [record.a, record.b!];
      expect(x).not.toBe(y);
      expect(Number(x.slice(1))).toBeLessThanOrEqual(users);
      expect(Number(y.slice(1))).toBeLessThanOrEqual(users);
    }
  });

  it("drains the records it pushed through two consumers, every one applied", async () => {
    const result = await bench.measureFeed({ env: { REDIS_URL: server.url }, users, records: 5_000, recordsPerEntry: 100, consumers: 2 });
    expect(result).toMatchObject({ records: 5_000, entries: 50, consumers: 2, rejected: 0 });
    expect(result.recordsPerSecond).toBeGreaterThan(0);
    const [u1] = await store.resolveRelationIds(["u1"]);
    const edges = (await store.userSetSizes("friends", [u1!]))[0]! + (await store.userSetSizes("following", [u1!]))[0]!;
    expect(edges).toBeGreaterThan(0);
  });
});
