import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { UserId } from "../../../src/domain/model.js";
import { createCachedStore } from "../../../src/store/cache/cached-store.js";
import { createMemoryStore } from "../../../src/store/memory/memory-store.js";
import { createRedisStore, type RedisStoreOptions } from "../../../src/store/redis/redis-store.js";
import { TRACKING_CLIENT_NAME } from "../../../src/store/redis/tracking.js";
import type { ChangedPart, ChangeNotifier, GraphStore } from "../../../src/store/store.js";
import { startRedisCluster, startRedisServer, type TestRedisCluster, type TestRedisServer } from "../../support/redis-servers.js";
import { addr, batch, user } from "../store-acceptance.js";

/*
 * The cache layer on every engine. A reader (the layer over its own engine, whose read calls are
 * counted) and a writer: on Redis a store of its own, as `relgraph ingest` in another process would
 * be; on the memory engine, the engine itself, written behind the layer's back. After a write the
 * reader is asked to catch up (ChangeNotifier.caughtUp), so that no test waits on a clock.
 */

type Engine = GraphStore & ChangeNotifier;

/** The read methods the layer caches: calls to them reaching the engine are counted. */
const CACHED_READS = new Set(["users", "relationIds", "userSetSizes", "userSetsBounded", "userSetIntersection", "assetHolderCounts", "assetHoldersBounded"]);

interface Call {
  method: string;
  /** The ids or assets asked for (the first array argument). */
  asked: unknown[];
}

/**
 * The engine, with each cached read recorded in `calls`; `hold`, when set, delays the answers of
 * that method (after the engine has answered) until it resolves.
 */
function counted(engine: Engine) {
  const calls: Call[] = [];
  const holds: Partial<Record<string, { answered: () => void; release: Promise<void> }>> = {};
  const proxy = new Proxy(engine, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== "function") return value;
      const name = String(property);
      if (!CACHED_READS.has(name)) return value.bind(target);
      return async (...args: unknown[]) => {
        calls.push({ method: name, asked: [...((args.find(Array.isArray) as unknown[] | undefined) ?? [])] });
        const answer = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        const hold = holds[name];
        if (hold) {
          hold.answered();
          await hold.release;
        }
        return answer;
      };
    },
  });
  /** Makes the next answers of `method` wait; resolves `answered` once the engine has answered one. */
  const hold = (method: string) => {
    let release: () => void = () => {};
    let answered: () => void = () => {};
    const engineAnswered = new Promise<void>((resolve) => (answered = resolve));
    holds[method] = { answered, release: new Promise<void>((resolve) => (release = resolve)) };
    return {
      engineAnswered,
      release: () => {
        delete holds[method];
        release();
      },
    };
  };
  /** The calls of cached reads that reached the engine since the last take. */
  const take = () => calls.splice(0, calls.length);
  return { proxy, take, hold };
}

interface Opened {
  reader: GraphStore & ChangeNotifier;
  writer: GraphStore;
  take: () => Call[];
  hold: ReturnType<typeof counted>["hold"];
  close(): Promise<void>;
}

interface EngineUnderTest {
  name: string;
  open(): Promise<Opened>;
  /** Kills the reader's tracking connections from outside (Redis engines only). */
  killTracking?(): Promise<void>;
  /** FLUSHALL on every node (Redis engines only). */
  flushAll?(): Promise<void>;
}

let server: TestRedisServer;
let cluster: TestRedisCluster;
beforeAll(async () => {
  [server, cluster] = await Promise.all([startRedisServer(), startRedisCluster()]);
});
afterAll(async () => {
  await Promise.all([server?.stop(), cluster?.stop()]);
});

async function onEachNode(urls: string[], command: (client: ReturnType<typeof createClient>) => Promise<unknown>): Promise<void> {
  await Promise.all(
    urls.map(async (url) => {
      const client = createClient({ url });
      await client.connect();
      try {
        await command(client);
      } finally {
        await client.close();
      }
    }),
  );
}

