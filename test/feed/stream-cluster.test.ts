import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectFeedStream } from "../../src/feed/stream.js";
import { startFaultyCluster } from "../support/redis-cluster-faults.js";
import { startSilentSeed } from "../support/silent-seed.js";
import { startRedisCluster, type TestRedisCluster } from "../support/redis-servers.js";

/*
 * The feed's stream on a Redis Cluster whose nodes hang (SIGSTOP, or a server that takes connections
 * and says nothing): the stream opens through the seeds that answer, and no stream command waits on a
 * hung node for ever. The consumer reads and acknowledges under the store's write lease, which it
 * renews while it waits: one command waiting for ever would stop every writer of the store.
 */

/** Far above a command's deadline, far below for ever. */
const LATE_MS = 15_000;

let cluster: TestRedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

function settledWithin<T>(work: Promise<T>, ms: number): Promise<"answered" | "failed" | "still waiting"> {
  return Promise.race([
    work.then(
      () => "answered" as const,
      () => "failed" as const,
    ),
    new Promise<"still waiting">((resolve) => setTimeout(() => resolve("still waiting"), ms).unref()),
  ]);
}

describe("the feed's stream on a Redis Cluster", () => {
  it("opens through a seed that answers when others accept connections and never answer (a paused node)", async () => {
    const silent = await startSilentSeed();
    const seeds = [silent.address, silent.address, silent.address, cluster.nodes[0]!];
    try {
      // node-redis tries its seeds from a random one on: several starts, so that a silent one comes first.
      for (let start = 0; start < 3; start++) {
        const opened = connectFeedStream({ redis: { clusterNodes: seeds }, key: "feed:seeds", group: "relgraph", consumer: "c" });
        expect(await settledWithin(opened, LATE_MS), `start ${start}`).toBe("answered");
        const stream = await opened;
        try {
          await stream.ensureGroup("0");
          expect(await stream.read(1, 0)).toEqual([]);
        } finally {
          await stream.close();
        }
      }
    } finally {
      await silent.close();
    }
  }, 120_000);

  it("fails a read, a blocking read and an acknowledgement on the stream's master while it hangs, and works once it answers again", async () => {
    const key = "feed:hung";
    const stream = await connectFeedStream({ redis: { clusterNodes: cluster.nodes }, key, group: "relgraph", consumer: "c" });
    let paused: number | null = null;
    try {
      await stream.ensureGroup("0");
      paused = cluster.pids[await holderOf(key)]!;
      process.kill(paused, "SIGSTOP");
      expect(await settledWithin(stream.read(1, 0), LATE_MS), "read").toBe("failed");
      expect(await settledWithin(stream.read(1, 1_000), LATE_MS), "blocking read").toBe("failed");
      expect(await settledWithin(stream.ack(["1-1"]), LATE_MS), "acknowledgement").toBe("failed");
      process.kill(paused, "SIGCONT");
      paused = null;
      await expect.poll(() => stream.read(1, 0).then(() => "answered", () => "failed"), { timeout: LATE_MS, interval: 200 }).toBe("answered");
    } finally {
      if (paused !== null) process.kill(paused, "SIGCONT");
      await stream.close();
    }
  }, 120_000);

  it("reads from the stream's master again once it is a master again, after it was killed while the stream was opened", async () => {
    const own = await startFaultyCluster();
    try {
      const key = "feed:comeback";
      const holder = await own.masterOfKey(key);
      const topology = await own.topology();
      const replica = topology.find((node) => node.role === "replica" && node.masterId === topology.find((master) => master.address === holder)!.id)!;
      await own.kill(holder);
      // Opened before the cluster fails the master over (2 s): the start finds it named and dead.
      const stream = await connectFeedStream({ redis: { clusterNodes: own.nodes }, key, group: "relgraph", consumer: "c" });
      const outcome = () =>
        stream.read(1, 0).then(
          () => "answered",
          (error: Error) => `failed: ${error.message}`,
        );
      try {
        await expect.poll(() => stream.ensureGroup("0").then(() => "answered", () => "failed"), { timeout: LATE_MS * 2, interval: 200 }).toBe("answered");
        // Back as its replica's replica, then made master again.
        await own.restart(holder);
        await own.settled();
        await own.replicated();
        await own.command(holder, ["CLUSTER", "FAILOVER"]);
        await expect.poll(() => own.masterOfKey(key), { timeout: LATE_MS * 2, interval: 200 }).toBe(holder);
        expect(await own.masterOfKey(key)).not.toBe(replica.address);
        await expect.poll(outcome, { timeout: LATE_MS * 2, interval: 200 }).toBe("answered");
      } finally {
        await stream.close();
      }
    } finally {
      await own.stop();
    }
  }, 180_000);
});

/** The index of the master that holds `key` (the others answer MOVED). */
async function holderOf(key: string): Promise<number> {
  for (const [i, node] of cluster.nodes.entries()) {
    const client = createClient({ url: `redis://${node}` });
    await client.connect();
    try {
      if (((await client.sendCommand(["EXISTS", key]).catch(() => null)) as unknown) === 1) return i;
    } finally {
      client.destroy();
    }
  }
  throw new Error(`no master holds ${key}`);
}
