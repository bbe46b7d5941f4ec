import type { AssetKind, Identity, Release, UserId, UserRecord, UserSetKind } from "../domain/model.js";
import type { IngestBatch } from "./batch.js";

export type { BatchDeletes, IngestBatch, UserInput } from "./batch.js";

/**
 * The narrow storage interface relgraph runs on. Engines register by name in store/index.ts:
 * `memory` (embedded, the zero-setup default) and `redis` (standalone or cluster). Every engine
 * passes the same acceptance suite (test/store/store-acceptance.ts).
 *
 * Reads speak in internal UserIds; identities are resolved once, at the edge of each query.
 * Set-returning methods return members in no particular order: ordering is the domain's job. What
 * any method returns may be shared with later calls (engines cache), so callers never mutate it.
 */
export interface GraphStore extends GraphReader, GraphWriter, ApiKeyStore, PagingStateStore, SharedStateStore {
  /** The engine's registered name, e.g. "memory", "redis", "redis-cluster". */
  readonly engine: string;
  /** The read caches' counters (GET /metrics), when the store has them (the cache layer does). */
  cacheStats?(): CacheStats;
  /** Resolves when the store answers; rejects with StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  /** Releases connections. Idempotent. */
  close(): Promise<void>;
}

/**
 * One part of the graph that a write changed, named as the read caches name it (store/cache/):
 * whatever a cache holds of it is stale. "everything" when an engine cannot tell what changed (a
 * flushed database, a lost invalidation connection).
 */
export type ChangedPart =
  | { part: "user"; id: UserId }
  | { part: "userSet"; kind: UserSetKind; id: UserId }
  | { part: "assetHolders"; kind: AssetKind; asset: string }
  | { part: "everything" };

/** Tells which parts of the graph changed, whichever process changed them. */
export interface ChangeNotifier {
  /** Calls `listener` with the parts each write changed, soon after they change; returns the unsubscribe. */
  onChange(listener: (parts: readonly ChangedPart[]) => void): () => void;
  /**
   * False while changes may go unreported (the engine's invalidation connection is down or not yet
   * set up): caches must not serve then. Before it turns true again, "everything" is reported.
   */
  readonly watching: boolean;
  /**
   * Resolves once every change completed before the call has been reported to the listeners (or
   * "everything" has been, when the engine cannot tell). Never rejects. A writer awaits it so that
   * its own next read sees its write.
   */
  caughtUp(): Promise<void>;
}

/** Read side of the graph. */
export interface GraphReader {
  /** Maps each identity to the user it names, or null. Values must be normalized already. */
  resolve(identities: readonly Identity[]): Promise<(UserId | null)[]>;
  /** Maps each relationId to its user, or null. */
  resolveRelationIds(relationIds: readonly string[]): Promise<(UserId | null)[]>;
  /** Loads users by id, in the order asked; null for unknown ids. */
  users(ids: readonly UserId[]): Promise<(UserRecord | null)[]>;
  /** The relationId of each id, in the order asked ("" for unknown ids). Cheaper than users(). */
  relationIds(ids: readonly UserId[]): Promise<string[]>;

  /** Members of one user-set of one user (unbounded: the caller owns the size risk). */
  userSet(kind: UserSetKind, id: UserId): Promise<UserId[]>;
  /** Cardinality of one user-set for each id. */
  userSetSizes(kind: UserSetKind, ids: readonly UserId[]): Promise<number[]>;
  /**
   * Members of one user-set for each id, except sets larger than maxSize, which come back as null
   * without being read: this is what bounds recommendation work around hubs.
   */
  userSetsBounded(kind: UserSetKind, ids: readonly UserId[], maxSize: number): Promise<(UserId[] | null)[]>;
  /** Users in every one of the given users' sets (set intersection). Empty input gives []. */
  userSetIntersection(kind: UserSetKind, ids: readonly UserId[]): Promise<UserId[]>;

  /** Asset contracts (lowercase addresses) of one user, over all of the user's addresses. */
  userAssets(kind: AssetKind, id: UserId): Promise<string[]>;
  /** How many users hold each asset (0 for unknown assets). */
  assetHolderCounts(kind: AssetKind, assets: readonly string[]): Promise<number[]>;
  /** Holders (user ids) of each asset, except assets held by more than maxSize users: null. */
  assetHoldersBounded(kind: AssetKind, assets: readonly string[], maxSize: number): Promise<(UserId[] | null)[]>;

  /** Contracts every one of the addresses interacted with (set intersection). */
  contractIntersection(addresses: readonly string[]): Promise<string[]>;
  /** Whether each address is known at all: a user's address, or the subject of any interaction or nft record. */
  addressesKnown(addresses: readonly string[]): Promise<boolean[]>;

  /** The user's release record; [] when the user released nothing. */
  release(id: UserId): Promise<Release>;
  /** Description of the friend relation between id and each peer ("" when none is recorded). */
  friendDescriptions(id: UserId, peers: readonly UserId[]): Promise<string[]>;
}

/** Progress of a write, reported after each flushed batch. */
export interface WriteProgress {
  written: number;
  total: number;
}

/** Stream entries a write applies: acknowledged as part of it, by whichever writer completes it. */
export interface StreamAcknowledgement {
  stream: string;
  group: string;
  ids: string[];
}

/**
 * A change of state that a writer keeps beside the graph (the chain indexer's position, undo
 * window and balances): one field of one named space, set, or deleted when `value` is null. A write
 * applies its kept changes as part of its unit, so that the state always describes exactly the
 * records written.
 */
export interface KeptChange {
  space: string;
  field: string;
  value: string | null;
}

