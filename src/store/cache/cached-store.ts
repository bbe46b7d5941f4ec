import type { AssetKind, UserId, UserRecord, UserSetKind } from "../../domain/model.js";
import type { CacheStats, ChangedPart, ChangeNotifier, GraphStore, IngestBatch, WriteOptions } from "../store.js";
import { BoundedMap, IdTable } from "./bounded-map.js";
import { KeyEpochs } from "./key-epochs.js";
import { readWithinBound } from "../bounded-sets.js";

/** How much the read caches hold; the defaults suit a server with a few GB of heap. */
export interface CacheLimits {
  /** User records. */
  users: number;
  /** relationIds (about 100 bytes each); past it that cache starts over. */
  relationIds: number;
  /** Intersections (each over PAGED_INTERSECTION ids). */
  intersections: number;
  /** Set sizes (a few dozen bytes each). */
  setSizes: number;
  /** Set members over all cached sets (UserIds, 8 bytes each in a packed array). */
  setMembers: number;
}

const DEFAULT_LIMITS: CacheLimits = {
  users: 100_000,
  relationIds: 2_000_000,
  intersections: 1_000,
  setSizes: 1_000_000,
  // 64 MB, room for the neighbourhoods of thousands of users.
  setMembers: 8_000_000,
};

/**
 * An intersection longer than the largest page (100) is read again for every page of its cursor
 * chain, and is what two hubs share: SINTER of two hubs is costly for Redis, which would cap how many
 * such pages it serves a second. Those are kept; short ones are cheap to recompute.
 */
const PAGED_INTERSECTION = 100;

/**
 * Wraps an engine in read caches that stay right under writes: users, relationIds, set sizes and
 * members, and long intersections. The engine reports which parts of the graph change, whichever
 * process changes them (ChangeNotifier), and exactly the entries holding those parts are dropped;
 * while it cannot report (`watching` false), every read goes to the engine. A value whose load
 * overlapped an invalidation of its key is answered but not kept (KeyEpochs).
 */
