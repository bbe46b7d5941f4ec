import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assetHoldersKey, CACHED_KEY_PREFIXES, changedPartOfKey, userKey, userSetKey } from "../../src/store/redis/keys.js";
import { createStore } from "../../src/store/index.js";
import { startTracking, TRACKING_CLIENT_NAME } from "../../src/store/redis/tracking.js";
import type { ChangedPart } from "../../src/store/store.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";

describe("changedPartOfKey", () => {
  it("names the part each cached key holds, the inverse of the key builders", () => {
    expect(changedPartOfKey(userKey(42))).toEqual({ part: "user", id: 42 });
    for (const kind of ["friends", "following", "followers"] as const) {
      expect(changedPartOfKey(userSetKey(kind, 7))).toEqual({ part: "userSet", kind, id: 7 });
    }
    for (const kind of ["contracts", "nfts"] as const) {
      expect(changedPartOfKey(assetHoldersKey(kind, "0xabc"))).toEqual({ part: "assetHolders", kind, asset: "0xabc" });
    }
    for (const key of [userKey(1), userSetKey("followers", 1), assetHoldersKey("nfts", "0x1")]) {
      expect(CACHED_KEY_PREFIXES.filter((prefix) => key.startsWith(prefix))).toHaveLength(1);
    }
  });

  it("names nothing for other keys, or ids no builder writes", () => {
    for (const key of ["rg:user-contracts:5", "rg:user:abc", "rg:user:05", "rg:user:", "rg:friends:1.5", "rg:release:3", "rg:idx:address", "other:user:1"]) {
      expect(changedPartOfKey(key)).toBeNull();
    }
  });
});

describe("tracking", () => {
  let a: TestRedisServer;
  let b: TestRedisServer;
  beforeAll(async () => {
    [a, b] = await Promise.all([startRedisServer(), startRedisServer()]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  async function on<T>(server: TestRedisServer, command: string[]): Promise<T> {
    const client = createClient({ url: server.url });
    await client.connect();
    try {
      return await client.sendCommand<T>(command);
    } finally {
      await client.close();
    }
  }

  async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`not within 15 s: ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  const trackedBy = async (server: TestRedisServer) =>
    (await on<string>(server, ["CLIENT", "LIST"])).split("\n").filter((line) => line.includes(` name=${TRACKING_CLIENT_NAME} `)).length;

  it("reports every write under the cached prefixes, by any client, and follows the nodes it is given", async () => {
    let nodes = [a.url];
    const tracking = await startTracking(() => nodes);
    const reported: ChangedPart[] = [];
    tracking.onChange((parts) => reported.push(...parts));
    try {
      expect(tracking.watching).toBe(true);
      await on(a, ["SET", userKey(5), "{}"]);
      await on(a, ["SET", "rg:release:5", "x"]);
      await on(a, ["SADD", userSetKey("friends", 6), "1"]);
      await tracking.caughtUp();
      expect(reported).toEqual([
        { part: "user", id: 5 },
        { part: "userSet", kind: "friends", id: 6 },
      ]);

      // A node joins (a new master): its writes are reported once it is tracked too.
      nodes = [a.url, b.url];
      let member = 0;
      await eventually(async () => {
        // A new member each time: adding one already there changes nothing, and is not reported.
        await on(b, ["SADD", assetHoldersKey("nfts", "0xabc"), String(++member)]);
        await tracking.caughtUp();
        return reported.some((part) => part.part === "assetHolders");
      }, "a write on the joining node reported");
      expect(reported).toContainEqual({ part: "everything" });

      // A node leaves: its connection goes.
      nodes = [b.url];
      await eventually(async () => (await trackedBy(a)) === 0, "the left node untracked");
      expect(await trackedBy(b)).toBe(1);
      expect(tracking.watching).toBe(true);
    } finally {
      await tracking.close();
    }
    await eventually(async () => (await trackedBy(b)) === 0, "tracking connections closed");
  });
});

describe("stores for writers", () => {
  let server: TestRedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** How many tracking connections the server has. */
  async function trackers(): Promise<number> {
    const client = createClient({ url: server.url });
    await client.connect();
    try {
      const list = await client.sendCommand<string>(["CLIENT", "LIST"]);
      return list.split("\n").filter((line) => line.includes(`name=${TRACKING_CLIENT_NAME}`)).length;
    } finally {
      await client.close();
    }
  }

  it("open no tracking connection without read caches (ingest, follow), and one with them (serve)", async () => {
    const config = { redisUrl: server.url, redisClusterNodes: [] };
    const writer = await createStore(config, { readCaches: false });
    try {
      expect(await trackers()).toBe(0);
      expect(writer.watching).toBe(false);
    } finally {
      await writer.close();
    }
    const reader = await createStore(config);
    try {
      expect(await trackers()).toBe(1);
    } finally {
      await reader.close();
    }
  });
});
