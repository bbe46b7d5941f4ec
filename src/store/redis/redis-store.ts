import type { AssetKind, Identity, IdentityKind, Release, UserId, UserRecord, UserSetKind } from "../../domain/model.js";
import { UnknownRelationIdError } from "../batch.js";
import { AsyncLocalStorage } from "node:async_hooks";
import type { ApiKeyRecord, GraphStore, IngestBatch, WriteOptions } from "../store.js";
import { COMMAND_TIMEOUT_MS, connectRedis, unavailable, withDeadline, type RedisConnection, type RedisStoreOptions } from "./connection.js";
import {
  API_KEY_IDS,
  DATA_VERSION,
  apiKeyKey,
  assetAddressesKey,
  addressAssetsKey,
  assetHoldersKey,
  friendDescriptionsKey,
  identityIndexKey,
  pagingStateKey,
  pagingStateOwnerKey,
  RELATION_ID_BY_USER,
  RELATION_ID_INDEX,
  RELEASE_ALL,
  releaseKey,
  userAssetsKey,
  userSetKey,
} from "./keys.js";
import { completeInterruptedWrite, readUsers, writeBatch } from "./redis-write.js";
import { withWriteLease } from "./write-lease.js";
import { hashGetMany, intersectSets, scanSet, setHasMany } from "./set-reads.js";
import { DataVersion, IdTable } from "./versioned-cache.js";

export type { RedisStoreOptions } from "./connection.js";

/**
 * The redis engine, over one standalone server ("redis") or a Redis Cluster ("redis-cluster").
 * Connects before resolving; rejects with StoreUnavailableError when Redis does not answer.
 * Key layout: keys.ts. Every failure of a method surfaces as StoreUnavailableError.
 */
export async function createRedisStore(options: RedisStoreOptions, writing: RedisWriteOptions = {}): Promise<GraphStore> {
  const redis = await connectRedis(options);
  return guardAll(redisGraphStore(redis, writing));
}

/** How the redis engine writes. */
export interface RedisWriteOptions {
  /** The write lease's time (write-lease.ts); by default DEFAULT_WRITE_LEASE_MS. */
  leaseMs?: number;
}

