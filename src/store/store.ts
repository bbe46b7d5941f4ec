import type { AssetKind, Identity, Release, UserId, UserRecord, UserSetKind } from "../domain/model.js";
import type { FollowColumns, FollowRecord, FriendColumns, FriendRecord } from "./batch.js";

/**
 * The narrow storage interface relgraph runs on. Engines register by name in store/index.ts:
 * `memory` (embedded, the zero-setup default) and `redis` (standalone or cluster). Every engine
 * passes the same acceptance suite (test/store/store-acceptance.ts).
 *
 * Reads speak in internal UserIds; identities are resolved once, at the edge of each query.
 * Set-returning methods return members in no particular order: ordering is the domain's job. What
 * any method returns may be shared with later calls (engines cache), so callers never mutate it.
 */
export interface GraphStore extends GraphReader, GraphWriter, ApiKeyStore, PagingStateStore {
  /** The engine's registered name, e.g. "memory", "redis", "redis-cluster". */
  readonly engine: string;
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

/** A user record as ingested, before it has an id. Addresses are lowercase, social username too. */
export type UserInput = Omit<UserRecord, "id">;

/**
 * One validated, self-consistent load. Relations refer to users by relationId; every relationId
 * is either in `users` or already stored (the ingester checked). Addresses are lowercase.
 */
export interface IngestBatch {
  users: UserInput[];
  /** An array, or typed columns (batch.ts) that iterate as the same records: what large loads use. */
  friends: FriendRecord[] | FriendColumns;
  follows: FollowRecord[] | FollowColumns;
  interactions: { address: string; contract: string }[];
  nfts: { address: string; contract: string }[];
  releases: { relationId: string; peers: "*" | string[] }[];
}

/** Progress of a write, reported after each flushed batch. */
export interface WriteProgress {
  written: number;
  total: number;
}

/** Write side, used only by ingestion. */
export interface GraphWriter {
  /**
   * Applies a batch idempotently: applying the same batch twice leaves the same state. New
   * relationIds get fresh ids; known ones keep theirs. Re-ingesting a user replaces its record and
   * identity index entries. User-level asset sets follow address ownership whichever order the
   * user and its interaction/nft records arrive in, across loads.
   */
  write(batch: IngestBatch, onProgress?: (progress: WriteProgress) => void): Promise<void>;
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
  putPagingState(key: string, value: string, ttlSeconds: number): Promise<void>;
  /** The value, or null when it never existed or has expired. */
  getPagingState(key: string): Promise<string | null>;
}