export function createCachedStore(
  engine: GraphStore & ChangeNotifier,
  limits: Partial<CacheLimits> = {},
): GraphStore & ChangeNotifier {
  const max: CacheLimits = { ...DEFAULT_LIMITS, ...limits };
  const userEpochs = new KeyEpochs<UserId>();
  const setEpochs = new KeyEpochs<SetCacheKey>();
  const userCache = new BoundedMap<UserId, UserRecord>(max.users);
  // Recommendations and long mutual-friend lists order thousands of ids by relationId per call, so
  // this cache keeps a loop of its own (through a BoundedMap it was a large share of a recommendation).
  const relationIdCache = new IdTable<string>();
  const setSizeCache = new BoundedMap<SetCacheKey, number>(max.setSizes);
  const setMemberCache = new BoundedMap<SetCacheKey, UserId[]>(max.setMembers, (members) => members.length);
  /** The cached intersections over each user set, to drop them with it. */
  const intersectionsOfSet = new Map<number, Set<string>>();
  const forgetIntersection = (key: string) => {
    for (const setKey of setKeysOfIntersection(key)) {
      const keys = intersectionsOfSet.get(setKey);
      keys?.delete(key);
      if (keys?.size === 0) intersectionsOfSet.delete(setKey);
    }
  };
  const intersectionCache = new BoundedMap<string, UserId[]>(max.intersections, () => 1, forgetIntersection);
  /** Hits and misses of each cache, for GET /metrics; lookups made while the engine is not watching bypass the caches and are not counted. */
  const lookups = {
    users: newTally(),
    relationIds: newTally(),
    setSizes: newTally(),
    setMembers: newTally(),
    intersections: newTally(),
  };

  const dropSet = (key: SetCacheKey) => {
    setEpochs.invalidate(key);
    setSizeCache.delete(key);
    setMemberCache.delete(key);
    if (typeof key !== "number") return;
    for (const intersection of intersectionsOfSet.get(key) ?? []) {
      intersectionCache.delete(intersection);
      forgetIntersection(intersection);
    }
  };
  const drop = (parts: readonly ChangedPart[]) => {
    for (const part of parts) {
      switch (part.part) {
        case "user":
          userEpochs.invalidate(part.id);
          userCache.delete(part.id);
          relationIdCache.delete(part.id);
          break;
        case "userSet":
          dropSet(userSetCacheKey(part.kind, part.id));
          break;
        case "assetHolders":
          dropSet(assetCacheKey(part.kind, part.asset));
          break;
        case "everything":
          userEpochs.invalidateAll();
          setEpochs.invalidateAll();
          for (const cache of [userCache, relationIdCache, setSizeCache, setMemberCache, intersectionCache]) cache.clear();
          intersectionsOfSet.clear();
          break;
      }
    }
  };
  const unsubscribe = engine.onChange(drop);

  /** SCARD of each set, cached: recommendations size every neighbour's sets on every call. */
  const setSizes = (keys: readonly SetCacheKey[], load: (missing: SetCacheKey[]) => Promise<number[]>) =>
    cachedMany(setSizeCache, setEpochs, keys, load, lookups.setSizes) as Promise<number[]>;
  /**
   * Members of each set no larger than maxSize (larger ones: null, unread), sized first, both
   * cached: the neighbourhoods recommendations expand overlap from call to call, and reading their
   * members was most of a recommendation's CPU and garbage.
   */
  const boundedMembers = async (
    keys: readonly SetCacheKey[],
    maxSize: number,
    loadSizes: (missing: SetCacheKey[]) => Promise<number[]>,
    loadMembers: (missing: SetCacheKey[]) => Promise<(UserId[] | null)[]>,
  ): Promise<(UserId[] | null)[]> => {
    const sizes = await setSizes(keys, loadSizes);
    return readWithinBound(keys, sizes, maxSize, (readable) => cachedMany(setMemberCache, setEpochs, readable, loadMembers, lookups.setMembers));
  };
  // The engine is asked for members of sets the cache has just sized: no bound, so it need not size
  // them again.
  const userSetLoaders = (kind: UserSetKind) => ({
    sizes: (missing: SetCacheKey[]) => engine.userSetSizes(kind, missing.map(userOfSetKey)),
    members: (missing: SetCacheKey[]) => engine.userSetsBounded(kind, missing.map(userOfSetKey), Number.POSITIVE_INFINITY),
  });
  const assetLoaders = (kind: AssetKind) => ({
    sizes: (missing: SetCacheKey[]) => engine.assetHolderCounts(kind, missing.map(assetOfSetKey)),
    members: (missing: SetCacheKey[]) => engine.assetHoldersBounded(kind, missing.map(assetOfSetKey), Number.POSITIVE_INFINITY),
  });

  let closed: Promise<void> | null = null;
  return {
    engine: engine.engine,
    ping: () => engine.ping(),
    close() {
      closed ??= (async () => {
        unsubscribe();
        await engine.close();
      })();
      return closed;
    },
    onChange: (listener) => engine.onChange(listener),
    get watching() {
      return engine.watching;
    },
    caughtUp: () => engine.caughtUp(),

    resolve: (identities) => engine.resolve(identities),
    resolveRelationIds: (relationIds) => engine.resolveRelationIds(relationIds),
    users(ids: readonly UserId[]) {
      if (!engine.watching) return engine.users(ids);
      return cachedMany(userCache, userEpochs, ids, (missing) => engine.users(missing), lookups.users);
    },
    async relationIds(ids: readonly UserId[]) {
      if (!engine.watching) return engine.relationIds(ids);
      const known: (string | undefined)[] = new Array<string | undefined>(ids.length);
      const missing = new Set<UserId>();
      for (let i = 0; i < ids.length; i++) {
        const relationId = relationIdCache.get(ids[i]!);
        if (relationId === undefined) missing.add(ids[i]!);
        else known[i] = relationId;
      }
      lookups.relationIds.misses += missing.size;
      lookups.relationIds.hits += ids.length - missing.size;
      if (missing.size === 0) return known as string[];
      const startedAt = userEpochs.now();
      const asked = [...missing];
      const found = await engine.relationIds(asked);
      const loaded = new Map(asked.map((id, i) => [id, found[i]]));
      if (relationIdCache.size + asked.length > max.relationIds) relationIdCache.clear();
      for (const [id, relationId] of loaded) {
        if (relationId && userEpochs.unchangedSince(id, startedAt)) relationIdCache.set(id, relationId);
      }
      return ids.map((id, i) => known[i] ?? loaded.get(id) ?? "");
    },

    userSet: (kind, id) => engine.userSet(kind, id),
    userSetSizes(kind: UserSetKind, ids: readonly UserId[]) {
      if (!engine.watching) return engine.userSetSizes(kind, ids);
      return setSizes(userSetCacheKeys(kind, ids), userSetLoaders(kind).sizes);
    },
    userSetsBounded(kind: UserSetKind, ids: readonly UserId[], maxSize: number) {
      if (!engine.watching) return engine.userSetsBounded(kind, ids, maxSize);
      const load = userSetLoaders(kind);
      return boundedMembers(userSetCacheKeys(kind, ids), maxSize, load.sizes, load.members);
    },
    async userSetIntersection(kind: UserSetKind, ids: readonly UserId[]) {
      if (!engine.watching || ids.length === 0) return engine.userSetIntersection(kind, ids);
      const sets = userSetCacheKeys(kind, ids).sort((a, b) => a - b);
      const key = sets.join(",");
      const cached = intersectionCache.get(key);
      if (cached !== undefined) {
        lookups.intersections.hits += 1;
        return cached;
      }
      lookups.intersections.misses += 1;
      const startedAt = setEpochs.now();
      const members = await engine.userSetIntersection(kind, ids);
      if (members.length > PAGED_INTERSECTION && sets.every((set) => setEpochs.unchangedSince(set, startedAt))) {
        intersectionCache.set(key, members);
        for (const set of sets) {
          let keys = intersectionsOfSet.get(set);
          if (!keys) intersectionsOfSet.set(set, (keys = new Set()));
          keys.add(key);
        }
      }
      return members;
    },

    userAssets: (kind, id) => engine.userAssets(kind, id),
    assetHolderCounts(kind: AssetKind, assets: readonly string[]) {
      if (!engine.watching) return engine.assetHolderCounts(kind, assets);
      return setSizes(
        assets.map((asset) => assetCacheKey(kind, asset)),
        assetLoaders(kind).sizes,
      );
    },
    assetHoldersBounded(kind: AssetKind, assets: readonly string[], maxSize: number) {
      if (!engine.watching) return engine.assetHoldersBounded(kind, assets, maxSize);
      const load = assetLoaders(kind);
      return boundedMembers(
        assets.map((asset) => assetCacheKey(kind, asset)),
        maxSize,
        load.sizes,
        load.members,
      );
    },
    contractIntersection: (addresses) => engine.contractIntersection(addresses),
    addressesKnown: (addresses) => engine.addressesKnown(addresses),
    release: (id) => engine.release(id),
    friendDescriptions: (id, peers) => engine.friendDescriptions(id, peers),

    async write(batch: IngestBatch, options?: WriteOptions) {
      try {
        await engine.write(batch, options);
      } finally {
        // Even a write that failed halfway changed something; and this process's next read must
        // see its own write, not wait for the engine's report of it.
        await engine.caughtUp();
      }
    },

    async exclusive(work, options) {
      try {
        return await engine.exclusive(work, options);
      } finally {
        // It may have completed another writer's interrupted write.
        await engine.caughtUp();
      }
    },

    // Read only by the writer that keeps it, under the write lease: nothing to cache.
    keptState: (space, fields) => engine.keptState(space, fields),
    keptSpace: (space) => engine.keptSpace(space),
    putApiKey: (record) => engine.putApiKey(record),
    apiKeyByHash: (hash) => engine.apiKeyByHash(hash),
    listApiKeys: () => engine.listApiKeys(),
    revokeApiKey: (id, at) => engine.revokeApiKey(id, at),
    putPagingState: (key, value, ttlSeconds, claim) => engine.putPagingState(key, value, ttlSeconds, claim),
    getPagingState: (key, renew) => engine.getPagingState(key, renew),
    sharedSecret: (name) => engine.sharedSecret(name),
    cacheStats(): CacheStats {
      const sizes = { users: userCache.size, relationIds: relationIdCache.size, setSizes: setSizeCache.size, setMembers: setMemberCache.size, intersections: intersectionCache.size };
      return Object.fromEntries(Object.entries(lookups).map(([name, tally]) => [name, { ...tally, entries: sizes[name as keyof typeof sizes] }]));
    },
    ...(engine.evalScript && { evalScript: engine.evalScript.bind(engine) }),
  };
}