function redisGraphStore(redis: RedisConnection, writing: RedisWriteOptions): GraphStore {
  let closed: Promise<void> | null = null;
  /** Set inside work that holds the write lease, so that writes within it do not wait for it again. */
  const leaseHolder = new AsyncLocalStorage<true>();
  const asOnlyWriter = <T>(work: () => Promise<T>, onNotice?: (message: string) => void): Promise<T> => {
    if (leaseHolder.getStore()) return work();
    const leased = async () => {
      const completed = await completeInterruptedWrite(redis);
      if (completed > 0) onNotice?.(`completed an interrupted write of ${completed.toLocaleString("en-US")} records first`);
      return leaseHolder.run(true, work);
    };
    return withWriteLease(redis, leased, {
      ttlMs: writing.leaseMs,
      onWait: (holder) => onNotice?.(`waiting for the write lease held by ${holder}`),
    });
  };
  const toIds = (members: string[]) => members.map(Number);
  const dataVersion = new DataVersion();
  // Recommendations and long mutual-friend lists order thousands of ids by relationId per call, so
  // this cache keeps a loop of its own (through VersionedMap it cost a recommendation ~20%). An id's
  // relationId never changes while the database lives, but a flushed and reloaded one reuses ids, so
  // it follows the data version like the others.
  const relationIdCache = dataVersion.track(new IdTable<string>());
  const userCache = dataVersion.cache<UserId, UserRecord>(CACHED_USERS);
  const intersectionCache = dataVersion.cache<string, UserId[]>(CACHED_INTERSECTIONS);
  const setSizeCache = dataVersion.cache<SetCacheKey, number>(CACHED_SET_SIZES);
  const setMemberCache = dataVersion.cache<SetCacheKey, UserId[]>(CACHED_SET_MEMBERS, (members) => members.length);
  const readDataVersion = () => redis.send<string | null>(DATA_VERSION, ["GET", DATA_VERSION]);
  /** Every query reads the version as it starts (resolve); this covers a call made without one. */
  const trustDataVersion = async () => {
    if (!dataVersion.trusted) dataVersion.note(await readDataVersion());
  };
  /** SCARD of each set, cached: recommendations size every neighbour's sets on every call. */
  const setSizes = async (keys: readonly SetCacheKey[]) => {
    await trustDataVersion();
    return (await setSizeCache.getMany(keys, (missing) => redis.idSets.sizes(missing.map(redisKeyOf)))) as number[];
  };
  /**
   * Members of each set of UserIds no larger than maxSize (larger ones: null, unread), cached: the
   * neighbourhoods recommendations expand overlap from call to call, and reading their members
   * was most of a recommendation's CPU and garbage (see id-sets.ts for why they bypass node-redis).
   */
  const boundedMembers = async (keys: readonly SetCacheKey[], maxSize: number): Promise<(UserId[] | null)[]> => {
    const sizes = await setSizes(keys);
    const readable = keys.filter((_, i) => sizes[i]! > 0 && sizes[i]! <= maxSize);
    const members = await setMemberCache.getMany(readable, (missing) => redis.idSets.members(missing.map(redisKeyOf)));
    let next = 0;
    return keys.map((_, i) => {
      if (sizes[i]! > maxSize) return null;
      if (sizes[i]! === 0) return [];
      const set = members[next++] ?? [];
      // It grew past the bound after it was sized: as if sized now.
      return set.length > maxSize ? null : set;
    });
  };

  return {
    engine: redis.engine,
    async ping() {
      await redis.send(undefined, ["PING"]);
    },
    close() {
      closed ??= redis.close();
      return closed;
    },

    async resolve(identities: readonly Identity[]) {
      const kinds: IdentityKind[] = ["address", "social", "game"];
      const found = new Map<string, string | null>();
      // Every query starts here, so the data version rides along in the same round trip.
      const [version] = await Promise.all([
        readDataVersion(),
        ...kinds.map(async (kind) => {
          const values = [...new Set(identities.filter((i) => i.kind === kind).map((i) => i.value))];
          const ids = await hashGetMany(redis, identityIndexKey(kind), values);
          values.forEach((value, i) => found.set(`${kind}:${value}`, ids[i] ?? null));
        }),
      ]);
      dataVersion.note(version);
      return identities.map(({ kind, value }) => toId(found.get(`${kind}:${value}`)));
    },
    async resolveRelationIds(relationIds: readonly string[]) {
      return (await hashGetMany(redis, RELATION_ID_INDEX, relationIds)).map(toId);
    },
    async users(ids: readonly UserId[]) {
      await trustDataVersion();
      return userCache.getMany(ids, (missing) => readUsers(redis, missing));
    },
    async relationIds(ids: readonly UserId[]) {
      await trustDataVersion();
      const known: (string | undefined)[] = new Array<string | undefined>(ids.length);
      const missing = new Set<UserId>();
      for (let i = 0; i < ids.length; i++) {
        const relationId = relationIdCache.get(ids[i]!);
        if (relationId === undefined) missing.add(ids[i]!);
        else known[i] = relationId;
      }
      if (missing.size === 0) return known as string[];
      const generation = dataVersion.generation;
      const asked = [...missing];
      const found = await hashGetMany(redis, RELATION_ID_BY_USER, asked.map(String));
      const loaded = new Map(asked.map((id, i) => [id, found[i]]));
      // Kept only if the version did not change meanwhile: then they may be of the older database.
      if (generation === dataVersion.generation) {
        if (relationIdCache.size + asked.length > CACHED_RELATION_IDS) relationIdCache.clear();
        for (const [id, relationId] of loaded) if (relationId != null) relationIdCache.set(id, relationId);
      }
      return ids.map((id, i) => known[i] ?? loaded.get(id) ?? "");
    },

    async userSet(kind: UserSetKind, id: UserId) {
      return toIds(await scanSet(redis, userSetKey(kind, id)));
    },
    userSetSizes(kind: UserSetKind, ids: readonly UserId[]) {
      return setSizes(ids.map((id) => userSetCacheKey(kind, id)));
    },
    userSetsBounded(kind: UserSetKind, ids: readonly UserId[], maxSize: number) {
      return boundedMembers(
        ids.map((id) => userSetCacheKey(kind, id)),
        maxSize,
      );
    },
    async userSetIntersection(kind: UserSetKind, ids: readonly UserId[]) {
      await trustDataVersion();
      const intersect = async () => toIds(await intersectSets(redis, ids.map((id) => userSetKey(kind, id))));
      const key = `${kind}:${[...ids].sort((a, b) => a - b).join(",")}`;
      return intersectionCache.get(key, intersect, (members) => members.length > PAGED_INTERSECTION);
    },

    userAssets(kind: AssetKind, id: UserId) {
      return scanSet(redis, userAssetsKey(kind, id));
    },
    assetHolderCounts(kind: AssetKind, assets: readonly string[]) {
      return setSizes(assets.map((asset) => assetHoldersKey(kind, asset)));
    },
    assetHoldersBounded(kind: AssetKind, assets: readonly string[], maxSize: number) {
      return boundedMembers(
        assets.map((asset) => assetHoldersKey(kind, asset)),
        maxSize,
      );
    },
    contractIntersection(addresses: readonly string[]) {
      return intersectSets(
        redis,
        addresses.map((address) => addressAssetsKey("contracts", address)),
      );
    },
    async addressesKnown(addresses: readonly string[]) {
      const [owners, withContracts, withNfts] = await Promise.all([
        hashGetMany(redis, identityIndexKey("address"), addresses),
        setHasMany(redis, assetAddressesKey("contracts"), addresses),
        setHasMany(redis, assetAddressesKey("nfts"), addresses),
      ]);
      return addresses.map((_, i) => owners[i] != null || withContracts[i] === true || withNfts[i] === true);
    },

    async release(id: UserId): Promise<Release> {
      const members = await redis.send<string[]>(releaseKey(id), ["SMEMBERS", releaseKey(id)]);
      return members.includes(RELEASE_ALL) ? "*" : toIds(members);
    },
    async friendDescriptions(id: UserId, peers: readonly UserId[]) {
      const descriptions = await hashGetMany(redis, friendDescriptionsKey(id), peers.map(String));
      return descriptions.map((description) => description ?? "");
    },

    write(batch: IngestBatch, options: WriteOptions = {}) {
      return asOnlyWriter(() => writeBatch(redis, batch, options), options.onNotice);
    },
    exclusive<T>(work: () => Promise<T>, options: Pick<WriteOptions, "onNotice"> = {}) {
      return asOnlyWriter(work, options.onNotice);
    },

    async putApiKey(record: ApiKeyRecord) {
      const previousHash = await redis.send<string | null>(API_KEY_IDS, ["HGET", API_KEY_IDS, record.id]);
      if (previousHash !== null && previousHash !== record.hash) {
        await redis.send(apiKeyKey(previousHash), ["DEL", apiKeyKey(previousHash)]);
      }
      await redis.send(apiKeyKey(record.hash), ["SET", apiKeyKey(record.hash), JSON.stringify(record)]);
      await redis.send(API_KEY_IDS, ["HSET", API_KEY_IDS, record.id, record.hash]);
    },
    async apiKeyByHash(hash: string) {
      const value = await redis.send<string | null>(apiKeyKey(hash), ["GET", apiKeyKey(hash)]);
      return value === null ? null : (JSON.parse(value) as ApiKeyRecord);
    },
    async listApiKeys() {
      const hashes = await redis.send<string[]>(API_KEY_IDS, ["HVALS", API_KEY_IDS]);
      const values = await redis.getMany(hashes.map(apiKeyKey));
      return values.filter((value) => value !== null).map((value) => JSON.parse(value) as ApiKeyRecord);
    },
    async revokeApiKey(id: string, at: string) {
      const hash = await redis.send<string | null>(API_KEY_IDS, ["HGET", API_KEY_IDS, id]);
      const value = hash === null ? null : await redis.send<string | null>(apiKeyKey(hash), ["GET", apiKeyKey(hash)]);
      if (hash === null || value === null) return false;
      const record = JSON.parse(value) as ApiKeyRecord;
      // Revoking twice keeps the first revocation time.
      if (record.revokedAt === null) {
        await redis.send(apiKeyKey(hash), ["SET", apiKeyKey(hash), JSON.stringify({ ...record, revokedAt: at })]);
      }
      return true;
    },

    async putPagingState(key: string, value: string, ttlSeconds: number, owner?: UserId) {
      await redis.send(pagingStateKey(key), ["SET", pagingStateKey(key), value, "EX", String(ttlSeconds)]);
      if (owner === undefined) return;
      // The owner's index lives as long as its newest state; erasure deletes what it lists.
      const index = pagingStateOwnerKey(owner);
      await redis.send(index, ["SADD", index, pagingStateKey(key)]);
      await redis.send(index, ["EXPIRE", index, String(ttlSeconds)]);
    },
    getPagingState(key: string) {
      return redis.send<string | null>(pagingStateKey(key), ["GET", pagingStateKey(key)]);
    },
  };
}

