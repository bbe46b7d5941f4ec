import type { FastifyInstance } from "fastify";
import { createApiKeyAuthenticator } from "./auth/api-keys.js";
import { createApiKeyRateLimiter } from "./auth/api-key-rate-limit.js";
import { createRequestGate } from "./auth/request-gate.js";
import { createSiweVerifier } from "./auth/siwe.js";
import { ConfigError, type Config } from "./config/config.js";
import { createDevKeyNetwork } from "./crypto/dev-network.js";
import { createThresholdEncryptor, type ResultEncryptor } from "./crypto/encryptor.js";
import type { KeyShare, PublicKeyNetwork } from "./crypto/key-network.js";
import { readPublicKeyNetwork } from "./crypto/key-network-file.js";
import { createCursorCodec } from "./domain/cursor.js";
import { GraphQueries } from "./graph/queries.js";
import { DEFAULT_RECOMMENDATION_LIMITS } from "./domain/recommendation-limits.js";
import { createRelationService } from "./rpc/relation-service.js";
import { createMetrics, registerCacheMetrics, withStoreMetrics } from "./metrics/metrics.js";
import { createServer } from "./create-server.js";
import type { GraphStore } from "./store/store.js";

/** The store's shared secret that keys cursors when CURSOR_KEY is unset. */
const CURSOR_KEY_NAME = "cursor-key";

/** The development ApiKey: only ever accepted when the caller asks for it (embedded store, no API_KEYS). */
export const DEV_API_KEY = "relgraph-dev-key";

/** Options of createRelgraph beyond the configuration. */
export interface RelgraphOptions {
  /** Accept DEV_API_KEY. */
  devApiKey?: boolean;
  /** Overrides config.logLevel; false silences logs (tests). */
  logLevel?: string | false;
}

/** A composed relgraph server, not yet listening. */
export interface Relgraph {
  server: FastifyInstance;
  /** Human-readable lines about how it was composed (dev key, key network), for startup output. */
  notices: string[];
  /** Closes the server, then the encryptor and the store. */
  close(): Promise<void>;
  /** Closes the encryptor and the store only (after the server has closed). */
  closeResources(): Promise<void>;
}

/**
 * The composition root: builds authorization, encryption, queries and the service over `store`
 * from the configuration. `relgraph serve` and the tests compose the server through here alike.
 */
export async function createRelgraph(config: Readonly<Config>, rawStore: GraphStore, options: RelgraphOptions = {}): Promise<Relgraph> {
  const metrics = createMetrics();
  // Every store call is timed and its failures counted (GET /metrics); close() stays the raw store's.
  const store = withStoreMetrics(rawStore, metrics);
  if (rawStore.cacheStats) registerCacheMetrics(metrics, rawStore.cacheStats.bind(rawStore));
  const notices: string[] = [];
  const staticKeys = [...config.apiKeys];
  if (options.devApiKey) {
    staticKeys.push(DEV_API_KEY);
    notices.push(`development ApiKey: ${DEV_API_KEY}   (embedded store only; set API_KEYS to choose keys)`);
  }
  const gate = createRequestGate(
    createApiKeyAuthenticator({ store, staticKeys }),
    createApiKeyRateLimiter({ store, windowSeconds: config.rateLimitWindowSeconds }),
    config.rateLimit,
  );
  const verifier = createSiweVerifier({
    domains: config.siweDomains,
    maxAgeSeconds: config.siweMaxAgeSeconds,
    ethRpcUrl: config.ethRpcUrl,
  });
  const encryption = await createEncryption(config, store.engine);
  notices.push(encryption.notice);
  // Every instance on one store must open the others' cursors: without CURSOR_KEY they share the
  // store's own key, which is created once in it.
  const queries = new GraphQueries(store, createCursorCodec(config.cursorKey ?? (await store.sharedSecret(CURSOR_KEY_NAME))), {
    ...DEFAULT_RECOMMENDATION_LIMITS,
    firstHopCap: config.recommendFirstHopCap,
    snapshotsPerUser: config.recommendSnapshotsPerUser,
    snapshotsPerKey: config.recommendSnapshotsPerKey,
    snapshotLimit: config.recommendSnapshotLimit,
  });
  const service = createRelationService({ queries, authorizer: verifier, encryptor: encryption.encryptor });
  const server = await createServer(
    {
      service,
      gate,
      store,
      verifier,
      keyNetwork: encryption.network,
      keyNodes: encryption.keyNodes,
      corsOrigins: config.corsOrigins,
      keyNodeRateLimit: { perSecond: config.keyNodeRatePerSecond, burst: config.keyNodeRateBurst },
      maxRequestBytes: config.maxRequestBytes,
      metrics,
    },
    {
      logLevel: options.logLevel ?? config.logLevel,
      limits: {
        headersTimeoutMs: config.headersTimeoutMs,
        requestTimeoutMs: config.requestTimeoutMs,
        idleTimeoutMs: config.idleTimeoutMs,
        maxConcurrentStreams: config.maxConcurrentStreams,
      },
      fastPaths: config.fastPaths,
    },
  );
  const closeResources = async () => {
    await encryption.encryptor.close();
    await store.close();
  };
  return {
    server,
    notices,
    closeResources,
    async close() {
      await server.close();
      await closeResources();
    },
  };
}

/** The encryption backend chosen by configuration, and the key network the server publishes. */
async function createEncryption(config: Readonly<Config>, engine: string): Promise<{
  encryptor: ResultEncryptor;
  network: PublicKeyNetwork | null;
  keyNodes: { prefix: string; share: KeyShare }[];
  notice: string;
}> {
  if (config.keyNetworkFile) {
    const network = await readPublicKeyNetwork(config.keyNetworkFile);
    return {
      encryptor: createThresholdEncryptor(network, { workers: config.encryptionWorkers }),
      network,
      keyNodes: [],
      notice: `encryption: ${network.threshold}-of-${network.nodes.length} key network from ${config.keyNetworkFile}`,
    };
  }
  // On a real store the development network runs only when asked for (DEV_KEY_NETWORK=1), and is
  // then said loudly: one process holding every share protects nothing.
  if (engine !== "memory" && !config.devKeyNetwork) {
    throw new ConfigError(
      "no KEY_NETWORK_FILE: on Redis or a Redis Cluster relgraph does not run the development key network by accident. Deal a network with `relgraph keygen` and set KEY_NETWORK_FILE, or set DEV_KEY_NETWORK=1 to run the development network anyway (it protects nothing)",
    );
  }
  const dev = createDevKeyNetwork();
  return {
    encryptor: createThresholdEncryptor(dev.network, { workers: config.encryptionWorkers }),
    network: dev.network,
    keyNodes: dev.nodes,
    notice:
      engine === "memory"
        ? "encryption: DEVELOPMENT 2-of-3 key network running in-process (set KEY_NETWORK_FILE for production)"
        : "WARNING encryption: DEVELOPMENT 2-of-3 key network running in-process on a real store: every share is in this process, so encrypted answers protect nothing. Deal a network with `relgraph keygen` and set KEY_NETWORK_FILE.",
  };
}
