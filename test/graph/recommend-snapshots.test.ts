import { createClient } from "redis";
import type { Caller } from "../../src/domain/caller.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorCodec } from "../../src/domain/cursor.js";
import { RateLimitedError } from "../../src/domain/errors.js";
import { GraphQueries } from "../../src/graph/queries.js";
import { DEFAULT_RECOMMENDATION_LIMITS, type RecommendationLimits } from "../../src/domain/recommendation-limits.js";
import type { IngestRecord } from "../../src/ingest/format.js";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";

/** The ApiKey every query here is asked under. */
const CALLER: Caller = { keyId: "test-key" };

/**
 * Recommendation snapshots on a real Redis (and the memory engine): written only when a next page
 * can be asked for, no longer than the chain they serve, and bounded in number per user, per ApiKey
 * and in all, with every cursor already given out still served when a bound refuses a new chain.
 */

const addressOf = (name: string) => `0x${Buffer.from(name).toString("hex").padStart(40, "0").slice(-40)}`;
const userRecord = (relationId: string): IngestRecord => ({
  type: "user",
  relationId,
  name: relationId,
  avatar: "",
  addresses: [addressOf(relationId)],
  social: null,
  game: null,
});
const friend = (a: string, b: string): IngestRecord => ({ type: "friend", a, b, description: "" });

/** a and z are friends of m, who has 30 more friends b00…b29: each is a's candidate by one mutual friend, all tied. */
const tied = Array.from({ length: 30 }, (_, i) => `b${String(i).padStart(2, "0")}`);
const records: IngestRecord[] = [
  ...["a", "z", "m", ...tied].map(userRecord),
  friend("a", "m"),
  friend("z", "m"),
  ...tied.map((b) => friend("m", b)),
];

/** The chain stops after 5 users, so that the tie at the cut is 31 wide (z and the b's). */
const LIMITS: RecommendationLimits = { ...DEFAULT_RECOMMENDATION_LIMITS, maxResults: 5 };

let server: TestRedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

interface Engine {
  store: GraphStore;
  /** The snapshots stored now, by key, as base64 text; null where the engine cannot be looked into. */
  snapshots(): Promise<Map<string, string> | null>;
  close(): Promise<void>;
}

const engines: Record<string, () => Promise<Engine>> = {
  memory: async () => ({ store: createMemoryStore(), snapshots: async () => null, close: async () => {} }),
  redis: async () => {
    const client = createClient({ url: server.url });
    await client.connect();
    await client.flushAll();
    const store = await createRedisStore({ url: server.url });
    return {
      store,
      snapshots: async () => {
        const keys = await client.keys("rg:page:rec:*");
        const values = await Promise.all(keys.map((key) => client.get(key)));
        return new Map(keys.map((key, i) => [key, values[i]!]));
      },
      close: async () => {
        await store.close();
        await client.close();
      },
    };
  },
};

async function setUp(engine: Engine, limits: Partial<RecommendationLimits> = {}) {
  await ingestRecords(engine.store, records);
  const queries = new GraphQueries(engine.store, createCursorCodec(Buffer.alloc(32, 7)), { ...LIMITS, ...limits });
  const idOf = async (name: string) => (await queries.resolveUsers([{ kind: "address", value: addressOf(name) }]))[0]!;
  const rest = async (id: number, cursor: string, limit = 2) => {
    const names: string[] = [];
    while (cursor !== "") {
      const page = await queries.recommendations(id, { limit, cursor }, CALLER);
      names.push(...page.items.map((item) => item.user.relationId));
      cursor = page.cursor;
    }
    return names;
  };
  return { queries, idOf, rest };
}

describe.each(Object.keys(engines))("recommendation snapshots (%s)", (name) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engines[name]!();
  });
  afterAll(async () => {
    await engine?.close();
  });

  it("writes none for an answer that fits one page, and one no longer than the chain for a longer one", async () => {
    const { queries, idOf, rest } = await setUp(engine);
    const a = await idOf("a");
    const whole = await queries.recommendations(a, { limit: 10, cursor: "" }, CALLER);
    // The 5 first of the 31 tied candidates by relationId.
    expect(whole.items.map((item) => item.user.relationId)).toEqual(["b00", "b01", "b02", "b03", "b04"]);
    expect(whole.cursor).toBe("");
    expect((await engine.snapshots())?.size ?? 0).toBe(0);

    const first = await queries.recommendations(a, { limit: 2, cursor: "" }, CALLER);
    expect([...first.items.map((item) => item.user.relationId), ...(await rest(a, first.cursor))]).toEqual(["b00", "b01", "b02", "b03", "b04"]);
    const snapshots = await engine.snapshots();
    if (snapshots === null) return;
    expect(snapshots.size).toBe(1);
    // A 4-byte header and 18 bytes for each of the 5 candidates served, not for all 31 tied ones.
    const [value] = [...snapshots.values()];
    expect(Buffer.from(value!, "base64").length).toBe(4 + 5 * 18);
  });
});