/**
 * The values of `keys` (null where `load` finds none): cached ones at once, the others through
 * `load`, which are kept unless their key was invalidated while they loaded.
 */
export async function cachedMany<K, V>(
  cache: BoundedMap<K, V>,
  epochs: KeyEpochs<K>,
  keys: readonly K[],
  load: (keys: K[]) => Promise<(V | null)[]>,
  tally?: Tally,
): Promise<(V | null)[]> {
  // One pass, and no other array while everything is held, as it mostly is: a recommendation asks
  // this a dozen times.
  const found = new Array<V | null>(keys.length);
  let missed: K[] | null = null;
  for (let i = 0; i < keys.length; i++) {
    const value = cache.get(keys[i]!);
    if (value === undefined) (missed ??= []).push(keys[i]!);
    found[i] = value ?? null;
  }
  if (tally) tally.hits += keys.length - (missed?.length ?? 0);
  if (missed === null) return found;
  const missing = [...new Set(missed)];
  if (tally) tally.misses += missing.length;
  const startedAt = epochs.now();
  const loaded = await load(missing);
  const byKey = new Map<K, V>();
  missing.forEach((key, i) => {
    const value = loaded[i];
    if (value == null) return;
    byKey.set(key, value);
    if (epochs.unchangedSince(key, startedAt)) cache.set(key, value);
  });
  return keys.map((key, i) => found[i] ?? byKey.get(key) ?? null);
}

