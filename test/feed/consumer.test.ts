import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyEntries } from "../../src/feed/apply-entries.js";
import { createFeedConsumer, type FeedProgress } from "../../src/feed/consumer.js";
import { connectFeedStream, type FeedStream } from "../../src/feed/stream.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";
import { add, connectCommands, record, records, waitUntil, type Commands } from "./helpers.js";

/* The consumer in process, on a real redis-server: what the command line does not expose. */

/** `store`, noting the entries of each unit as it is asked to write and acknowledge them. */
function countingUnits(store: GraphStore): { counted: GraphStore; units: number[] } {
  const units: number[] = [];
  const counted: GraphStore = {
    ...store,
    write: (batch, options) => {
      units.push(options?.acknowledge?.ids.length ?? 0);
      return store.write(batch, options);
    },
  };
  return { counted, units };
}

describe("the feed consumer", () => {
  let server: TestRedisServer;
  let redis: Commands;
  let store: GraphStore;
  let stream: FeedStream;
  const key = "feed:inprocess";
  beforeAll(async () => {
    server = await startRedisServer();
    redis = await connectCommands({ REDIS_URL: server.url });
    store = await createRedisStore({ url: server.url });
    stream = await connectFeedStream({ redis: { url: server.url }, key, group: "relgraph", consumer: "live" });
  });
  afterAll(async () => {
    await stream?.close();
    await store?.close();
    await redis?.close();
    await server?.stop();
  });

  it("names the oldest entry the group has not applied: pending first, then the next undelivered", async () => {
    const k = "feed:oldest";
    const probe = await connectFeedStream({ redis: { url: server.url }, key: k, group: "g", consumer: "c" });
    try {
      expect(await probe.oldestUnapplied()).toBeNull();
      await probe.ensureGroup("0");
      expect(await probe.oldestUnapplied()).toBeNull();
      const ids = [await add(redis, k, record({ n: 1 })), await add(redis, k, record({ n: 2 })), await add(redis, k, record({ n: 3 }))];
      expect(await probe.oldestUnapplied()).toBe(ids[0]);
      await probe.read(2, 0);
      expect(await probe.oldestUnapplied()).toBe(ids[0]);
      await probe.ack([ids[0]!]);
      expect(await probe.oldestUnapplied()).toBe(ids[1]);
      await probe.ack([ids[1]!]);
      expect(await probe.oldestUnapplied()).toBe(ids[2]);
      await probe.read(10, 0);
      await probe.ack([ids[2]!]);
      expect(await probe.oldestUnapplied()).toBeNull();
    } finally {
      await probe.close();
    }
  });

  it("keeps only the newest maxRejected records in the rejected stream", async () => {
    const capped = await connectFeedStream({ redis: { url: server.url }, key: "feed:capped", group: "relgraph", consumer: "c", maxRejected: 3 });
    try {
      for (let i = 0; i < 10; i++) await capped.reject(`${i}-0`, `bad ${i}`, [["record", Buffer.from("not json")]]);
      const kept = (await redis.send(capped.rejectedKey, ["XRANGE", capped.rejectedKey, "-", "+"])) as [string, string[]][];
      expect(kept.map(([, fields]) => fields[1])).toEqual(["7-0", "8-0", "9-0"]);
    } finally {
      await capped.close();
    }
  });

  it("takes over what a dead consumer held first, removes consumers long gone that hold nothing, and reports progress with the lag", async () => {
    await redis.send(key, ["XGROUP", "CREATE", key, "relgraph", "0", "MKSTREAM"]);
    await redis.send(key, ["XGROUP", "CREATECONSUMER", key, "relgraph", "gone"]);
    await add(redis, key, record({ type: "user", relationId: "h1", addresses: [] }));
    // A consumer that read h1 and died without applying it.
    await redis.send(key, ["XREADGROUP", "GROUP", "relgraph", "dead", "COUNT", "1", "STREAMS", key, ">"]);
    await new Promise((resolve) => setTimeout(resolve, 300));

    const progress: FeedProgress[] = [];
    const consumer = createFeedConsumer({
      store,
      stream,
      forgetIdleMs: 200,
      progressMs: 100,
      onProgress: (report) => progress.push(report),
    });
    const running = consumer.run();
    try {
      await add(redis, key, record({ type: "user", relationId: "h2", addresses: [] }));
      await waitUntil("h1 and h2 are applied", () => consumer.stats().entries === 2);
      const names = async () => (await stream.consumers()).map((item) => item.name).sort();
      await waitUntil("the consumers gone are removed", async () => (await names()).join() === "live");
      await waitUntil("progress reports nothing left", () => progress.some((report) => report.lag?.pending === 0 && report.lag.undelivered === 0 && report.entries === 2));
    } finally {
      consumer.stop();
    }
    expect(await running).toMatchObject({ entries: 2, records: 2, rejected: 0, claimed: 1 });
    expect((await stream.lag())?.pending).toBe(0);
  });

  it("starts again when its stream is deleted under it", async () => {
    const consumer = createFeedConsumer({ store, stream });
    const running = consumer.run();
    try {
      await add(redis, key, record({ type: "user", relationId: "d1", addresses: [] }));
      await waitUntil("d1 is applied", () => consumer.stats().entries === 1);
      await redis.send(key, ["DEL", key]);
      await waitUntil("the group is back", async () => (await stream.lag()) !== null);
      await add(redis, key, record({ type: "user", relationId: "d2", addresses: [] }));
      await waitUntil("d2 is applied", () => consumer.stats().entries === 2);
    } finally {
      consumer.stop();
    }
    await running;
  });

  it("acknowledges the entries it applies as part of the store's write, and leaves rejected ones to its caller", async () => {
    const stream = "feed:acknowledged";
    await redis.send(stream, ["XGROUP", "CREATE", stream, "relgraph", "0", "MKSTREAM"]);
    const good = await add(redis, stream, record({ type: "user", relationId: "a1", addresses: [] }));
    const bad = await add(redis, stream, record({ type: "follow", from: "a1", to: "nobody" }));
    await redis.send(stream, ["XREADGROUP", "GROUP", "relgraph", "reader", "COUNT", "10", "STREAMS", stream, ">"]);
    const { rejected } = await applyEntries(
      store,
      [
        { id: good, bytes: Buffer.from(JSON.stringify({ type: "user", relationId: "a1", addresses: [] })) },
        { id: bad, bytes: Buffer.from(JSON.stringify({ type: "follow", from: "a1", to: "nobody" })) },
      ],
      { acknowledge: { stream, group: "relgraph" } },
    );
    expect(rejected.map((item) => item.id)).toEqual([bad]);
    const pending = await redis.send<[string, string, number, number][]>(stream, ["XPENDING", stream, "relgraph", "-", "+", "10"]);
    expect(pending.map(([id]) => id)).toEqual([bad]);
  });

  it("on a busy stream takes several entries per unit, lingering for more; without lingering, about one", async () => {
    /** Runs a consumer while `entries` small entries are XADDed 10 ms apart; resolves with the entries of each unit. */
    const unitsOf = async (name: string, lingerMs: number, entries: number): Promise<number[]> => {
      await redis.send(name, ["XGROUP", "CREATE", name, "relgraph", "0", "MKSTREAM"]);
      const { counted, units } = countingUnits(store);
      const own = await connectFeedStream({ redis: { url: server.url }, key: name, group: "relgraph", consumer: "steady" });
      const consumer = createFeedConsumer({ store: counted, stream: own, lingerMs, blockMs: 100 });
      const running = consumer.run();
      try {
        for (let k = 0; k < entries; k++) {
          await add(redis, name, record({ type: "user", relationId: `${name.replace("feed:", "")}${k}`, addresses: [] }));
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        await waitUntil("every entry is applied", () => consumer.stats().entries === entries);
      } finally {
        consumer.stop();
      }
      expect(await running).toMatchObject({ entries, rejected: 0 });
      await own.close();
      expect(units.reduce((sum, n) => sum + n, 0)).toBe(entries);
      return units;
    };
    const lingering = await unitsOf("feed:lingering", 40, 100);
    const eager = await unitsOf("feed:eager", 0, 100);
    expect(lingering.length).toBeLessThan(0.6 * eager.length);
  });

  it("acknowledges an entry trimmed after delivery as nothing applied, and deletes no entry itself", async () => {
    const trimmed = "feed:trimmed";
    await redis.send(trimmed, ["XGROUP", "CREATE", trimmed, "relgraph", "0", "MKSTREAM"]);
    const kept = await add(redis, trimmed, record({ type: "user", relationId: "trim-kept", addresses: [] }));
    const gone = await add(redis, trimmed, record({ type: "user", relationId: "trim-gone", addresses: [] }));
    // Read by a consumer that dies with them, then one of them trimmed away.
    await redis.send(trimmed, ["XREADGROUP", "GROUP", "relgraph", "ghost", "COUNT", "10", "STREAMS", trimmed, ">"]);
    await redis.send(trimmed, ["XDEL", trimmed, gone]);
    const heir = await connectFeedStream({ redis: { url: server.url }, key: trimmed, group: "relgraph", consumer: "heir" });
    const consumer = createFeedConsumer({ store, stream: heir, blockMs: 100 });
    const running = consumer.run();
    try {
      await waitUntil("nothing is pending", async () => (await redis.send<unknown[]>(trimmed, ["XPENDING", trimmed, "relgraph"]))[0] === 0);
    } finally {
      consumer.stop();
    }
    // Redis 7 drops a deleted entry from the pending list as it is claimed; either way nothing of it is applied.
    expect(await running).toMatchObject({ entries: 1, rejected: 0 });
    await heir.close();
    expect(await store.resolveRelationIds(["trim-kept", "trim-gone"])).toEqual([expect.any(Number), null]);
    expect(await redis.send(trimmed, ["XRANGE", trimmed, "-", "+"])).toEqual([[kept, ["record", expect.any(String)]]]);
  });

  it("holds about unitBytes of records per unit: reads and claims ask for as many entries as fit, judged by those read before", async () => {
    const sized = "feed:sized";
    const entryUsers = Array.from({ length: 24 }, (_, k) => Array.from({ length: 300 }, (_, j) => `z${k}_${j}`));
    const entry = (k: number) => records(entryUsers[k]!.map((relationId) => ({ type: "user", relationId, name: `user ${relationId} `.repeat(4), addresses: [] })));
    const entryBytes = entry(0).records!.length;
    await redis.send(sized, ["XGROUP", "CREATE", sized, "relgraph", "0", "MKSTREAM"]);
    for (let k = 0; k < 12; k++) await add(redis, sized, entry(k));
    // A consumer that read the first twelve and died: the next takes them over, a unit's worth at a time.
    await redis.send(sized, ["XREADGROUP", "GROUP", "relgraph", "ghost", "COUNT", "100", "STREAMS", sized, ">"]);
    for (let k = 12; k < 24; k++) await add(redis, sized, entry(k));

    const { counted, units } = countingUnits(store);
    const heir = await connectFeedStream({ redis: { url: server.url }, key: sized, group: "relgraph", consumer: "heir" });
    const consumer = createFeedConsumer({ store: counted, stream: heir, unitBytes: Math.floor(3.5 * entryBytes) });
    const running = consumer.run();
    try {
      await waitUntil("every entry is applied", () => consumer.stats().entries === 24);
    } finally {
      consumer.stop();
    }
    expect(await running).toMatchObject({ entries: 24, records: 24 * 300, claimed: 12, rejected: 0 });
    await heir.close();
    expect(units.reduce((sum, n) => sum + n, 0)).toBe(24);
    expect(Math.max(...units)).toBeLessThanOrEqual(3);
    expect(units.length).toBeGreaterThanOrEqual(8);
    const ids = await store.resolveRelationIds(entryUsers.flat());
    expect(ids.filter((id) => id === null)).toHaveLength(0);
  });
});
