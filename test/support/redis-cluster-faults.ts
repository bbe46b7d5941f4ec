import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createClient } from "redis";

/*
 * A Redis Cluster that can fail: three masters, each with one replica, `cluster-node-timeout 2000`,
 * on free loopback ports, every node a redis-server process of the test's own, in one temporary
 * directory. A node can be killed with SIGKILL and started again on its port with its own nodes.conf
 * (it rejoins as whatever the cluster decides, a replica once its slots have moved on); a replica can
 * be told to take over (CLUSTER FAILOVER); slots can be moved live (redis-cli --cluster reshard).
 * stop() kills every node by pid and removes the directory.
 */

const run = promisify(execFile);
const STARTUP_TIMEOUT_MS = 30_000;
/** The cluster's failure detection: a master silent this long is failed over. */
export const CLUSTER_NODE_TIMEOUT_MS = 2_000;

/** One node as CLUSTER NODES describes it. */
export interface ClusterNodeInfo {
  id: string;
  /** 127.0.0.1:PORT */
  address: string;
  role: "master" | "replica";
  /** For a replica, the id of its master. */
  masterId: string | null;
  /** fail or pfail flags. */
  failing: boolean;
  /** Slot ranges served, as [from, to]. */
  slots: [number, number][];
}

/** A 3-master, 3-replica cluster started for a test. */
export interface FaultyCluster {
  /** host:port of every node, masters first as created. */
  readonly nodes: string[];
  /** The pid of a node's current process (null while it is killed). */
  pid(address: string): number | null;
  /** The cluster as a live node sees it. */
  topology(): Promise<ClusterNodeInfo[]>;
  /** The master serving `key` now, as a live node sees it. */
  masterOfKey(key: string): Promise<string>;
  /** SIGKILLs a node and waits for its exit. */
  kill(address: string): Promise<void>;
  /** Starts a killed node again on its port, with its nodes.conf. */
  restart(address: string): Promise<void>;
  /** Sends one command to one node. */
  command<T = unknown>(address: string, args: string[]): Promise<T>;
  /**
   * Waits until every live node reports cluster_state:ok, every slot is served by a live master,
   * and the live nodes agree on it.
   */
  settled(): Promise<void>;
  /** Waits until every live replica has every write its master has (replication offsets equal). */
  replicated(): Promise<void>;
  /** Kills every node and removes the directory. Idempotent. */
  stop(): Promise<void>;
}

interface NodeProcess {
  port: number;
  child: ChildProcess | null;
  exited: Promise<void>;
}

