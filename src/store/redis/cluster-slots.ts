/**
 * Keeps a node-redis cluster client's slot map true to the cluster after a fault.
 *
 * node-redis learns where slots live at connect time and again only when a node answers MOVED or
 * ASK. A master that dies answers nothing: its replica is promoted within seconds, yet the client
 * keeps sending that master's slots to the dead address, and with the offline queue disabled every
 * such command fails at once, for good (node-redis issue #2806). So the slot map is rediscovered
 * (CLUSTER SLOTS from a live node, which is what node-redis does on MOVED) whenever a node's
 * connection errs or drops, every RETRY_MS until every master answers again, and every
 * STEADY_MS in any case, for changes nobody redirected this client for while it was idle.
 * Rediscovery drops the connections of nodes that no longer serve slots and opens the new masters';
 * what follows the masters (the tracking connections, tracking.ts) follows from there.
 *
 * node-redis's rediscovery waits without limit, and runs one at a time (a call while one runs gets
 * that one): a rediscovery held by a hung node would hold every later one, node-redis's own on MOVED
 * included, for as long as the node hangs, even once its replica has taken over. It can be held in
 * two places. Asking a node for the slot map: the node the watch starts at and the seeds that follow
 * it are given a reply timeout (discoveryNode); node-redis's own rediscovery on MOVED starts at the
 * node that redirected, which has just answered, without one. Connecting to the new masters it found: a master that hangs (or a dead address a
 * late view still names) is connected to for ever; once REDISCOVERY_TIMEOUT_MS has passed, those
 * connections are dropped, which ends that rediscovery, and the node is forgotten, so that the next
 * one connects to it afresh.
 */
import { NoReplyError, withDeadline } from "./deadline.js";

/** While a master's connection is down, how often the slot map is asked for again. */
const RETRY_MS = 500;
/** How often the slot map is asked for when nothing seems wrong. */
const STEADY_MS = 5_000;
/** How long a node asked for the slot map may stay silent once connected. */
const DISCOVERY_REPLY_TIMEOUT_MS = 2_000;
/**
 * How long one rediscovery may take before the connections it still waits for are dropped: far above
 * a rediscovery's milliseconds, and above a seed's connect and reply timeouts.
 */
const REDISCOVERY_TIMEOUT_MS = 10_000;

/** The part of node-redis's cluster client this uses. */
export interface RediscoverableCluster {
  masters: readonly { host: string; port: number; client?: { isReady: boolean } }[];
  /** Every node by host:port; a node whose first connection is still being made has its connectPromise. */
  nodeByAddress: Map<string, { connectPromise?: Promise<unknown>; client?: { isOpen: boolean; destroy(): void } }>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
}

/** Stops the watch. */
export interface SlotWatch {
  close(): void;
  /** Rediscovers now; resolves once done (either way). For tests and for a caller that just saw a fault. */
  refresh(): Promise<void>;
}

/**
 * node-redis's own rediscovery, which it runs on MOVED: internal (`_slots.rediscover`), so it is
 * looked up once here and its absence (a node-redis that changed it) is an error at connect time
 * rather than a cluster that silently stops following failovers. package.json pins `redis` exactly for
 * the same reason: an internal may change in any release.
 */
type Rediscover = (startWith: { options: DiscoveryNode }) => Promise<void>;

/** Client options of a node asked for the slot map: its address, and the reply timeout. */
interface DiscoveryNode {
  socket: { host: string; port: number; socketTimeout: number };
}

/**
 * A seed (host:port) as a cluster's root node, asked for the slot map at connect time and whenever a
 * rediscovery's first node fails: silent for DISCOVERY_REPLY_TIMEOUT_MS once connected, it is given up.
 * The timeout is the socket's idle timeout, which node-redis applies to that short-lived connection only.
 */
export function discoveryNode(seed: string): DiscoveryNode {
  const at = seed.lastIndexOf(":");
  return { socket: { host: seed.slice(0, at), port: Number(seed.slice(at + 1)), socketTimeout: DISCOVERY_REPLY_TIMEOUT_MS } };
}

