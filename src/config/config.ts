import { availableParallelism } from "node:os";
import { parseCursorKey } from "../domain/cursor.js";
import { DEFAULT_RECOMMENDATION_LIMITS, defaultSnapshotsPerKey } from "../domain/recommendation-limits.js";
import { redactSeed, redactUrl } from "./redact.js";

/** Threads for new authorizations' encryption unless ENCRYPTION_WORKERS says otherwise: one per core, at most 4. */
export function defaultEncryptionWorkers(): number {
  return Math.min(4, availableParallelism());
}

/**
 * relgraph's configuration, read once from the environment (CLI flags may override) and validated
 * into a typed, frozen object. Each default sits beside its field. Secret fields are listed in
 * SECRET_FIELDS so that logging redacts them.
 */
export interface Config {
  /** PORT: the one listening port for REST, Connect, gRPC, gRPC-Web and reflection. */
  port: number;
  /** HOST: the interface to bind. */
  host: string;
  /** REDIS_URL: a standalone Redis server; null means the embedded in-memory store. */
  redisUrl: string | null;
  /** REDIS_CLUSTER_NODES: host:port seeds of a Redis Cluster; takes precedence over REDIS_URL. */
  redisClusterNodes: string[];
  /** API_KEYS (secret): accepted ApiKey values, in addition to keys managed with `relgraph keys`. */
  apiKeys: string[];
  /** SIWE_DOMAINS: accepted SIWE `domain` values; empty means any domain. */
  siweDomains: string[];
  /** CORS_ORIGINS: origins (scheme://host[:port]) browsers may call from, or "*"; empty allows none but relgraph's own pages. */
  corsOrigins: string[];
  /** SIWE_MAX_AGE_SECONDS: how old a SIWE `issuedAt` may be. */
  siweMaxAgeSeconds: number;
  /** ETH_RPC_URL: Ethereum JSON-RPC endpoint used to verify EIP-1271 (smart-contract wallet) signatures. */
  ethRpcUrl: string | null;
  /**
   * RATE_LIMIT: requests an ApiKey may make per window, counted by every instance on the store
   * together (0: unlimited); a key's own `--rate` takes precedence.
   */
  rateLimit: number;
  /** RATE_LIMIT_WINDOW_SECONDS: the rate-limit window; RATE_LIMIT requests per this many seconds. */
  rateLimitWindowSeconds: number;
  /**
   * CURSOR_KEY (secret): the 32-byte key cursors are encrypted under, as 64 hex digits or base64.
   * Unset: the store's own key, created once in it, so every instance on one store shares it (the
   * embedded store's lives as long as the process).
   */
  cursorKey: Uint8Array | null;
  /** KEY_NETWORK_FILE: the public key-network file written by `relgraph keygen`; null runs a dev network in-process. */
  keyNetworkFile: string | null;
  /**
   * DEV_KEY_NETWORK=1: run the in-process development key network on Redis or a cluster when no
   * KEY_NETWORK_FILE is given; without it, serve refuses to start there (one process holding every
   * share protects nothing).
   */
  devKeyNetwork: boolean;
  /** KEY_NODE_RATE_LIMIT_PER_SECOND: sustained decryption-share requests per second per client address, per key node. */
  keyNodeRatePerSecond: number;
  /** KEY_NODE_RATE_LIMIT_BURST: decryption-share requests a client address may make at once, per key node. */
  keyNodeRateBurst: number;
  /**
   * ENCRYPTION_WORKERS: threads making the identity-based encryption of each new authorization's
   * payload key (a pairing each); 0 makes it on the event loop. Default: one per core, at most 4.
   */
  encryptionWorkers: number;
  /** ENCRYPTION_BACKEND: "relgraph" (threshold key nodes), the only backend; see refuseRetiredBackend. */
  encryptionBackend: "relgraph";
  /** LOG_LEVEL: pino level. */
  logLevel: string;
  /** WRITE_LEASE_MS: how long a writer (ingest, follow) killed outright keeps others waiting before they take over. */
  writeLeaseMs: number;
  /** HTTP_HEADERS_TIMEOUT_MS: a connection must send its request headers (or h2c preface) within this. */
  headersTimeoutMs: number;
  /** HTTP_REQUEST_TIMEOUT_MS: an HTTP/1.1 request must arrive whole, and an HTTP/2 stream stay active, within this. */
  requestTimeoutMs: number;
  /** HTTP_IDLE_TIMEOUT_MS: idle HTTP/1.1 keep-alive connections and HTTP/2 sessions are closed after this. */
  idleTimeoutMs: number;
  /** HTTP2_MAX_CONCURRENT_STREAMS: streams one HTTP/2 connection may have open at once. */
  maxConcurrentStreams: number;
  /** MAX_REQUEST_BYTES: largest request body, before and after decompression; the largest legal request is a few KB. */
  maxRequestBytes: number;
  /** RECOMMEND_FIRST_HOP_CAP: neighbours (or assets) of the queried user a recommendation considers per signal; a hub user's are sampled down to it. */
  recommendFirstHopCap: number;
  /** RECOMMEND_SNAPSHOTS_PER_USER: recommendation cursor chains (snapshots) one user may have open at once; a new one past it is refused with 10110. */
  recommendSnapshotsPerUser: number;
  /**
   * RECOMMEND_SNAPSHOTS_PER_KEY: recommendation cursor chains (snapshots) one ApiKey may hold open at
   * once, at most RECOMMEND_SNAPSHOT_LIMIT (default a tenth of it); a new one past it is refused with
   * 10110, while other keys' new chains are served. Every caller of the development key is one key.
   */
  recommendSnapshotsPerKey: number;
  /** RECOMMEND_SNAPSHOT_LIMIT: recommendation snapshots in the store at once (each at most 24 KB); a new chain past it is refused with 10110. */
  recommendSnapshotLimit: number;
  /** FAST_PATHS: "off" sends every request through connect-es and node-redis, without the fast paths (rpc/unary/, rest/h2c-handler.ts, store/redis/resp/). */
  fastPaths: boolean;
}

