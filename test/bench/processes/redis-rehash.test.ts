import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { awaitKeyspaceRehash, isRehashing } from "../../../bench/processes/redis-rehash.js";
import { startRedisServer, type TestRedisServer } from "../../support/redis-servers.js";

/*
 * The bench waits for the keyspace rehash a large load leaves before it measures. A real redis-server
 * is made to resize its keyspace (just past 2^18 keys, so that the move takes seconds at the default
 * tick rate), and the wait must see the move, outlast it, and put the tick rate back.
 */

describe("awaitKeyspaceRehash", () => {
  let server: TestRedisServer;
  let redis: ReturnType<typeof createClient>;
  beforeAll(async () => {
    server = await startRedisServer(["--enable-debug-command", "local"]);
    redis = createClient({ url: server.url });
    await redis.connect();
  });
  afterAll(async () => {
    await redis?.close();
    await server?.stop();
  });

  const htstats = async () => redis.sendCommand<string>(["DEBUG", "HTSTATS", "0"]);

  it("returns at once when no rehash is under way", async () => {
    expect(isRehashing(await htstats())).toBe(false);
    expect(await awaitKeyspaceRehash(redis, 10_000)).toEqual({ seconds: 0, settled: true });
  });

  it("waits until the move to a resized keyspace has ended, then restores the tick rate", async () => {
    const keys = 2 ** 18 + 100;
    for (let first = 0; first < keys; first += 10_000) {
      const args: string[] = [];
      for (let k = first; k < Math.min(keys, first + 10_000); k++) args.push(`k${k}`, "v");
      await redis.sendCommand(["MSET", ...args]);
    }
    expect(isRehashing(await htstats())).toBe(true);
    const rehash = await awaitKeyspaceRehash(redis, 60_000);
    expect(rehash.settled).toBe(true);
    expect(rehash.seconds).toBeGreaterThan(0);
    expect(isRehashing(await htstats())).toBe(false);
    expect(await redis.sendCommand(["CONFIG", "GET", "hz"])).toEqual(["hz", "10"]);
    expect(await redis.dbSize()).toBe(keys);
  });

  it("reads only the keyspace's table, not the expiry table's", () => {
    const keyspace = "[Dictionary HT]\nHash table 0 stats (main hash table):\n table size: 4\n";
    const moving = "Hash table 1 stats (rehashing target):\n table size: 8\n";
    expect(isRehashing(`${keyspace}${moving}[Expires HT]\nHash table 0 stats (main hash table):\n`)).toBe(true);
    expect(isRehashing(`${keyspace}[Expires HT]\nHash table 0 stats (main hash table):\n${moving}`)).toBe(false);
  });
});