/** Most user records kept in process for the current data version. */
const CACHED_USERS = 100_000;
/** Most intersections kept in process for the current data version (each over PAGED_INTERSECTION ids). */
const CACHED_INTERSECTIONS = 1_000;
/**
 * An intersection longer than the largest page (100) is read again for every page of its cursor
 * chain, and is what two hubs share: SINTER of two hubs costs Redis ~360 µs, which caps it near
 * 2,800 a second. Those are kept for the data version; short ones are cheap to recompute.
 */
const PAGED_INTERSECTION = 100;

/**
 * How the set caches name a set: a number for a user's set, the Redis key for an asset's holders. A
 * recommendation looks up ~170 user sets at random among millions of entries, and building and
 * hashing a key string for each cost ten times a number.
 */
type SetCacheKey = number | string;

const USER_SET_KINDS: readonly UserSetKind[] = ["friends", "following", "followers"];

function userSetCacheKey(kind: UserSetKind, id: UserId): number {
  return id * USER_SET_KINDS.length + USER_SET_KINDS.indexOf(kind);
}

function redisKeyOf(key: SetCacheKey): string {
  if (typeof key === "string") return key;
  const kind = key % USER_SET_KINDS.length;
  return userSetKey(USER_SET_KINDS[kind]!, (key - kind) / USER_SET_KINDS.length);
}