/** Fields whose values must never be logged. */
export const SECRET_FIELDS: readonly (keyof Config)[] = ["apiKeys", "cursorKey"];

/** URL fields, which may carry credentials (a password, a provider key); logs show them through redactUrl. */
export const URL_FIELDS: readonly (keyof Config)[] = ["redisUrl", "ethRpcUrl"];

/** host:port fields; logs show them through redactSeed. */
export const SEED_FIELDS: readonly (keyof Config)[] = ["redisClusterNodes"];

/** Thrown when the environment or a flag holds a value relgraph cannot use. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

/** Reads and validates the configuration from an environment (process.env by default). */
export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Readonly<Config> {
  for (const [name, replacement] of Object.entries(RETIRED)) {
    if (text(env, name) !== null) throw new ConfigError(`${name} is no longer read: use ${replacement}`);
  }
  const recommendSnapshotLimit = integer(env, "RECOMMEND_SNAPSHOT_LIMIT", DEFAULT_RECOMMENDATION_LIMITS.snapshotLimit, 1, 1_000_000_000);
  const config: Config = {
    port: integer(env, "PORT", 8080, 0, 65535),
    host: text(env, "HOST") ?? "0.0.0.0",
    redisUrl: text(env, "REDIS_URL"),
    redisClusterNodes: list(env, "REDIS_CLUSTER_NODES"),
    apiKeys: list(env, "API_KEYS"),
    siweDomains: list(env, "SIWE_DOMAINS"),
    corsOrigins: list(env, "CORS_ORIGINS"),
    siweMaxAgeSeconds: integer(env, "SIWE_MAX_AGE_SECONDS", 24 * 3600, 1, 365 * 24 * 3600),
    ethRpcUrl: text(env, "ETH_RPC_URL"),
    rateLimit: integer(env, "RATE_LIMIT", 0, 0, 1_000_000_000),
    rateLimitWindowSeconds: integer(env, "RATE_LIMIT_WINDOW_SECONDS", 1, 1, 86_400),
    cursorKey: cursorKey(env),
    keyNetworkFile: text(env, "KEY_NETWORK_FILE"),
    devKeyNetwork: oneOf(env, "DEV_KEY_NETWORK", ["0", "1"] as const, "0") === "1",
    keyNodeRatePerSecond: integer(env, "KEY_NODE_RATE_LIMIT_PER_SECOND", 10, 1, 1_000_000),
    keyNodeRateBurst: integer(env, "KEY_NODE_RATE_LIMIT_BURST", 20, 1, 1_000_000),
    encryptionWorkers: integer(env, "ENCRYPTION_WORKERS", defaultEncryptionWorkers(), 0, 64),
    encryptionBackend: encryptionBackend(env),
    logLevel: text(env, "LOG_LEVEL") ?? "info",
    writeLeaseMs: integer(env, "WRITE_LEASE_MS", 10_000, 500, 600_000),
    headersTimeoutMs: integer(env, "HTTP_HEADERS_TIMEOUT_MS", 10_000, 100, 3_600_000),
    requestTimeoutMs: integer(env, "HTTP_REQUEST_TIMEOUT_MS", 30_000, 100, 3_600_000),
    idleTimeoutMs: integer(env, "HTTP_IDLE_TIMEOUT_MS", 72_000, 100, 3_600_000),
    maxConcurrentStreams: integer(env, "HTTP2_MAX_CONCURRENT_STREAMS", 100, 1, 10_000),
    maxRequestBytes: integer(env, "MAX_REQUEST_BYTES", 64 * 1024, 1024, 16 * 1024 * 1024),
    recommendFirstHopCap: integer(env, "RECOMMEND_FIRST_HOP_CAP", DEFAULT_RECOMMENDATION_LIMITS.firstHopCap, 1, 1_000_000),
    recommendSnapshotsPerUser: integer(env, "RECOMMEND_SNAPSHOTS_PER_USER", DEFAULT_RECOMMENDATION_LIMITS.snapshotsPerUser, 1, 1_000_000),
    recommendSnapshotsPerKey: integer(env, "RECOMMEND_SNAPSHOTS_PER_KEY", defaultSnapshotsPerKey(recommendSnapshotLimit), 1, 1_000_000_000),
    recommendSnapshotLimit,
    fastPaths: oneOf(env, "FAST_PATHS", ["on", "off"] as const, "on") === "on",
    ...overrides,
  };
  if (config.recommendSnapshotsPerKey > config.recommendSnapshotLimit) {
    throw new ConfigError(
      `RECOMMEND_SNAPSHOTS_PER_KEY (${config.recommendSnapshotsPerKey}) exceeds RECOMMEND_SNAPSHOT_LIMIT (${config.recommendSnapshotLimit}): one ApiKey's share of the snapshot pool is at most the whole pool`,
    );
  }
  for (const [index, seed] of config.redisClusterNodes.entries()) {
    // The message shows the seed as host:port only: a mistyped seed may still carry a credential.
    if (!/^[^:\s@/?#]+:\d{1,5}$/.test(seed)) {
      throw new ConfigError(`REDIS_CLUSTER_NODES: seed ${index + 1} (${redactSeed(seed)}) is not host:port; a seed has no user, path or query`);
    }
  }
  for (const origin of config.corsOrigins) {
    // A browser sends its origin without a path or a trailing slash; anything else would never match.
    if (origin !== "*" && !/^https?:\/\/[^/\s?#]+$/.test(origin)) {
      throw new ConfigError(`CORS_ORIGINS: "${origin}" is not an origin like https://app.example or http://localhost:3000, nor *`);
    }
  }
  return Object.freeze(config);
}

/** The configuration with secret values replaced, for logs. */
export function redactConfig(config: Readonly<Config>): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...config };
  for (const field of SECRET_FIELDS) {
    const value = config[field];
    if (Array.isArray(value)) copy[field] = value.map(() => "[redacted]");
    else if (value !== null && value !== undefined) copy[field] = "[redacted]";
  }
  for (const field of URL_FIELDS) {
    const value = config[field];
    if (typeof value === "string") copy[field] = redactUrl(value);
  }
  for (const field of SEED_FIELDS) {
    const value = config[field];
    if (Array.isArray(value)) copy[field] = value.map((seed) => redactSeed(String(seed)));
  }
  return copy;
}

