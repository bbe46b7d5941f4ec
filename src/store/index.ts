import { createCachedStore } from "./cache/cached-store.js";
import { createMemoryStore } from "./memory/memory-store.js";
import { createRedisStore } from "./redis/redis-store.js";
import type { ChangeNotifier, GraphStore } from "./store.js";

export type { GraphStore } from "./store.js";
export { createMemoryStore } from "./memory/memory-store.js";
export { createRedisStore, type RedisStoreOptions } from "./redis/redis-store.js";
export { createCachedStore } from "./cache/cached-store.js";
export { UnknownRelationIdError } from "./batch.js";
export { PagingStateFullError } from "./store.js";

/** The configuration a store engine is chosen and opened from: the fields of config/config.ts's Config that name it. */
export interface StoreConfig {
  /** REDIS_URL: a standalone Redis; null for none. */
  redisUrl: string | null;
  /** REDIS_CLUSTER_NODES: seeds of a Redis Cluster; empty for none. */
  redisClusterNodes: string[];
  /** WRITE_LEASE_MS: the write lease's time; the engine's default when absent. */
  writeLeaseMs?: number;
  /** FAST_PATHS: on standalone Redis, the engine's own RESP sockets for set reads and bulk writes. Default false. */
  fastPaths?: boolean;
}

/**
 * Opens a store of one engine; rejects with StoreUnavailableError when its backend does not answer.
 * Every engine reports its changes, so that one cache layer serves them all.
 */
type EngineFactory = (config: StoreConfig, options: OpenOptions) => Promise<GraphStore & ChangeNotifier>;

/** Options of createStore. */
export interface OpenOptions {
  /**
   * false opens the engine without the read caches (and, on Redis, without the tracking connections
   * that keep them right): for writers that serve no reads, such as `relgraph ingest` and `relgraph
   * follow`. Default true.
   */
  readCaches?: boolean;
}

/** The engines, by registered name. */
export const ENGINES: Readonly<Record<string, EngineFactory>> = {
  memory: async () => createMemoryStore(),
  redis: (config, options) =>
    createRedisStore(
      { url: config.redisUrl ?? "" },
      { leaseMs: config.writeLeaseMs, tracking: options.readCaches !== false, fastPaths: config.fastPaths === true },
    ),
  "redis-cluster": (config, options) =>
    createRedisStore({ clusterNodes: config.redisClusterNodes }, { leaseMs: config.writeLeaseMs, tracking: options.readCaches !== false }),
};

/** The engine the configuration selects: cluster seeds, then a Redis URL, else the embedded store. */
export function engineName(config: StoreConfig): "memory" | "redis" | "redis-cluster" {
  if (config.redisClusterNodes.length > 0) return "redis-cluster";
  return config.redisUrl ? "redis" : "memory";
}

/** Opens the store the configuration selects, behind the read caches (cache/cached-store.ts) unless told not to. */
export async function createStore(config: StoreConfig, options: OpenOptions = {}): Promise<GraphStore & ChangeNotifier> {
  const engine = await (ENGINES[engineName(config)] as EngineFactory)(config, options);
  return options.readCaches === false ? engine : createCachedStore(engine);
}
