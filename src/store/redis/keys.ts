import type { AssetKind, IdentityKind, UserId, UserSetKind } from "../../domain/model.js";
import type { ChangedPart } from "../store.js";

/*
 * Every Redis key relgraph uses, in one place. All start with `rg:`.
 *
 * Per-user and per-address keys carry the id or address in the key name, so on a Redis Cluster
 * they spread over slots (and nodes): nothing ever needs two users' keys in one command, and the
 * reader intersects client-side on a cluster. User-to-user sets hold integer UserIds so that
 * Redis keeps them as compact intsets.
 */

/** Hash field → value: one space of the state a writer keeps beside the graph (store.ts KeptChange). */
export function keptSpaceKey(space: string): string {
  return `rg:kept:${space}`;
}

/** INCR sequence that allocates UserIds (1, 2, …). */
export const USER_ID_SEQUENCE = "rg:seq:user";

/** Hash relationId → UserId. */
export const RELATION_ID_INDEX = "rg:idx:relation-id";

/** Hash UserId → relationId, so that naming users does not need their whole record. */
export const RELATION_ID_BY_USER = "rg:idx:relation-id-by-user";

/** String: 32 random bytes (hex) named `name`, written once (SET NX) and read by every process on the store. */
export function sharedSecretKey(name: string): string {
  return `rg:secret:${name}`;
}

/** Hash address | lowercase social username | gameId → UserId. */
export function identityIndexKey(kind: IdentityKind): string {
  return `rg:idx:${kind}`;
}

/**
 * A family of per-user keys, each `prefix` followed by the UserId in decimal. Writers that encode
 * their commands as bytes (grouped-commands.ts) write such keys from the prefix and the number.
 */
export interface UserKeys {
  readonly prefix: string;
  key(id: UserId): string;
}

function userKeys(prefix: string): UserKeys {
  return { prefix, key: (id) => `${prefix}${id}` };
}

const USER_PREFIX = "rg:user:";

/** String: the user's record as JSON. */
export function userKey(id: UserId): string {
  return `${USER_PREFIX}${id}`;
}

const USER_SET_KINDS: readonly UserSetKind[] = ["friends", "following", "followers"];

function userSetPrefix(kind: UserSetKind): string {
  return `rg:${kind}:`;
}

/** Sets of UserIds: friends (undirected), following or followers of each user. */
export const USER_SETS: Readonly<Record<UserSetKind, UserKeys>> = {
  friends: userKeys(userSetPrefix("friends")),
  following: userKeys(userSetPrefix("following")),
  followers: userKeys(userSetPrefix("followers")),
};

/** Set of UserIds: friends (undirected), following or followers of one user. */
export function userSetKey(kind: UserSetKind, id: UserId): string {
  return USER_SETS[kind].key(id);
}

/** Hashes peer UserId → description of the friend relation between the user and that peer. */
export const FRIEND_DESCRIPTIONS = userKeys("rg:friend-description:");

/** Hash peer UserId → description of the friend relation between the user and that peer. */
export function friendDescriptionsKey(id: UserId): string {
  return FRIEND_DESCRIPTIONS.key(id);
}

/** Sets of the peers (UserIds) whose relation each user released; RELEASE_ALL means everyone. */
export const RELEASES = userKeys("rg:release:");

/** Set of the peers (UserIds) whose relation the user released; RELEASE_ALL means everyone. */
export function releaseKey(id: UserId): string {
  return RELEASES.key(id);
}

/** Sets of the users (UserIds) whose release names each user: what erasing the user must edit. */
export const RELEASED_TO = userKeys("rg:released-to:");

/** Set of the users (UserIds) whose release names this user: what erasing the user must edit. */
export function releasedToKey(id: UserId): string {
  return RELEASED_TO.key(id);
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

const ASSET_KINDS: readonly AssetKind[] = ["contracts", "nfts"];

function assetHoldersPrefix(kind: AssetKind): string {
  return `rg:holders-${kind}:`;
}

/** Set of UserIds holding one asset (reverse of userAssetsKey). */
export function assetHoldersKey(kind: AssetKind, asset: string): string {
  return `${assetHoldersPrefix(kind)}${asset}`;
}

/** String with a TTL: one paging state. */
export function pagingStateKey(key: string): string {
  return `rg:page:${key}`;
}

/**
 * Sorted set: the keys of the paging states put with limits, scored by when they expire (ms), so
 * that the live ones can be counted without a scan. A key erased early stays until its time: the
 * count errs high, never low.
 */
export const PAGING_STATES = "rg:pages";

/**
 * Sorted set with a TTL: the paging state keys one holder (an ApiKey, by its public id) has counted
 * toward its share, scored by when each count ends (ms). A state erased early stays until its time:
 * the count errs high, never low.
 */
export function pagingStateHolderKey(holder: string): string {
  return `rg:page-holder:${holder}`;
}

/** Set with a TTL: the paging state keys that erasing this user drops (their recommendation snapshots). */
export function pagingStateOwnerKey(id: UserId): string {
  return `rg:page-owner:${id}`;
}

/**
 * String with a TTL: the token of the one process allowed to write (write-lease.ts). Hash-tagged,
 * like the generation beside it, so that one script can read both on a cluster.
 */
export const WRITE_LEASE = "rg:{write-lease}";

/** String: how many times the write lease has been taken; a writer knows its own taking's number. */
export const WRITE_LEASE_GENERATION = "rg:{write-lease}:generation";

/** String with a TTL: the token of the writer that waits for the lease and takes it next (write-lease.ts). */
export const WRITE_LEASE_NEXT = "rg:{write-lease}:next";

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

/**
 * The key prefixes whose keys hold what the read caches keep (store/cache/): users, user sets and
 * asset holders. Server-assisted client-side caching (tracking.ts) watches exactly these. None is a
 * prefix of another, as Redis requires of broadcast prefixes.
 */
export const CACHED_KEY_PREFIXES: readonly string[] = [
  USER_PREFIX,
  ...USER_SET_KINDS.map(userSetPrefix),
  ...ASSET_KINDS.map(assetHoldersPrefix),
];

/**
 * The part of the graph a key under CACHED_KEY_PREFIXES holds (the inverse of userKey, userSetKey
 * and assetHoldersKey), or null for any other key. A user's relationId is named by its record: every
 * write that gives or takes an id's relationId rewrites or deletes the record too.
 */
export function changedPartOfKey(key: string): ChangedPart | null {
  if (key.startsWith(USER_PREFIX)) {
    const id = userIdOf(key.slice(USER_PREFIX.length));
    return id === null ? null : { part: "user", id };
  }
  for (const kind of USER_SET_KINDS) {
    const prefix = userSetPrefix(kind);
    if (!key.startsWith(prefix)) continue;
    const id = userIdOf(key.slice(prefix.length));
    return id === null ? null : { part: "userSet", kind, id };
  }
  for (const kind of ASSET_KINDS) {
    const prefix = assetHoldersPrefix(kind);
    if (key.startsWith(prefix)) return { part: "assetHolders", kind, asset: key.slice(prefix.length) };
  }
  return null;
}

/** The UserId a key suffix spells, exactly as the builders write it; null for anything else. */
function userIdOf(text: string): UserId | null {
  const id = Number(text);
  return Number.isSafeInteger(id) && id >= 0 && String(id) === text ? id : null;
}
