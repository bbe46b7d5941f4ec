import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../src/domain/errors.js";
import { createStore } from "../../src/store/index.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import { userSetKey } from "../../src/store/redis/keys.js";
import type { UserId } from "../../src/domain/model.js";
import type { GraphStore } from "../../src/store/store.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";
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

defineStoreAcceptance({
  engine: "redis",
  async createEmpty() {
    await flushAll(server.url);
    return createRedisStore({ url: server.url });
  },
  async createDisposable() {
    const own = await startRedisServer();
    return { store: await createRedisStore({ url: own.url }), stopBackend: own.stop };
  },
});

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

  it("serves a reader's cached records only while no other process has written", async () => {
    await withReaderAndWriter(async ({ reader, writer, calls }) => {
      const userReads = () => calls("mget");
      const A = "0x" + "a".repeat(40);
      await writer.write(batch({ users: [user("ann", [A]), user("ben", [])] }));
      const hydrate = async () => {
        const [id] = await reader.resolve([{ kind: "address", value: A }]);
        return (await reader.users([id as UserId]))[0];
      };
      expect((await hydrate())?.name).toBe("name of ann");
      const before = await userReads();
      expect((await hydrate())?.name).toBe("name of ann");
      expect(await userReads()).toBe(before);
      // Another process (relgraph ingest) rewrites the user: the reader's next query sees it.
      await writer.write(batch({ users: [user("ann", [A], { name: "Ann, renamed" })] }));
      const afterWrite = await userReads();
      expect((await hydrate())?.name).toBe("Ann, renamed");
      expect(await userReads()).toBe(afterWrite + 1);
      // A write that fails halfway (a friend no load defines) still makes readers drop what they hold.
      const beforeFailure = await userReads();
      await expect(writer.write(batch({ friends: [{ a: "ann", b: "nobody", description: "" }] }))).rejects.toThrow(/nobody/);
      expect((await hydrate())?.name).toBe("Ann, renamed");
      expect(await userReads()).toBe(beforeFailure + 1);
      // A flushed and reloaded database never looks like the version the reader holds, even where it
      // gives an id that the reader knew to another user.
      const [annId] = (await reader.resolveRelationIds(["ann"])) as UserId[];
      expect(await reader.relationIds([annId!])).toEqual(["ann"]);
      await flushAll(server.url);
      await writer.write(batch({ users: [user("ben", []), user("ann", [A], { name: "Ann, reloaded" })] }));
      expect((await hydrate())?.name).toBe("Ann, reloaded");
      expect(await reader.resolveRelationIds(["ben"])).toEqual([annId]);
      expect(await reader.relationIds([annId!])).toEqual(["ben"]);
    });
  });

  it("keeps intersections longer than a page for the data version, and recomputes short ones", async () => {
    await withReaderAndWriter(async ({ reader, writer, calls }) => {
      const intersections = () => calls("sinter");
      const friendOf = (a: string) => (m: { relationId: string }) => ({ a, b: m.relationId, description: "" });
      const members = Array.from({ length: 150 }, (_, i) => user(`m${i}`, []));
      await writer.write(
        batch({
          users: [user("h1", []), user("h2", []), user("s1", []), user("s2", []), ...members],
          friends: [...members.map(friendOf("h1")), ...members.map(friendOf("h2")), friendOf("s1")(members[0]!), friendOf("s2")(members[0]!)],
        }),
      );
      const [h1, h2, s1, s2] = (await reader.resolveRelationIds(["h1", "h2", "s1", "s2"])) as UserId[];
      // Every query starts by resolving identities, which reads the data version.
      const query = async (a: UserId, b: UserId) => {
        await reader.resolve([]);
        return reader.userSetIntersection("friends", [a!, b!]);
      };
      const before = await intersections();
      expect(await query(h1!, h2!)).toHaveLength(150);
      expect(await query(h2!, h1!)).toHaveLength(150);
      expect(await intersections()).toBe(before + 1);
      expect(await query(s1!, s2!)).toHaveLength(1);
      expect(await query(s1!, s2!)).toHaveLength(1);
      expect(await intersections()).toBe(before + 3);
      // Another process adds a mutual friend of the hubs: the next query sees it.
      await writer.write(batch({ users: [user("m150", [])], friends: [friendOf("h1")({ relationId: "m150" }), friendOf("h2")({ relationId: "m150" })] }));
      expect(await query(h1!, h2!)).toHaveLength(151);
    });
  });

  it("keeps the sizes and members of neighbour sets for the data version, within their bound", async () => {
    await withReaderAndWriter(async ({ reader, writer, calls }) => {
      const friendOf = (a: string) => (b: string) => ({ a, b, description: "" });
      const K = "0x" + "c".repeat(40);
      await writer.write(
        batch({
          users: ["p", "q", "r", "s"].map((name) => user(name, [])).concat([user("holder", ["0x" + "d".repeat(40)])]),
          friends: [friendOf("p")("q"), friendOf("p")("r"), friendOf("q")("r"), friendOf("s")("q"), friendOf("s")("r"), friendOf("s")("p")],
          interactions: [{ address: "0x" + "d".repeat(40), contract: K }],
        }),
      );
      const ids = (await reader.resolveRelationIds(["p", "q", "r", "s", "holder"])) as UserId[];
      const [p, q, r, s, holder] = ids;
      const sorted = (sets: (UserId[] | null)[]) => sets.map((set) => set && [...set].sort((x, y) => x - y));
      const expand = async () => {
        await reader.resolve([]);
        return {
          sizes: await reader.userSetSizes("friends", [p!, q!, r!, s!]),
          sets: sorted(await reader.userSetsBounded("friends", [p!, q!, r!, s!], 2)),
          holders: sorted(await reader.assetHoldersBounded("contracts", [K], 10)),
        };
      };
      const expected = {
        sizes: [3, 3, 3, 3],
        sets: [null, null, null, null],
        holders: [[holder]],
      };
      const reads = async () => (await calls("scard")) + (await calls("smembers"));
      expect(await expand()).toEqual(expected);
      const afterFirst = await reads();
      expect(await expand()).toEqual(expected);
      expect(await reads()).toBe(afterFirst);
      // Another process gives p a new friend: the reader's next query sees p's new size and t's set.
      await writer.write(batch({ users: [user("t", [])], friends: [friendOf("t")("p")] }));
      const t = (await reader.resolveRelationIds(["t"]))[0] as UserId;
      await reader.resolve([]);
      expect(await reader.userSetSizes("friends", [p!, t])).toEqual([4, 1]);
      expect(sorted(await reader.userSetsBounded("friends", [t, s!], 3))).toEqual([[p], [p, q, r].sort((x, y) => x! - y!)]);
      const afterRead = await reads();
      expect(sorted(await reader.userSetsBounded("friends", [t, s!], 3))).toEqual([[p], [p, q, r].sort((x, y) => x! - y!)]);
      expect(await reads()).toBe(afterRead);
    });
  });
});