/** Most set sizes kept in process for the current data version (a few dozen bytes each). */
const CACHED_SET_SIZES = 1_000_000;
/**
 * Most set members (UserIds, 8 bytes each in a packed array) kept in process for the current data
 * version, over all cached sets: 64 MB, room for the neighbourhoods of thousands of users.
 */
const CACHED_SET_MEMBERS = 8_000_000;

/** Most relationIds kept in process for the current data version (about 100 bytes each); past it the cache starts over. */
const CACHED_RELATION_IDS = 2_000_000;

function toId(value: string | null | undefined): UserId | null {
  return value == null ? null : Number(value);
}

/**
 * Wraps every method so that any driver or connection failure becomes StoreUnavailableError, and
 * no call waits on a silent server longer than COMMAND_TIMEOUT_MS (bulk writes time each window).
 */
function guardAll(store: GraphStore): GraphStore {
  const guarded: Record<string, unknown> = { engine: store.engine };
  for (const [name, member] of Object.entries(store)) {
    if (typeof member !== "function") continue;
    if (name === "exclusive") {
      // The work's own errors are its caller's; only the lease's Redis traffic is the store's.
      guarded[name] = member;
      continue;
    }
    // Writes bound each window of commands themselves, and may wait for the write lease.
    const bounded = name !== "write";
    guarded[name] = async (...args: unknown[]) => {
      try {
        const call = (member as (...a: unknown[]) => Promise<unknown>)(...args);
        return await (bounded ? withDeadline(call, COMMAND_TIMEOUT_MS) : call);
      } catch (cause) {
        // A batch naming an unknown relationId is the caller's bug, not an outage.
        if (cause instanceof UnknownRelationIdError) throw cause;
        throw unavailable(cause);
      }
    };
  }
  return guarded as unknown as GraphStore;
}
