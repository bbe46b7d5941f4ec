import { createClient, createCluster } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectRedis, type RedisConnection } from "../../src/store/redis/connection.js";
import { WRITE_LEASE, WRITE_LEASE_GENERATION } from "../../src/store/redis/keys.js";
import { withWriteLease } from "../../src/store/redis/write-lease.js";
import { startRedisCluster, startRedisServer, type TestRedisCluster, type TestRedisServer } from "../support/redis-servers.js";

/** Short enough that renewals (every ttl/3) tick several times while a test waits. */
const TTL_MS = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What a test does to the lease's keys from outside, as another process would. */
interface Outside {
  del(key: string): Promise<unknown>;
  incr(key: string): Promise<unknown>;
  get(key: string): Promise<string | null>;
}

function leaseCases(connect: () => Promise<{ redis: RedisConnection; outside: Outside; close: () => Promise<void> }>) {
  it("a lease that expired while its holder stalled, and that nobody took, is taken again and the work succeeds", async () => {
    const { redis, outside, close } = await connect();
    try {
      const result = await withWriteLease(
        redis,
        async () => {
          const token = await outside.get(WRITE_LEASE);
          // The lease runs out while this writer is stalled: the key is gone, nobody else took it.
          await outside.del(WRITE_LEASE);
          await sleep(TTL_MS);
          expect(await outside.get(WRITE_LEASE)).toBe(token);
          return "done";
        },
        { ttlMs: TTL_MS },
      );
      expect(result).toBe("done");
      expect(await outside.get(WRITE_LEASE)).toBeNull();
    } finally {
      await close();
    }
  });

  it("a lease another writer took and released meanwhile is lost, and the work fails", async () => {
    const { redis, outside, close } = await connect();
    try {
      const work = withWriteLease(
        redis,
        async () => {
          // Another writer takes the expired lease (a new generation), writes, and releases it.
          await outside.del(WRITE_LEASE);
          await outside.incr(WRITE_LEASE_GENERATION);
          await sleep(TTL_MS);
          expect(await outside.get(WRITE_LEASE)).toBeNull();
        },
        { ttlMs: TTL_MS },
      );
      await expect(work).rejects.toThrow(/the write lease was lost/);
    } finally {
      await close();
    }
  });

  it("one writer at a time: the second waits until the first releases", async () => {
    const { redis, close } = await connect();
    try {
      const order: string[] = [];
      const first = withWriteLease(redis, async () => {
        order.push("first in");
        await sleep(150);
        order.push("first out");
      });
      await sleep(20);
      const second = withWriteLease(redis, async () => void order.push("second"));
      await Promise.all([first, second]);
      expect(order).toEqual(["first in", "first out", "second"]);
    } finally {
      await close();
    }
  });

  it("writers take turns: one waiting gets the lease before its holder, done, can take it again", async () => {
    const { redis, close } = await connect();
    try {
      const order: string[] = [];
      // A busy change feed: unit after unit, each taking the lease again as soon as it let it go.
      const feed = (async () => {
        for (let unit = 1; unit <= 3; unit++) {
          await withWriteLease(redis, async () => {
            order.push(`unit ${unit}`);
            await sleep(200);
          });
        }
      })();
      await sleep(50);
      const ingest = withWriteLease(redis, async () => void order.push("ingest"));
      await Promise.all([feed, ingest]);
      expect(order).toEqual(["unit 1", "ingest", "unit 2", "unit 3"]);
    } finally {
      await close();
    }
  });
}

describe("the write lease on standalone Redis", () => {
  let server: TestRedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });
  leaseCases(async () => {
    const redis = await connectRedis({ url: server.url });
    const outside = createClient({ url: server.url });
    await outside.connect();
    return { redis, outside, close: async () => void (await Promise.all([redis.close(), outside.close()])) };
  });
});

describe("the write lease on Redis Cluster", () => {
  let cluster: TestRedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  leaseCases(async () => {
    const redis = await connectRedis({ clusterNodes: cluster.nodes });
    const outside = createCluster({ rootNodes: cluster.nodes.map((node) => ({ url: `redis://${node}` })) });
    await outside.connect();
    return { redis, outside, close: async () => void (await Promise.all([redis.close(), outside.close()])) };
  });
});