async function killTrackingOn(urls: string[]): Promise<void> {
  await onEachNode(urls, async (client) => {
    const list = await client.sendCommand<string>(["CLIENT", "LIST"]);
    const ids = list
      .split("\n")
      .filter((line) => line.includes(` name=${TRACKING_CLIENT_NAME} `))
      .map((line) => /\bid=(\d+)/.exec(line)?.[1] ?? "");
    expect(ids.length).toBeGreaterThan(0);
    for (const id of ids) await client.sendCommand(["CLIENT", "KILL", "ID", id]);
  });
}

function redisEngine(name: string, urls: () => string[], options: () => RedisStoreOptions): EngineUnderTest {
  return {
    name,
    async open() {
      await onEachNode(urls(), (client) => client.flushAll());
      const { proxy, take, hold } = counted(await createRedisStore(options()));
      const reader = createCachedStore(proxy);
      const writer = await createRedisStore(options());
      return { reader, writer, take, hold, close: async () => void (await Promise.all([reader.close(), writer.close()])) };
    },
    killTracking: () => killTrackingOn(urls()),
    flushAll: () => onEachNode(urls(), (client) => client.flushAll()),
  };
}

const engines: EngineUnderTest[] = [
  {
    name: "memory",
    async open() {
      const engine = createMemoryStore();
      const { proxy, take, hold } = counted(engine);
      const reader = createCachedStore(proxy);
      return { reader, writer: engine, take, hold, close: () => reader.close() };
    },
  },
  redisEngine(
    "redis",
    () => [server.url],
    () => ({ url: server.url }),
  ),
  redisEngine(
    "redis-cluster",
    () => cluster.nodes.map((node) => `redis://${node}`),
    () => ({ clusterNodes: cluster.nodes }),
  ),
];

/** Polls `read` until `done` holds of its answer; fails after a generous bound (no timing asserted). */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(value)} after 15 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const sorted = (sets: (UserId[] | null)[]) => sets.map((set) => set && [...set].sort((x, y) => x - y));
const friendOf = (a: string) => (b: string) => ({ a, b, description: "" });
const asked = (calls: Call[], method: string) => calls.filter((call) => call.method === method).map((call) => call.asked);