/** Starts the cluster and waits until every replica is in sync with its master. */
export async function startFaultyCluster(): Promise<FaultyCluster> {
  let lastError: unknown;
  // On a loaded machine a join has failed now and then; a fresh start is cheaper than a failed suite.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce();
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

async function startOnce(): Promise<FaultyCluster> {
  const dir = await mkdtemp(join(tmpdir(), "relgraph-faulty-cluster-"));
  const nodes = new Map<string, NodeProcess>();
  let stopped: Promise<void> | null = null;
  const stop = () =>
    (stopped ??= (async () => {
      await Promise.all([...nodes.values()].map((node) => killNode(node)));
      await rm(dir, { recursive: true, force: true });
    })());
  const launch = async (port: number): Promise<NodeProcess> => {
    const child = spawn(
      "redis-server",
      [
        "--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no",
        "--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`,
        "--cluster-node-timeout", String(CLUSTER_NODE_TIMEOUT_MS),
      ],
      { stdio: "ignore" },
    );
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    const node = { port, child, exited };
    await waitFor(`redis-server on ${port}`, async () => (await tryCommand<string>(`127.0.0.1:${port}`, ["INFO", "server"]))?.includes(`process_id:${child.pid}\r`) ?? false, exited);
    return node;
  };
  try {
    for (const port of await freeClusterPorts(6)) nodes.set(`127.0.0.1:${port}`, await launch(port));
    const addresses = [...nodes.keys()];
    await run("redis-cli", ["--cluster", "create", ...addresses, "--cluster-replicas", "1", "--cluster-yes"], { timeout: STARTUP_TIMEOUT_MS }).catch(
      (error: Error & { stdout?: string }) => {
        throw new Error(`${error.message}\n${error.stdout ?? ""}`);
      },
    );
    const cluster: FaultyCluster = {
      nodes: addresses,
      pid: (address) => nodes.get(address)?.child?.pid ?? null,
      topology: async () => parseClusterNodes(await anyLive(nodes, ["CLUSTER", "NODES"])),
      async masterOfKey(key) {
        const slot = Number(await anyLive(nodes, ["CLUSTER", "KEYSLOT", key]));
        const topology = await cluster.topology();
        const master = topology.find((node) => node.role === "master" && !node.failing && node.slots.some(([from, to]) => from <= slot && slot <= to));
        if (!master) throw new Error(`no live master serves slot ${slot}`);
        return master.address;
      },
      async kill(address) {
        const node = nodes.get(address);
        if (!node) throw new Error(`${address} is no node of this cluster`);
        await killNode(node);
      },
      async restart(address) {
        const node = nodes.get(address);
        if (!node || node.child !== null) throw new Error(`${address} is not a killed node of this cluster`);
        nodes.set(address, await launch(node.port));
      },
      command: (address, args) => command(address, args),
      async settled() {
        await waitFor("the cluster settled", async () => {
          const live = [...nodes.entries()].filter(([, node]) => node.child !== null).map(([address]) => address);
          const views = await Promise.all(live.map((address) => tryCommand<string>(address, ["CLUSTER", "NODES"])));
          const infos = await Promise.all(live.map((address) => tryCommand<string>(address, ["CLUSTER", "INFO"])));
          if (infos.some((info) => !info?.includes("cluster_state:ok"))) return false;
          if (views.some((view) => view === null)) return false;
          const parsed = views.map((view) => parseClusterNodes(view!));
          const owners = (topology: ClusterNodeInfo[]) =>
            topology
              .filter((node) => node.role === "master" && node.slots.length > 0)
              .map((node) => `${node.address}:${JSON.stringify(node.slots)}:${node.failing}`)
              .sort()
              .join(",");
          const first = owners(parsed[0]!);
          if (parsed.some((topology) => owners(topology) !== first)) return false;
          const masters = parsed[0]!.filter((node) => node.role === "master" && node.slots.length > 0);
          const covered = masters.reduce((sum, node) => sum + node.slots.reduce((n, [from, to]) => n + to - from + 1, 0), 0);
          return covered === 16_384 && masters.every((node) => !node.failing && live.includes(node.address));
        });
      },
      async replicated() {
        await waitFor("every replica caught up", async () => {
          const topology = await cluster.topology();
          const live = (address: string) => nodes.get(address)?.child != null;
          const masters = topology.filter((node) => node.role === "master" && !node.failing && live(node.address));
          const infos = await Promise.all(masters.map((node) => tryCommand<string>(node.address, ["INFO", "replication"])));
          return masters.every((master, i) => {
            const info = infos[i];
            if (info == null) return false;
            // A master whose replica was killed has none to wait for.
            const expected = topology.filter((node) => node.role === "replica" && node.masterId === master.id && live(node.address)).length;
            const offset = /master_repl_offset:(\d+)/.exec(info)?.[1];
            // Under a steady flow of writes the offsets are seldom equal at one instant: a replica
            // online and within a small window of its master is caught up.
            const replicas = [...info.matchAll(/slave\d+:.*?state=(\w+),offset=(\d+)/g)];
            return replicas.length >= expected && replicas.every(([, state, at]) => state === "online" && Number(offset) - Number(at) < 1_000_000);
          });
        });
      },
      stop,
    };
    await cluster.settled();
    // Every replica attached and in sync, so that a failover has a replica to promote.
    await waitFor("every replica in sync", async () => {
      const topology = await cluster.topology();
      const replicas = topology.filter((node) => node.role === "replica");
      if (replicas.length !== 3) return false;
      const links = await Promise.all(replicas.map((node) => tryCommand<string>(node.address, ["INFO", "replication"])));
      return links.every((info) => info?.includes("master_link_status:up") ?? false);
    });
    return cluster;
  } catch (error) {
    await stop();
    throw error;
  }
}

async function killNode(node: NodeProcess): Promise<void> {
  const child = node.child;
  if (child === null) return;
  node.child = null;
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, "SIGKILL");
  await node.exited;
}

/** CLUSTER NODES' text, parsed. */
export function parseClusterNodes(text: string): ClusterNodeInfo[] {
  return text
    .trim()
    .split("\n")
    .filter((line) => line.trim().length > 0)
    .map((line) => {
      const [id, address, flags, master, , , , , ...slots] = line.trim().split(" ");
      const flagSet = new Set(flags!.split(","));
      return {
        id: id!,
        address: address!.split("@")[0]!,
        role: flagSet.has("master") ? ("master" as const) : ("replica" as const),
        masterId: master === "-" ? null : master!,
        failing: flagSet.has("fail") || flagSet.has("fail?"),
        slots: slots
          .filter((range) => !range.startsWith("["))
          .map((range) => {
            const [from, to] = range.split("-").map(Number);
            return [from!, to ?? from!] as [number, number];
          }),
      };
    });
}

/** Sends a command to the first live node that answers. */
async function anyLive(nodes: Map<string, NodeProcess>, args: string[]): Promise<string> {
  for (const [address, node] of nodes) {
    if (node.child === null) continue;
    const reply = await tryCommand<string>(address, args);
    if (reply !== null) return String(reply);
  }
  throw new Error("no node of the cluster answers");
}

async function command<T>(address: string, args: string[]): Promise<T> {
  const client = createClient({ url: `redis://${address}`, socket: { connectTimeout: 2_000, reconnectStrategy: false } });
  client.on("error", () => {});
  await client.connect();
  try {
    return (await client.sendCommand(args)) as T;
  } finally {
    client.destroy();
  }
}

async function tryCommand<T>(address: string, args: string[]): Promise<T | null> {
  try {
    return await command<T>(address, args);
  } catch {
    return null;
  }
}

/** Ports whose cluster bus port (+10000) is free too; never 6379. */
async function freeClusterPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if (port === 6379 || ports.includes(port)) continue;
    if ((await canListen(port)) && (await canListen(port + 10_000))) ports.push(port);
  }
  return ports;
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, abort?: Promise<void>): Promise<void> {
  let aborted = false;
  void abort?.then(() => (aborted = true));
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline && !aborted) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}
