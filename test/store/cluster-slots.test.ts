import { afterEach, describe, expect, it } from "vitest";
import { connectCluster } from "../../src/store/redis/connection.js";
import { parseClusterNodes, startFaultyCluster, type ClusterNodeInfo, type FaultyCluster } from "../support/redis-cluster-faults.js";

/*
 * The slot watch (src/store/redis/cluster-slots.ts) keeps following the cluster when a node hangs
 * (SIGSTOP: connections are taken, nothing is answered) in the middle of a rediscovery. node-redis
 * runs one rediscovery at a time and waits on it without limit: one held by the hung node would
 * hold every later one, and the client would never learn of the replica that replaced it.
 */

/** The store's and the feed's socket policy, once connected: reconnect for ever. */
const SOCKET = { connectTimeout: 2_000, reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 2_000) };
/** Generous: failure detection (2 s), an election, and the watch's steady refresh (5 s) take seconds. */
const FOLLOWED_WITHIN_MS = 60_000;

let own: FaultyCluster | undefined;
const paused: number[] = [];
afterEach(async () => {
  for (const pid of paused.splice(0)) process.kill(pid, "SIGCONT");
  await own?.stop();
  own = undefined;
});

/** The cluster as a node that is not `except` sees it (a paused node would never answer). */
async function topologyFrom(cluster: FaultyCluster, except: readonly string[]): Promise<ClusterNodeInfo[]> {
  const asked = cluster.nodes.find((address) => !except.includes(address) && cluster.pid(address) !== null)!;
  return parseClusterNodes(await cluster.command<string>(asked, ["CLUSTER", "NODES"]));
}

function pause(cluster: FaultyCluster, address: string): void {
  const pid = cluster.pid(address)!;
  process.kill(pid, "SIGSTOP");
  paused.push(pid);
}

describe("the slot watch, when a node hangs during a rediscovery", () => {
  it("follows the failover of a master that hangs while it is asked for the slot map", async () => {
    own = await startFaultyCluster();
    const { cluster: client, slots, close } = await connectCluster(own.nodes, SOCKET);
    try {
      const hung = `${client.masters[0]!.host}:${client.masters[0]!.port}`;
      const topology = await topologyFrom(own, [hung]);
      const master = topology.find((node) => node.address === hung)!;
      const replica = topology.find((node) => node.role === "replica" && node.masterId === master.id)!;
      const { key, slot } = await keyOf(own, replica.address, master);
      pause(own, hung);
      // Its connection still looks ready: this rediscovery asks it (before the fix, always the first master).
      void slots.refresh();
      await expect.poll(() => client.slots[slot]?.master.address, { timeout: FOLLOWED_WITHIN_MS, interval: 200 }).toBe(replica.address);
      await expect(client.sendCommand(key, false, ["SET", key, "answered"])).resolves.toBe("OK");
    } finally {
      await close();
    }
  }, 120_000);

  it("follows a change after a rediscovery found a new master that hangs and waited to connect to it", async () => {
    own = await startFaultyCluster();
    const { cluster: client, slots, close } = await connectCluster(own.nodes, SOCKET);
    try {
      const first = `${client.masters[0]!.host}:${client.masters[0]!.port}`;
      const topology = await topologyFrom(own, []);
      const master = topology.find((node) => node.address === first)!;
      const replica = topology.find((node) => node.role === "replica" && node.masterId === master.id)!;
      const { key, slot } = await keyOf(own, first, master);
      // The watch's steady refresh stays away for seconds: the client must not meet the replica as a master first.
      await slots.refresh();
      await own.command(replica.address, ["CLUSTER", "FAILOVER"]);
      await expect
        .poll(async () => (await topologyFrom(own!, [])).find((node) => node.address === replica.address)?.slots.length ?? 0, { timeout: 20_000, interval: 50 })
        .toBeGreaterThan(0);
      pause(own, replica.address);
      // Finds the replica a master, new to the client, and connects to it: it never answers.
      void slots.refresh();
      await expect.poll(() => client.slots[slot]?.master.address, { timeout: 10_000, interval: 50 }).toBe(replica.address);
      // Silent, it is failed over to its own replica now, the first master.
      await expect.poll(() => client.slots[slot]?.master.address, { timeout: FOLLOWED_WITHIN_MS, interval: 200 }).toBe(first);
      await expect(client.sendCommand(key, false, ["SET", key, "answered"])).resolves.toBe("OK");
    } finally {
      await close();
    }
  }, 120_000);
});

/** A key served by `master`, and its slot, found by asking `address` the slot of key after key. */
async function keyOf(cluster: FaultyCluster, address: string, master: ClusterNodeInfo): Promise<{ key: string; slot: number }> {
  for (let i = 0; ; i++) {
    const key = `watch:${i}`;
    const slot = await cluster.command<number>(address, ["CLUSTER", "KEYSLOT", key]);
    if (master.slots.some(([from, to]) => from <= slot && slot <= to)) return { key, slot };
  }
}