/** Lookups of one cache: a key asked several times in one call counts once as a miss. */
interface Tally {
  hits: number;
  misses: number;
}

function newTally(): Tally {
  return { hits: 0, misses: 0 };
}

/**
 * How the set caches name a set: a number for a user's set, a string for an asset's holders. A
 * recommendation looks up ~170 user sets at random among millions of entries, and building and
 * hashing a key string for each cost ten times a number.
 */
type SetCacheKey = number | string;

const USER_SET_KINDS: readonly UserSetKind[] = ["friends", "following", "followers"];

function userSetCacheKey(kind: UserSetKind, id: UserId): number {
  return id * USER_SET_KINDS.length + USER_SET_KINDS.indexOf(kind);
}

function userSetCacheKeys(kind: UserSetKind, ids: readonly UserId[]): number[] {
  const offset = USER_SET_KINDS.indexOf(kind);
  return ids.map((id) => id * USER_SET_KINDS.length + offset);
}

function userOfSetKey(key: SetCacheKey): UserId {
  return Math.floor((key as number) / USER_SET_KINDS.length);
}

function assetCacheKey(kind: AssetKind, asset: string): string {
  return `${kind}:${asset}`;
}

function assetOfSetKey(key: SetCacheKey): string {
  return (key as string).slice((key as string).indexOf(":") + 1);
}

/** An intersection is cached under its sets' keys, sorted and joined by commas. */
function setKeysOfIntersection(key: string): number[] {
  return key.split(",").map(Number);
}
