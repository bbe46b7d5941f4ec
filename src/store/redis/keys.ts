import type { AssetKind, IdentityKind, UserId, UserSetKind } from "../../domain/model.js";

/*
 * Every Redis key relgraph uses, in one place. All start with `rg:`.
 *
 * Per-user and per-address keys carry the id or address in the key name, so on a Redis Cluster
 * they spread over slots (and nodes): nothing ever needs two users' keys in one command, and the
 * reader intersects client-side on a cluster. User-to-user sets hold integer UserIds so that
 * Redis keeps them as compact intsets.
 */

/**
 * String: a fresh random token set by every write when it starts and again when it is complete
 * (so a write that fails halfway still counts). Readers that cache records in process
 * (versioned-cache.ts) compare it to tell whether what they hold is still current; a token rather than a
 * counter, so that a flushed and reloaded database never repeats an old version.
 */
export const DATA_VERSION = "rg:data-version";

/** INCR sequence that allocates UserIds (1, 2, …). */
export const USER_ID_SEQUENCE = "rg:seq:user";

/** Hash relationId → UserId. */
export const RELATION_ID_INDEX = "rg:idx:relation-id";

/** Hash UserId → relationId, so that naming users does not need their whole record. */
export const RELATION_ID_BY_USER = "rg:idx:relation-id-by-user";

/** Hash address | lowercase social username | gameId → UserId. */
export function identityIndexKey(kind: IdentityKind): string {
  return `rg:idx:${kind}`;
}

/** String: the user's record as JSON. */
export function userKey(id: UserId): string {
  return `rg:user:${id}`;
}

/** Set of UserIds: friends (undirected), following or followers of one user. */
export function userSetKey(kind: UserSetKind, id: UserId): string {
  return `rg:${kind}:${id}`;
}

/** Hash peer UserId → description of the friend relation between the user and that peer. */
export function friendDescriptionsKey(id: UserId): string {
  return `rg:friend-description:${id}`;
}

/** Set of the peers (UserIds) whose relation the user released; RELEASE_ALL means everyone. */
export function releaseKey(id: UserId): string {
  return `rg:release:${id}`;
}

/** Set of the users (UserIds) whose release names this user: what erasing the user must edit. */
export function releasedToKey(id: UserId): string {
  return `rg:released-to:${id}`;
}

/** The member of a release set meaning `"*"`. UserIds start at 1, and a number keeps the set an intset. */
export const RELEASE_ALL = "0";

/** Set of contracts one address interacted with ("contracts") or holds NFTs of ("nfts"). */
export function addressAssetsKey(kind: AssetKind, address: string): string {
  return `rg:address-${kind}:${address}`;
}

/**
 * Set of the addresses that have records of one kind: a write checks many addresses against it in
 * one command instead of reading each address's (mostly empty) asset set.
 */
export function assetAddressesKey(kind: AssetKind): string {
  return `rg:${kind}-addresses`;
}

/** Set of contracts of one user: the union of its addresses' sets of the same kind. */
export function userAssetsKey(kind: AssetKind, id: UserId): string {
  return `rg:user-${kind}:${id}`;
}

/** Set of UserIds holding one asset (reverse of userAssetsKey). */
export function assetHoldersKey(kind: AssetKind, asset: string): string {
  return `rg:holders-${kind}:${asset}`;
}

/** String with a TTL: one paging state. */
export function pagingStateKey(key: string): string {
  return `rg:page:${key}`;
}

/** Set with a TTL: the paging state keys that erasing this user drops (their recommendation snapshots). */
export function pagingStateOwnerKey(id: UserId): string {
  return `rg:page-owner:${id}`;
}

/** String with a TTL: the token of the one process allowed to write (write-lease.ts). */
export const WRITE_LEASE = "rg:write-lease";

/** String: the header of the write journal (journal.ts), when a unit of changes is being applied. */
export const JOURNAL = "rg:journal";

/** String: one chunk of the journalled unit. */
export function journalChunkKey(unit: string, n: number): string {
  return `rg:journal:${unit}:${n}`;
}

/** String: one ApiKey record as JSON, found by the key's hash (the lookup every request makes). */
export function apiKeyKey(hash: string): string {
  return `rg:api-key:${hash}`;
}

/** Hash ApiKey id → hash, for listing and revoking by id. */
export const API_KEY_IDS = "rg:api-key-ids";