/** Options of GraphWriter.write. */
export interface WriteOptions {
  /** State kept with the batch, written in the same unit (after the batch's records). */
  keep?: readonly KeptChange[];
  /** Called after each flushed part of the write. */
  onProgress?: (progress: WriteProgress) => void;
  /** Stream entries the batch came from (redis engine only). */
  acknowledge?: StreamAcknowledgement;
  /** Told what the writer waits for or does besides the write: another writer's lease, an interrupted write it completes. */
  onNotice?: (message: string) => void;
}

/** Write side, used only by ingestion and the change feed. */
export interface GraphWriter {
  /**
   * Applies a batch (IngestBatch says in which order). Idempotent: applying the same batch twice
   * leaves the same state. New relationIds get fresh ids; known ones keep theirs. User-level asset
   * sets follow address ownership whichever order the user and its interaction/nft records arrive
   * in, across loads. A batch applies as one unit: readers of the memory engine never see part of
   * it; the redis engine journals it first, so that a write interrupted at any point is completed by
   * the next writer (redis/journal.ts).
   */
  write(batch: IngestBatch, options?: WriteOptions): Promise<void>;
  /**
   * Runs `work` as the store's only writer (writes inside it need no lease of their own): what the
   * change feed reads and applies under, so that entries apply in stream order. An interrupted
   * write left by another process is completed first.
   */
  exclusive<T>(work: () => Promise<T>, options?: Pick<WriteOptions, "onNotice">): Promise<T>;
  /** The values of fields of one space of kept state (WriteOptions.keep), in the order asked; null where absent. */
  keptState(space: string, fields: readonly string[]): Promise<(string | null)[]>;
  /** Every field of one space of kept state. */
  keptSpace(space: string): Promise<Map<string, string>>;
}

/** A managed ApiKey, as stored: never the key itself, only its hash. */
export interface ApiKeyRecord {
  /** Short public identifier shown by `relgraph keys list`, used to revoke. */
  id: string;
  /** Hex SHA-256 of the key. */
  hash: string;
  label: string;
  createdAt: string;
  revokedAt: string | null;
  /** Requests per rate-limit window (`keys create --rate`; 0: unlimited); absent: the configured default (RATE_LIMIT). */
  rateLimit?: number;
}

/** Storage of managed ApiKeys. */
export interface ApiKeyStore {
  putApiKey(record: ApiKeyRecord): Promise<void>;
  apiKeyByHash(hash: string): Promise<ApiKeyRecord | null>;
  listApiKeys(): Promise<ApiKeyRecord[]>;
  /** Marks the key revoked; false when no key has that id. */
  revokeApiKey(id: string, at: string): Promise<boolean>;
}

/** Short-lived server-side paging state, shared by every server instance on the same store. */
export interface PagingStateStore {
  /**
   * Stores one paging state for `claim`. Erasing its owner (a user) drops it with them. With
   * limits, a state that would be one too many (for its owner, for its holder, or in the whole store)
   * is not stored: PagingStateFullError. Storing a key again only renews it, and never counts twice
   * toward the same limit.
   */
  putPagingState(key: string, value: string, ttlSeconds: number, claim?: PagingStateClaim): Promise<void>;
  /**
   * The value, or null when it never existed or has expired. With `renew`, a state found lives
   * `ttlSeconds` from now, as long as a state just put (what it counts toward its limits included).
   */
  getPagingState(key: string, renew?: PagingStateRenewal): Promise<string | null>;
}

/** Whom putPagingState stores a state for, and the limits it is counted against. */
export interface PagingStateClaim {
  /** The user whose erasure drops the state. */
  owner?: UserId;
  /**
   * Who holds it open (an ApiKey, by its public id): with limits, it counts toward this holder's
   * share (limits.perHolder) until it expires, whoever stored it first. Put again by a holder that
   * does not hold it yet, a live state counts toward that holder's share too.
   */
  holder?: string;
  limits?: PagingStateLimits;
}

/** How getPagingState renews the state it finds: its time, and its owner and holder (as put). */
export interface PagingStateRenewal {
  ttlSeconds: number;
  owner?: UserId;
  /** Renews the holder's count of the state only if the holder still has it counted: a read never adds to a share. */
  holder?: string;
}

/** What the server instances on one store share besides the graph: secrets and counters. */
export interface SharedStateStore {
  /**
   * The store's 32 random bytes named `name`, created on the first ask: every process on the store
   * gets the same ones (the cursor key when CURSOR_KEY is unset). The memory engine's live as long as it.
   */
  sharedSecret(name: string): Promise<Uint8Array>;
  /**
   * Redis engines only: runs a Lua script, routed by its first key, through the store's connection
   * (its timeout and stall breaker). What the ApiKey rate limiter (rate-limiter-flexible) keeps its
   * shared counters with.
   */
  evalScript?(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
}

/** Lookups of each read cache (users, relationIds, setSizes, setMembers, intersections) since it started. */
export type CacheStats = Record<string, { hits: number; misses: number; entries: number }>;

/** Bounds on the live paging states put with them. */
export interface PagingStateLimits {
  /** Live states one owner may hold. */
  perOwner: number;
  /** Live states one holder may have counted at once (with a claim's holder). */
  perHolder: number;
  /** Live states in the whole store. */
  total: number;
}

/** Thrown by putPagingState when a limit is reached: no new state was stored, and no state live before is gone. */
export class PagingStateFullError extends Error {
  override name = "PagingStateFullError";
  constructor(
    /** Which limit: the owner's, the holder's, or the whole store's. */
    readonly limit: "perOwner" | "perHolder" | "total",
    /** Whole seconds until a live state expires and makes room (at least 1). */
    readonly retryAfterSeconds: number,
  ) {
    super(`paging state limit reached (${limit})`);
  }
}
