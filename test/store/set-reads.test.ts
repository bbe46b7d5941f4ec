import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { respConnections } from "../../src/fast/store-connections.js";
import { connectRedis, type RedisConnection } from "../../src/store/redis/connection.js";
import { readIdSets } from "../../src/store/redis/set-reads.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";

/*
 * readIdSets reads many sets in parts of 10,000 keys, a few parts at a time: every set must come
 * back at its key's place, across parts and across the waves of parts.
 */

/** More keys than one wave of parts holds (8 × 10,000). */
const KEYS = 95_000;

describe.each([
  { name: "through node-redis", own: undefined },
  { name: "through the speed layer's reader", own: respConnections },
])("readIdSets, $name", ({ own }) => {
  let server: TestRedisServer;
  let redis: RedisConnection;
  beforeAll(async () => {
    server = await startRedisServer();
    redis = await connectRedis({ url: server.url }, own);
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
});