describe.each(engines)("the cache layer on $name", (engine) => {
  let opened: Opened | null = null;
  const open = async () => (opened = await engine.open());
  afterEach(async () => {
    await opened?.close();
    opened = null;
  });

  async function ids(store: GraphStore, relationIds: string[]): Promise<UserId[]> {
    return (await store.resolveRelationIds(relationIds)) as UserId[];
  }

  it("serves repeated reads from its caches, and after a write elsewhere reads again exactly what it changed", async () => {
    const { reader, writer, take } = await open();
    const K = addr("c1");
    await writer.write(
      batch({
        users: [user("ann", [addr("a1")]), user("ben", [addr("b1")]), user("cat", []), user("dan", [])],
        friends: [friendOf("ann")("ben"), friendOf("ann")("cat"), friendOf("ben")("cat")],
        interactions: [{ address: addr("a1"), contract: K }],
      }),
    );
    await reader.caughtUp();
    const [ann, ben, cat, dan] = await ids(reader, ["ann", "ben", "cat", "dan"]);
    const read = async () => ({
      users: (await reader.users([ann!, ben!])).map((u) => u?.name),
      relationIds: await reader.relationIds([ann!, ben!, cat!]),
      sizes: await reader.userSetSizes("friends", [ann!, ben!, cat!]),
      sets: sorted(await reader.userSetsBounded("friends", [ann!, ben!, cat!], 10)),
      holders: await reader.assetHoldersBounded("contracts", [K], 10),
      holderCounts: await reader.assetHolderCounts("contracts", [K]),
    });
    const before = {
      users: ["name of ann", "name of ben"],
      relationIds: ["ann", "ben", "cat"],
      sizes: [2, 2, 2],
      sets: sorted([[ben!, cat!], [ann!, cat!], [ann!, ben!]]),
      holders: [[ann]],
      holderCounts: [1],
    };
    expect(await read()).toEqual(before);
    take();
    expect(await read()).toEqual(before);
    expect(take()).toEqual([]);

    // ben is renamed and cat gains dan as a friend: ann, ann's and ben's sets and K's holders are untouched.
    await writer.write(batch({ users: [user("ben", [addr("b1")], { name: "Ben, renamed" })], friends: [friendOf("dan")("cat")] }));
    await reader.caughtUp();
    expect(await read()).toEqual({
      ...before,
      users: ["name of ann", "Ben, renamed"],
      sizes: [2, 2, 3],
      sets: sorted([[ben!, cat!], [ann!, cat!], [ann!, ben!, dan!]]),
    });
    const calls = take();
    expect(asked(calls, "users")).toEqual([[ben]]);
    expect(asked(calls, "relationIds")).toEqual([[ben]]);
    expect(asked(calls, "userSetSizes")).toEqual([[cat]]);
    expect(asked(calls, "userSetsBounded")).toEqual([[cat]]);
    expect(asked(calls, "assetHolderCounts")).toEqual([]);
  });

  it("keeps intersections longer than a page until one of their sets changes, and recomputes short ones", async () => {
    const { reader, writer, take } = await open();
    const members = Array.from({ length: 150 }, (_, i) => user(`m${i}`, []));
    const hubs = ["h1", "h2", "h3", "h4"];
    await writer.write(
      batch({
        users: [...hubs.map((hub) => user(hub, [])), user("s1", []), user("s2", []), ...members],
        friends: [...hubs.flatMap((hub) => members.map((m) => friendOf(hub)(m.relationId))), friendOf("s1")("m0"), friendOf("s2")("m0")],
      }),
    );
    await reader.caughtUp();
    const [h1, h2, h3, h4, s1, s2] = await ids(reader, [...hubs, "s1", "s2"]);
    const intersect = (a: UserId, b: UserId) => reader.userSetIntersection("friends", [a, b]);
    expect(await intersect(h1!, h2!)).toHaveLength(150);
    expect(await intersect(h2!, h1!)).toHaveLength(150);
    expect(await intersect(h3!, h4!)).toHaveLength(150);
    expect(await intersect(s1!, s2!)).toHaveLength(1);
    expect(await intersect(s1!, s2!)).toHaveLength(1);
    expect(asked(take(), "userSetIntersection")).toHaveLength(4);

    await writer.write(batch({ users: [user("m150", [])], friends: [friendOf("h1")("m150"), friendOf("h2")("m150")] }));
    await reader.caughtUp();
    expect(await intersect(h1!, h2!)).toHaveLength(151);
    expect(await intersect(h4!, h3!)).toHaveLength(150);
    expect(asked(take(), "userSetIntersection")).toEqual([[h1, h2]]);
  });

  it("does not keep a value loaded before a change of its key but answered after it", async () => {
    const { reader, writer, hold } = await open();
    await writer.write(batch({ users: [user("ann", []), user("ben", [])], friends: [friendOf("ann")("ben")] }));
    await reader.caughtUp();
    const [ann, ben] = await ids(reader, ["ann", "ben"]);

    const users = hold("users");
    const sizes = hold("userSetSizes");
    const pendingUser = reader.users([ann!, ben!]);
    const pendingSize = reader.userSetSizes("friends", [ann!, ben!]);
    await Promise.all([users.engineAnswered, sizes.engineAnswered]);
    // The engine has answered; the change comes in before the answers reach the cache.
    await writer.write(
      batch({ users: [user("ann", [], { name: "Ann, renamed" }), user("cat", [])], friends: [friendOf("cat")("ann")] }),
    );
    await reader.caughtUp();
    users.release();
    sizes.release();
    expect((await pendingUser).map((u) => u?.name)).toEqual(["name of ann", "name of ben"]);
    expect(await pendingSize).toEqual([1, 1]);
    expect((await reader.users([ann!, ben!])).map((u) => u?.name)).toEqual(["Ann, renamed", "name of ben"]);
    expect(await reader.userSetSizes("friends", [ann!, ben!])).toEqual([2, 1]);
  });

  // Only Redis has tracking connections to drop; the memory engine reports its changes in process.
  it.runIf(engine.killTracking)("leaves no stale answer when its tracking connections are dropped, or the database flushed", async () => {
    const { reader, writer } = await open();
    await writer.write(batch({ users: [user("ann", []), user("ben", [])], friends: [friendOf("ann")("ben")] }));
    await reader.caughtUp();
    const [ann, ben] = await ids(reader, ["ann", "ben"]);
    const name = async () => (await reader.users([ann!]))[0]?.name;
    expect(await name()).toBe("name of ann");
    expect(await reader.userSetSizes("friends", [ben!])).toEqual([1]);

    // Whatever is written while the reader has no tracking connection, it hears of from no one.
    await engine.killTracking!();
    await writer.write(batch({ users: [user("ann", [], { name: "Ann, while nobody tracked" })] }));
    expect(await eventually(name, (value) => value === "Ann, while nobody tracked")).toBe("Ann, while nobody tracked");
    // Tracking is back: cached again, and fresh again.
    await eventually(async () => reader.watching, (watching) => watching);
    await writer.write(batch({ users: [user("ann", [], { name: "Ann, tracked again" })] }));
    await reader.caughtUp();
    expect(await name()).toBe("Ann, tracked again");

    // A flush says no key's name: everything goes.
    await engine.flushAll!();
    await reader.caughtUp();
    expect(await reader.users([ann!])).toEqual([null]);
    expect(await reader.userSetSizes("friends", [ben!])).toEqual([0]);
  });
});

