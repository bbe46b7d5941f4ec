import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../src/domain/errors.js";
import { createStore } from "../../src/store/index.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import { USER_ID_SEQUENCE, userSetKey } from "../../src/store/redis/keys.js";
import type { UserId } from "../../src/domain/model.js";
import { createCachedStore } from "../../src/store/cache/cached-store.js";
import type { ChangeNotifier, GraphStore } from "../../src/store/store.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";
import { SERVING_WAYS } from "../support/relgraph-server.js";
import { batch, defineStoreAcceptance, user } from "./store-acceptance.js";

let server: TestRedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

async function flushAll(url: string): Promise<void> {
  const client = createClient({ url });
  await client.connect();
  await client.flushAll();
  await client.close();
}

/**
 * Runs `test` on an emptied server with two stores on it, a reader and a writer (the writer stands for
 * `relgraph ingest`, another process), and `calls(command)`: how often Redis has run that command so far.
 */
async function withReaderAndWriter(
  test: (stores: { reader: GraphStore; writer: GraphStore; calls: (command: string) => Promise<number> }) => Promise<void>,
): Promise<void> {
  await flushAll(server.url);
  const reader = await createRedisStore({ url: server.url });
  const writer = await createRedisStore({ url: server.url });
  const client = createClient({ url: server.url });
  await client.connect();
  const calls = async (command: string) => {
    const stats = await client.sendCommand<string>(["INFO", "commandstats"]);
    return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  };
  try {
    await test({ reader, writer, calls });
  } finally {
    await client.close();
    await reader.close();
    await writer.close();
  }
}

// Through node-redis alone (FAST_PATHS=off) and with the engine's own RESP sockets (set reads, bulk writes).
for (const { name, fastPaths } of SERVING_WAYS) {
  const engine = { fastPaths };
  for (const cached of [false, true]) {
    // Bare, as the engine is; and behind the cache layer, as createStore serves it (test/store/cache/).
    const wrap = (store: GraphStore & ChangeNotifier) => (cached ? createCachedStore(store) : store);
    describe(`${cached ? "behind the cache layer" : "bare"}, ${name}`, () => {
      defineStoreAcceptance({
        engine: "redis",
        async createEmpty() {
          await flushAll(server.url);
          return wrap(await createRedisStore({ url: server.url }, engine));
        },
        async createDisposable() {
          const own = await startRedisServer();
          return { store: wrap(await createRedisStore({ url: own.url }, engine)), stopBackend: own.stop };
        },
      });
    });
  }
}