function rediscoverOf(cluster: RediscoverableCluster): Rediscover {
  const slots = (cluster as unknown as { _slots?: { rediscover?: Rediscover } })._slots;
  if (typeof slots?.rediscover !== "function") {
    throw new Error("this node-redis has no cluster slot rediscovery (_slots.rediscover): relgraph cannot follow a cluster failover with it");
  }
  return slots.rediscover.bind(slots);
}

/** Watches `cluster` (connected) and rediscovers its slots as described above; `seeds` are host:port. */
export function watchClusterSlots(cluster: RediscoverableCluster, seeds: readonly string[]): SlotWatch {
  const rediscover = rediscoverOf(cluster);
  let suspect = false;
  let running: Promise<void> | null = null;
  let lastAt = performance.now();
  const anyMasterDown = () => cluster.masters.some((master) => master.client !== undefined && !master.client.isReady);
  const refresh = () =>
    (running ??= (async () => {
      lastAt = performance.now();
      forgetClosed(cluster);
      // Ask a master that answers; failing that, node-redis falls back to the seeds itself.
      const ready = cluster.masters.filter((master) => master.client?.isReady);
      const live = ready[Math.floor(Math.random() * ready.length)] ?? seedNode(seeds);
      try {
        if (live) await withDeadline(rediscover({ options: { socket: { host: live.host, port: live.port, socketTimeout: DISCOVERY_REPLY_TIMEOUT_MS } } }), REDISCOVERY_TIMEOUT_MS);
        suspect = anyMasterDown();
      } catch (error) {
        // No node answered, or one held the rediscovery: the next tick tries again.
        suspect = true;
        if (error instanceof NoReplyError) forgetUnconnected(cluster);
      }
    })().finally(() => {
      running = null;
    }));
  for (const event of ["node-error", "node-reconnecting", "node-disconnect"]) {
    cluster.on(event, () => {
      suspect = true;
    });
  }
  const timer = setInterval(() => {
    if (suspect || anyMasterDown() || performance.now() - lastAt >= STEADY_MS) void refresh();
  }, RETRY_MS);
  timer.unref();
  return {
    close: () => clearInterval(timer),
    refresh,
  };
}

function seedNode(seeds: readonly string[]): { host: string; port: number } | undefined {
  const seed = seeds[Math.floor(Math.random() * seeds.length)];
  return seed === undefined ? undefined : discoveryNode(seed).socket;
}

/**
 * Forgets the nodes whose client is closed for good: one that gave up connecting while the cluster
 * client started (a master killed meanwhile: its connect gives up, the start goes on through another
 * seed, and node-redis keeps the node). node-redis reuses a node it knows whatever its client's state,
 * so that client would serve the node's slots for as long as the process runs should it be a master
 * again (its replica promoted, then failed over back to it); and its rediscovery throws on destroying a
 * closed client, so it would never drop the node either. Forgotten, the node is connected to afresh by
 * the next rediscovery that finds it a master.
 */
function forgetClosed(cluster: RediscoverableCluster): void {
  for (const [address, node] of cluster.nodeByAddress) {
    if (node.client !== undefined && !node.client.isOpen && node.connectPromise === undefined) cluster.nodeByAddress.delete(address);
  }
}

/**
 * Drops the nodes whose first connection is still being made: destroying the client settles its
 * connect, and so the rediscovery waiting for it; forgotten, the node is connected to afresh by the
 * next rediscovery that finds it. Commands sent to it meanwhile fail, as they would have on the hung node.
 */
function forgetUnconnected(cluster: RediscoverableCluster): void {
  for (const [address, node] of cluster.nodeByAddress) {
    if (node.connectPromise === undefined) continue;
    try {
      node.client?.destroy();
    } catch {
      // Closed already.
    }
    cluster.nodeByAddress.delete(address);
  }
}
