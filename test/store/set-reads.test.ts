import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectRedis, type RedisConnection } from "../../src/store/redis/connection.js";
import { readIdSets } from "../../src/store/redis/set-reads.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";

/*
 * readIdSets reads many sets in parts of 10,000 keys, a few parts at a time: every set must come
 * back at its key's place, across parts and across the waves of parts. Each set's first SSCAN page
 * is read in that round trip; a set too large for one page is scanned to its end.
 */

/** More keys than one wave of parts holds (8 × 10,000). */
const KEYS = 95_000;

describe.each([
  { name: "through node-redis", fastPaths: false },
  { name: "through the engine's own RESP reader", fastPaths: true },
])("readIdSets, $name", ({ fastPaths }) => {
  let server: TestRedisServer;
  let redis: RedisConnection;
  beforeAll(async () => {
    server = await startRedisServer();
    redis = await connectRedis({ url: server.url }, fastPaths);
    // Set k holds k and k + 1, but every seventh set is missing (empty).
    const commands = Array.from({ length: KEYS }, (_, k) => k)
      .filter((k) => k % 7 !== 0)
      .map((k) => ["SADD", `set:${k}`, String(k), String(k + 1)]);
    await redis.writeAll(commands);
  });
  afterAll(async () => {
    await redis?.close();
    await server?.stop();
  });

  it("returns each set at its key's place, over several waves of parts", async () => {
    // Keys in a scrambled order, so that a part or a wave out of place shows.
    const order = Array.from({ length: KEYS }, (_, k) => (k * 7_919) % KEYS);
    const sets = await readIdSets(redis, order.map((k) => `set:${k}`));
    expect(sets).toHaveLength(KEYS);
    const wrong = order.filter((k, i) => JSON.stringify([...sets[i]!].sort((x, y) => x - y)) !== JSON.stringify(k % 7 === 0 ? [] : [k, k + 1]));
    expect(wrong).toEqual([]);
  });

  it("reads whole the sets too large for their first page, beside small ones, and misses none", async () => {
    // 60,000 members: a hashtable set, whose first page (COUNT 10,000) holds a part of it only; its
    // members are large numbers, so that the page's reply spans many socket reads.
    const large = Array.from({ length: 60_000 }, (_, k) => 9_000_000_000 + 3 * k);
    for (let at = 0; at < large.length; at += 1_000) await redis.writeAll([["SADD", "set:large", ...large.slice(at, at + 1_000).map(String)]]);
    const sets = await readIdSets(redis, ["set:1", "set:large", "set:absent", "set:2", "set:large"]);
    expect(sets.map((set) => set.length)).toEqual([2, large.length, 0, 2, large.length]);
    expect([...sets[1]!].sort((x, y) => x - y)).toEqual(large);
    expect([...sets[4]!].sort((x, y) => x - y)).toEqual(large);
    expect(sets[3]!.sort()).toEqual([2, 3]);
  });
});
