import type { AddressInfo } from "node:net";
import { loadConfig } from "../../src/config/config.js";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { createRelgraph, type Relgraph } from "../../src/relgraph.js";
import { createCachedStore } from "../../src/store/cache/cached-store.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import type { GraphStore } from "../../src/store/store.js";

/** The ApiKey every test server accepts. */
export const TEST_API_KEY = "test-key";

/**
 * The two ways relgraph serves (FAST_PATHS): with the fast paths on, and with every request
 * through connect-es and node-redis. Suites of the protocols and the store run under both. Off comes
 * first: the fast paths' UTF-8 encoder, once installed, stays for the process (the bytes are the same).
 */
export const SERVING_WAYS = [
  { name: "FAST_PATHS=off", env: { FAST_PATHS: "off" }, fastPaths: false },
  { name: "FAST_PATHS=on", env: { FAST_PATHS: "on" }, fastPaths: true },
] as const;

/** Options of startRelgraph. */
export interface StartRelgraphOptions {
  /** The store to serve; default a fresh memory store behind the caches, as createStore opens it. The server owns it: close() closes it. */
  store?: GraphStore;
  /** Records (ingestion format) loaded into the store before the server listens. */
  records?: Iterable<unknown>;
  /** Environment for loadConfig, on top of API_KEYS=test-key. */
  env?: Record<string, string>;
}

/** A relgraph server listening on a free loopback port. */
export interface RunningRelgraph {
  /** http://127.0.0.1:PORT, without a trailing slash. */
  url: string;
  port: number;
  store: GraphStore;
  /** Closes the server, its encryptor and its store. Idempotent. */
  close(): Promise<void>;
}

/**
 * Composes relgraph exactly as `relgraph serve` does (createRelgraph), with logs off, and listens on
 * port 0 of 127.0.0.1.
 */
function fastPathsFromEnvironment(): Record<string, string> {
  const value = process.env.FAST_PATHS;
  return value === undefined ? {} : { FAST_PATHS: value };
}

export async function startRelgraph(options: StartRelgraphOptions = {}): Promise<RunningRelgraph> {
  const store = options.store ?? createCachedStore(createMemoryStore());
  let relgraph: Relgraph | undefined;
  try {
    if (options.records) await ingestRecords(store, options.records);
    // The development key network on whatever store the test gives, Redis included. FAST_PATHS from
    // the environment, so that the whole suite also runs without the fast paths (FAST_PATHS=off npm test).
    const config = loadConfig({ API_KEYS: TEST_API_KEY, DEV_KEY_NETWORK: "1", ...fastPathsFromEnvironment(), ...options.env });
    relgraph = await createRelgraph(config, store, { logLevel: false });
    await relgraph.server.listen({ port: 0, host: "127.0.0.1" });
  } catch (err) {
    await (relgraph ? relgraph.close() : store.close());
    throw err;
  }
  const { port } = relgraph.server.server.address() as AddressInfo;
  const running = relgraph;
  let closed: Promise<void> | null = null;
  return { url: `http://127.0.0.1:${port}`, port, store, close: () => (closed ??= running.close()) };
}
