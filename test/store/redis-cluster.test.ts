import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../src/domain/errors.js";
import type { UserId } from "../../src/domain/model.js";
import { createStore } from "../../src/store/index.js";
import { addressAssetsKey, userSetKey } from "../../src/store/redis/keys.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import { createCachedStore } from "../../src/store/cache/cached-store.js";
import type { ChangeNotifier, GraphStore } from "../../src/store/store.js";
import { startRedisCluster, startRedisServer, type TestRedisCluster } from "../support/redis-servers.js";
import { startSilentSeed } from "../support/silent-seed.js";
import { addr, batch, defineStoreAcceptance, fixture } from "./store-acceptance.js";

let cluster: TestRedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

/** Runs one command on every master; FLUSHALL only empties the node it is sent to. */
async function onEveryNode(nodes: string[], args: string[]): Promise<unknown[]> {
  return Promise.all(
    nodes.map(async (node) => {
      const client = createClient({ url: `redis://${node}` });
      await client.connect();
      try {
        return await client.sendCommand(args);
      } finally {
        await client.close();
      }
    }),
  );
}

for (const cached of [false, true]) {
  // Bare, as the engine is; and behind the cache layer, as createStore serves it (test/store/cache/).
  const wrap = (store: GraphStore & ChangeNotifier) => (cached ? createCachedStore(store) : store);
  describe(cached ? "behind the cache layer" : "bare", () => {
    defineStoreAcceptance({
      engine: "redis-cluster",
      async createEmpty() {
        await onEveryNode(cluster.nodes, ["FLUSHALL"]);
        return wrap(await createRedisStore({ clusterNodes: cluster.nodes }));
      },
      async createDisposable() {
        const own = await startRedisCluster();
        return { store: wrap(await createRedisStore({ clusterNodes: own.nodes })), stopBackend: own.stop };
      },
    });
  });
}

describe("redis-cluster engine", () => {
  it("is chosen by createStore over a URL when cluster nodes are configured", async () => {
    const store = await createStore({ redisUrl: "redis://127.0.0.1:1", redisClusterNodes: cluster.nodes });
    try {
      expect(store.engine).toBe("redis-cluster");
      await store.ping();
    } finally {
      await store.close();
    }
  });

  it("fails promptly with StoreUnavailableError when no seed node answers", async () => {
    // A port that just had a server on it is a port nothing answers on.
    const gone = await startRedisServer();
    await gone.stop();
    const error = await createRedisStore({ clusterNodes: [`127.0.0.1:${gone.port}`] }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).cause).toBeDefined();
  });

  it("starts through a seed that answers when another accepts connections and never answers (a paused node)", async () => {
    const silent = await startSilentSeed();
    const seeds = [silent.address, silent.address, silent.address, cluster.nodes[0]!];
    try {
      // node-redis tries its seeds from a random one on: several starts, so that a silent one comes first.
      for (let start = 0; start < 3; start++) {
        const opened = createRedisStore({ clusterNodes: seeds }, { tracking: false });
        const late = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`start ${start} did not connect within 15 s`)), 15_000).unref());
        const store = await Promise.race([opened, late]);
        try {
          await store.ping();
        } finally {
          await store.close();
        }
      }
    } finally {
      await silent.close();
    }
  }, 120_000);

  it("leaves no connection open when its start fails (a master down, with no replica to take over)", async () => {
    const own = await startRedisCluster();
    try {
      process.kill(own.pids[2]!, "SIGKILL");
      const live = own.nodes.slice(0, 2);
      const connections = async () => ((await onEveryNode(live, ["CLIENT", "LIST"])) as string[]).reduce((n, list) => n + list.trim().split("\n").length, 0);
      const before = await connections();
      // Through one seed: node-redis's second seed would find the down master's connection made and closed, and start.
      const error = await createRedisStore({ clusterNodes: [live[0]!] }, { tracking: false }).then(
        async (store) => {
          await store.close();
          return null;
        },
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StoreUnavailableError);
      // Left open, they would keep a failed `relgraph ingest` from exiting.
      await expect.poll(connections, { timeout: 3_000 }).toBe(before);
    } finally {
      await own.stop();
    }
  }, 60_000);

  it("intersects sets whose keys live in different slots", async () => {
    await onEveryNode(cluster.nodes, ["FLUSHALL"]);
    const store = await createRedisStore({ clusterNodes: cluster.nodes });
    try {
      await store.write(fixture());
      const [u1, u2, u3] = (await store.resolveRelationIds(["u1", "u2", "u3"])) as UserId[];
      const keys = [userSetKey("friends", u1!), userSetKey("friends", u2!), userSetKey("friends", u3!)];
      const contractKeys = [addressAssetsKey("contracts", addr("a1")), addressAssetsKey("contracts", addr("b1"))];
      const [first] = cluster.nodes;
      const client = createClient({ url: `redis://${first}` });
      await client.connect();
      try {
        const slots = await Promise.all([...keys, ...contractKeys].map((key) => client.sendCommand(["CLUSTER", "KEYSLOT", key])));
        expect(new Set(slots.slice(0, 3)).size).toBe(3);
        expect(slots[3]).not.toBe(slots[4]);
        // The server itself refuses to intersect them: that is why the engine intersects client-side.
        await expect(client.sendCommand(["SINTER", ...keys])).rejects.toThrow(/CROSSSLOT|MOVED/);
      } finally {
        await client.close();
      }
      expect(await store.userSetIntersection("friends", [u1!, u2!, u3!])).toHaveLength(1);
      expect(await store.contractIntersection([addr("a1"), addr("b1")])).toEqual([addr("c0001")]);
    } finally {
      await store.close();
    }
  });

  it("spreads users over every node", async () => {
    await onEveryNode(cluster.nodes, ["FLUSHALL"]);
    const store = await createRedisStore({ clusterNodes: cluster.nodes });
    try {
      await store.write(fixture());
      await store.write(batch({ follows: [{ from: "u6", to: "u1" }] }));
      const sizes = (await onEveryNode(cluster.nodes, ["DBSIZE"])) as number[];
      for (const size of sizes) expect(size).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });
});