describe.each(Object.keys(engines))("recommendation snapshot time (%s)", (name) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engines[name]!();
  });
  afterAll(async () => {
    await engine?.close();
  });

  it("renews a chain's snapshot on every page: a cursor given out late in a chain is valid as long as the first", async () => {
    // Snapshots of 2 s stand for the contract's 10 minutes.
    const { queries, idOf, rest } = await setUp(engine, { snapshotTtlSeconds: 2 });
    const a = await idOf("a");
    const first = await queries.recommendations(a, { limit: 1, cursor: "" }, CALLER);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const second = await queries.recommendations(a, { limit: 1, cursor: first.cursor }, CALLER);
    // The ranking changes, so that only the snapshot can serve the rest of the chain.
    await ingestRecords(engine.store, [userRecord("a0"), friend("m", "a0")]);
    await new Promise((resolve) => setTimeout(resolve, 1300));
    expect([...first.items, ...second.items].map((item) => item.user.relationId)).toEqual(["b00", "b01"]);
    expect(await rest(a, second.cursor)).toEqual(["b02", "b03", "b04"]);
  });
});

describe.each(Object.keys(engines))("recommendation snapshot limits (%s)", (name) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engines[name]!();
  });
  afterAll(async () => {
    await engine?.close();
  });

  it("refuses a user's new chain past snapshotsPerUser with 10110, while their open chains and one-page answers are served", async () => {
    const { queries, idOf, rest } = await setUp(engine, { snapshotsPerUser: 1 });
    const a = await idOf("a");
    const open = await queries.recommendations(a, { limit: 2, cursor: "" }, CALLER);
    // The same ranking asked again shares its snapshot.
    const again = await queries.recommendations(a, { limit: 2, cursor: "" }, CALLER);
    // m gains a friend: a's ranking changes, and a new chain would need a second snapshot.
    await ingestRecords(engine.store, [userRecord("a0"), friend("m", "a0")]);
    const refused = queries.recommendations(a, { limit: 2, cursor: "" }, CALLER);
    await expect(refused).rejects.toBeInstanceOf(RateLimitedError);
    await expect(refused).rejects.toThrow(/too many recommendation cursor chains are open for this user; retry in \d+ s/);
    expect(((await refused.catch((error: unknown) => error)) as RateLimitedError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    const whole = await queries.recommendations(a, { limit: 10, cursor: "" }, CALLER);
    expect(whole.items.map((item) => item.user.relationId)).toEqual(["a0", "b00", "b01", "b02", "b03"]);
    // Both cursors of the first ranking still page it, as it was.
    expect(await rest(a, open.cursor)).toEqual(["b02", "b03", "b04"]);
    expect(await rest(a, again.cursor)).toEqual(["b02", "b03", "b04"]);
    // Another user has a snapshot of their own.
    const z = await idOf("z");
    expect((await queries.recommendations(z, { limit: 2, cursor: "" }, CALLER)).cursor).not.toBe("");
  });

  it("refuses any new chain past snapshotLimit with 10110, naming the service", async () => {
    if (name === "redis") {
      const client = createClient({ url: server.url });
      await client.connect();
      await client.flushAll();
      await client.close();
    } else {
      engine = await engines[name]!();
    }
    const { queries, idOf, rest } = await setUp(engine, { snapshotLimit: 1 });
    const a = await idOf("a");
    const open = await queries.recommendations(a, { limit: 2, cursor: "" }, CALLER);
    const refused = queries.recommendations(await idOf("z"), { limit: 2, cursor: "" }, CALLER);
    await expect(refused).rejects.toThrow(/too many recommendation cursor chains are open on this service/);
    expect(await rest(a, open.cursor)).toEqual(["b02", "b03", "b04"]);
  });

  it("refuses a key's new chain past snapshotsPerKey with 10110 naming the ApiKey, while other keys' new chains are served and no open chain is touched", async () => {
    if (name === "redis") {
      const client = createClient({ url: server.url });
      await client.connect();
      await client.flushAll();
      await client.close();
    } else {
      engine = await engines[name]!();
    }
    const { queries, idOf, rest } = await setUp(engine, { snapshotsPerKey: 1 });
    const [a, z] = [await idOf("a"), await idOf("z")];
    const [keyA, keyB] = [{ keyId: "key-a" }, { keyId: "key-b" }];
    const open = await queries.recommendations(a, { limit: 2, cursor: "" }, keyA);
    const refused = queries.recommendations(z, { limit: 2, cursor: "" }, keyA);
    await expect(refused).rejects.toBeInstanceOf(RateLimitedError);
    await expect(refused).rejects.toThrow(/too many recommendation cursor chains are open for this ApiKey; retry in \d+ s/);
    // Key B's new chain is served while key A's share is full.
    const other = await queries.recommendations(z, { limit: 2, cursor: "" }, keyB);
    expect(other.cursor).not.toBe("");
    // B, full in turn, is refused a's chain, whose snapshot A holds: the snapshot stays, and A's chain goes on.
    await expect(queries.recommendations(a, { limit: 2, cursor: "" }, keyB)).rejects.toThrow(/for this ApiKey/);
    expect(await rest(a, open.cursor)).toEqual(["b02", "b03", "b04"]);
    expect(await rest(z, other.cursor)).toHaveLength(3);
    // An answer that fits one page needs no snapshot, so a full key still gets it.
    expect((await queries.recommendations(z, { limit: 10, cursor: "" }, keyA)).cursor).toBe("");
  });
});