describe("the cache layer's own writes", () => {
  it("show in its next read: a write resolves only once the engine has reported what it changed", async () => {
    const engine = createMemoryStore();
    // An engine whose reports lag its writes, as Redis's pushes may lag a write's reply: they reach
    // the layer only when it asks the engine to catch up.
    const queued: (readonly ChangedPart[])[] = [];
    engine.onChange((parts) => queued.push(parts));
    let deliver: (parts: readonly ChangedPart[]) => void = () => {};
    const lagging: Engine = {
      ...engine,
      onChange(listener) {
        deliver = listener;
        return () => {};
      },
      async caughtUp() {
        for (const parts of queued.splice(0)) deliver(parts);
      },
    };
    const store = createCachedStore(lagging);
    await store.write(batch({ users: [user("ann", [])] }));
    const [ann] = (await store.resolveRelationIds(["ann"])) as UserId[];
    expect((await store.users([ann!]))[0]?.name).toBe("name of ann");
    await store.write(batch({ users: [user("ann", [], { name: "Ann, renamed" })] }));
    expect((await store.users([ann!]))[0]?.name).toBe("Ann, renamed");
    await store.close();
  });

  it("serve nothing from the caches while the engine cannot report changes", async () => {
    const engine = createMemoryStore();
    let watching = false;
    const { proxy, take } = counted({
      ...engine,
      get watching() {
        return watching;
      },
    });
    const store = createCachedStore(proxy);
    await store.write(batch({ users: [user("ann", [])], friends: [] }));
    const [ann] = (await store.resolveRelationIds(["ann"])) as UserId[];
    const read = async () => {
      await store.users([ann!]);
      await store.userSetSizes("friends", [ann!]);
    };
    await read();
    await read();
    expect(take()).toHaveLength(4);
    watching = true;
    await read();
    await read();
    expect(take()).toHaveLength(2);
    await store.close();
  });
});