function text(env: Env, name: string): string | null {
  const value = env[name]?.trim();
  return value ? value : null;
}

/** Variables relgraph no longer reads, and what replaced each: set, they would be silently ignored. */
const RETIRED: Readonly<Record<string, string>> = {
  RATE_LIMIT_PER_SECOND: "RATE_LIMIT (requests per RATE_LIMIT_WINDOW_SECONDS, default 1 s)",
  RATE_LIMIT_BURST: "RATE_LIMIT with a longer RATE_LIMIT_WINDOW_SECONDS: a key may spend its whole window's budget at once",
  CURSOR_SECRET: "CURSOR_KEY (32 bytes as 64 hex digits or base64, e.g. `openssl rand -hex 32`), or leave both unset to use the store's own key",
};

/**
 * ENCRYPTION_BACKEND. "lit" once encrypted to Lit Protocol's Datil network; Lit retired Datil and
 * Naga, the networks of this ciphertext format, in 2026, so it is refused rather than left pointing
 * at a network that no longer answers. LIT_NETWORK, read only by that backend, is refused with it.
 */
function encryptionBackend(env: Env): "relgraph" {
  const retired =
    "Lit Protocol retired its Datil and Naga networks, the only ones that decrypted this ciphertext format, in 2026, " +
    "so there is no live Lit backend. relgraph's own key nodes (the default, ENCRYPTION_BACKEND=relgraph) serve " +
    "ciphertexts in Lit's format; deal a network with `relgraph keygen` and set KEY_NETWORK_FILE";
  if (text(env, "ENCRYPTION_BACKEND") === "lit") throw new ConfigError(`ENCRYPTION_BACKEND=lit is refused: ${retired}`);
  if (text(env, "LIT_NETWORK") !== null) throw new ConfigError(`LIT_NETWORK is no longer read: ${retired}`);
  return oneOf(env, "ENCRYPTION_BACKEND", ["relgraph"] as const, "relgraph");
}

function cursorKey(env: Env): Uint8Array | null {
  const value = text(env, "CURSOR_KEY");
  if (value === null) return null;
  const key = parseCursorKey(value);
  if (key === null) throw new ConfigError("CURSOR_KEY: expected 32 bytes as 64 hex digits or base64 (e.g. `openssl rand -hex 32`)");
  return key;
}

function list(env: Env, name: string): string[] {
  const value = text(env, name);
  if (value === null) return [];
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}


function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = text(env, name);
  if (value === null) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new ConfigError(`${name}: expected an integer from ${min} to ${max}, got "${value}"`);
  }
  return Number(value);
}

function oneOf<const T extends readonly string[]>(env: Env, name: string, allowed: T, fallback: T[number]): T[number] {
  const value = text(env, name);
  if (value === null) return fallback;
  if (!allowed.includes(value)) {
    throw new ConfigError(`${name}: expected one of ${allowed.join(", ")}, got "${value}"`);
  }
  return value as T[number];
}
