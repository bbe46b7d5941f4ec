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
 */

/** While a master's connection is down, how often the slot map is asked for again. */
const RETRY_MS = 500;
/** How often the slot map is asked for when nothing seems wrong. */
const STEADY_MS = 5_000;

/** The part of node-redis's cluster client this uses. */
export interface RediscoverableCluster {
  masters: readonly { host: string; port: number; client?: { isReady: boolean } }[];
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
type Rediscover = (startWith: { options: { socket: { host: string; port: number } } }) => Promise<void>;

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
      // Ask a master that answers; failing that, node-redis falls back to the seeds itself.
      const live = cluster.masters.find((master) => master.client?.isReady) ?? seedAddress(seeds);
      try {
        if (live) await rediscover({ options: { socket: { host: live.host, port: live.port } } });
        suspect = anyMasterDown();
      } catch {
        // No node answered: the next tick tries again.
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

function seedAddress(seeds: readonly string[]): { host: string; port: number } | undefined {
  const seed = seeds[Math.floor(Math.random() * seeds.length)];
  if (seed === undefined) return undefined;
  const at = seed.lastIndexOf(":");
  return { host: seed.slice(0, at), port: Number(seed.slice(at + 1)) };
}