describe("redis engine", () => {
  it("is chosen by createStore when a URL is configured", async () => {
    const store = await createStore({ redisUrl: server.url, redisClusterNodes: [] });
    try {
      expect(store.engine).toBe("redis");
      await store.ping();
    } finally {
      await store.close();
    }
  });

  it("fails promptly with StoreUnavailableError when Redis is down at startup", async () => {
    const gone = await startRedisServer();
    await gone.stop();
    const error = await createRedisStore({ url: gone.url }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).cause).toBeDefined();
  });

  it("writes each user's follow sets with one command, however many records the load spreads over them", async () => {
    await withReaderAndWriter(async ({ reader, writer, calls }) => {
      // Every user follows every other: about 250,000 records, more than one flush of 200,000, so
      // grouping them per flush would send most followers sets in two commands.
      const users = Array.from({ length: 500 }, (_, i) => user(`p${i}`, []));
      const follows = users.flatMap((from) => users.filter((to) => to !== from).map((to) => ({ from: from.relationId, to: to.relationId })));
      const before = await calls("sadd");
      await writer.write(batch({ users, follows }));
      expect((await calls("sadd")) - before).toBe(2 * users.length);
      const [first, last] = (await reader.resolveRelationIds(["p0", "p499"])) as UserId[];
      expect(await reader.userSetSizes("followers", [first!, last!])).toEqual([499, 499]);
      expect((await reader.userSet("following", first!)).length).toBe(499);
    });
  });

  it("writes each asset key with one command, however many records the load spreads over it", async () => {
    await withReaderAndWriter(async ({ reader, writer, calls }) => {
      // 500 users, one address each, each interacting with the same 500 contracts: 250,000 records.
      const n = 500;
      const address = (i: number) => `0x${"a".repeat(8)}${i.toString(16).padStart(32, "0")}`;
      const contract = (j: number) => `0x${"c".repeat(8)}${j.toString(16).padStart(32, "0")}`;
      const users = Array.from({ length: n }, (_, i) => user(`h${i}`, [address(i)]));
      const interactions = Array.from({ length: n * n }, (_, k) => ({ address: address(k % n), contract: contract(Math.floor(k / n)) }));
      const before = await calls("sadd");
      await writer.write(batch({ users, interactions }));
      // Per address, per user and per contract one SADD each, and the set of addresses with records
      // in commands of 1,000 members.
      expect((await calls("sadd")) - before).toBe(3 * n + (n * n) / 1_000);
      const [first] = (await reader.resolveRelationIds(["h0"])) as UserId[];
      expect((await reader.userAssets("contracts", first!)).length).toBe(n);
      expect(await reader.assetHolderCounts("contracts", [contract(0), contract(n - 1)])).toEqual([n, n]);
    });
  });

  it("keeps the last description of a friend pair recorded twice in one batch, as the memory engine does", async () => {
    await withReaderAndWriter(async ({ reader, writer }) => {
      const friends = [
        { a: "ann", b: "ben", description: "first" },
        { a: "ben", b: "cat", description: "other" },
        { a: "ben", b: "ann", description: "last" },
      ];
      await writer.write(batch({ users: [user("ann", []), user("ben", []), user("cat", [])], friends }));
      const [ann, ben, cat] = (await reader.resolveRelationIds(["ann", "ben", "cat"])) as UserId[];
      expect(await reader.friendDescriptions(ann!, [ben!])).toEqual(["last"]);
      expect(await reader.friendDescriptions(ben!, [ann!, cat!])).toEqual(["last", "other"]);
    });
  });

  it("never gives an id twice when the sequence goes back, as a failover to a replica behind it does", async () => {
    await withReaderAndWriter(async ({ reader, writer }) => {
      const first = Array.from({ length: 6 }, (_, i) => user(`old${i}`, []));
      await writer.write(batch({ users: first, friends: [{ a: "old0", b: "old1", description: "" }, { a: "old2", b: "old3", description: "" }] }));
      const oldIds = (await reader.resolveRelationIds(first.map((u) => u.relationId))) as UserId[];
      // What a promoted replica holds when the increments of the last loads never reached it.
      const client = createClient({ url: server.url });
      await client.connect();
      await client.set(USER_ID_SEQUENCE, "1");
      await client.quit();

      await writer.write(batch({ users: [user("new0", []), user("new1", [])], friends: [{ a: "new0", b: "new1", description: "" }] }));
      const newIds = (await reader.resolveRelationIds(["new0", "new1"])) as UserId[];
      for (const id of newIds) expect(oldIds).not.toContain(id);
      // Every old user keeps its record and its friends; the new ones have only each other.
      expect((await reader.users(oldIds)).map((record) => record?.relationId)).toEqual(first.map((u) => u.relationId));
      expect(await reader.userSet("friends", oldIds[0]!)).toEqual([oldIds[1]]);
      expect(await reader.userSet("friends", oldIds[3]!)).toEqual([oldIds[2]]);
      expect(await reader.userSet("friends", newIds[0]!)).toEqual([newIds[1]]);
    });
  });

  it("takes new ids only once a replica holds the sequence: a failover to that replica cannot hand them out again", async () => {
    const master = await startRedisServer();
    const replica = await startRedisServer(["--replicaof", "127.0.0.1", String(master.port)]);
    const admin = createClient({ url: master.url });
    const onReplica = createClient({ url: replica.url });
    let stopped = false;
    let watching = true;
    try {
      await admin.connect();
      await onReplica.connect();
      while (!/slave0:.*state=online/.test(await admin.info("replication"))) await new Promise((resolve) => setTimeout(resolve, 20));
      const writer = await createRedisStore({ url: master.url });
      try {
        await writer.write(batch({ users: [user("a0", [])] }));
        process.kill(replica.pid, "SIGSTOP");
        stopped = true;
        const load = writer.write(batch({ users: [user("b0", []), user("b1", [])] })).then(() => "written" as const);
        const waitingForTheReplica = (async () => {
          while (watching && !/cmd=wait/.test(String(await admin.sendCommand(["CLIENT", "LIST"])))) await new Promise((resolve) => setTimeout(resolve, 5));
          return "waiting" as const;
        })();
        // The load is held while its ids reach no replica, rather than written with ids a failover would give again.
        expect(await Promise.race([load, waitingForTheReplica])).toBe("waiting");
        process.kill(replica.pid, "SIGCONT");
        stopped = false;
        expect(await load).toBe("written");
        const [b1] = (await writer.resolveRelationIds(["b1"])) as UserId[];
        expect(Number(await onReplica.get(USER_ID_SEQUENCE))).toBeGreaterThanOrEqual(b1!);
      } finally {
        await writer.close();
      }
    } finally {
      watching = false;
      if (stopped) process.kill(replica.pid, "SIGCONT");
      await admin.close().catch(() => {});
      await onReplica.close().catch(() => {});
      await replica.stop();
      await master.stop();
    }
  });

  it("keeps friend sets compact (intset encoding, few bytes per member)", async () => {
    await flushAll(server.url);
    const store = await createRedisStore({ url: server.url });
    const client = createClient({ url: server.url });
    await client.connect();
    try {
      // Hubs with 50, 200 and 500 friends (Redis 7.0 keeps sets of up to 512 integers as intsets).
      const sizes = [50, 200, 500];
      const members = Array.from({ length: 500 }, (_, i) => user(`m${i}`, []));
      const friends = sizes.flatMap((size, h) =>
        members.slice(0, size).map((m) => ({ a: `hub${h}`, b: m.relationId, description: "" })),
      );
      await store.write(batch({ users: [...sizes.map((_, h) => user(`hub${h}`, [])), ...members], friends }));
      const hubs = (await store.resolveRelationIds(sizes.map((_, h) => `hub${h}`))) as UserId[];
      const perMember: number[] = [];
      for (const [h, id] of hubs.entries()) {
        const key = userSetKey("friends", id);
        expect(await client.sendCommand(["OBJECT", "ENCODING", key])).toBe("intset");
        const bytes = Number(await client.sendCommand(["MEMORY", "USAGE", key, "SAMPLES", "0"]));
        perMember.push(bytes / (sizes[h] as number));
      }
      console.info(`friend-set bytes per member (50, 200, 500 members): ${perMember.map((b) => b.toFixed(2)).join(", ")}`);
      for (const bytes of perMember) expect(bytes).toBeLessThanOrEqual(20);
    } finally {
      await client.close();
      await store.close();
    }
  });
});
