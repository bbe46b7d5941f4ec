import type { AssetKind, Identity, IdentityKind, Release, UserId, UserSetKind } from "../../domain/model.js";
import { UnknownRelationIdError } from "../batch.js";
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash, randomBytes } from "node:crypto";
import { PagingStateFullError, type ApiKeyRecord, type ChangeNotifier, type GraphStore, type IngestBatch, type PagingStateClaim, type PagingStateRenewal, type WriteOptions } from "../store.js";
import { withDeadline } from "./deadline.js";
import { COMMAND_TIMEOUT_MS, connectRedis, unavailable, type RedisConnection, type RedisStoreOptions, type Reply } from "./connection.js";
import {
  API_KEY_IDS,
  apiKeyKey,
  assetAddressesKey,
  addressAssetsKey,
  assetHoldersKey,
  friendDescriptionsKey,
  identityIndexKey,
  keptSpaceKey,
  pagingStateHolderKey,
  pagingStateKey,
  pagingStateOwnerKey,
  PAGING_STATES,
  RELATION_ID_BY_USER,
  RELEASE_ALL,
  releaseKey,
  sharedSecretKey,
  userAssetsKey,
  userSetKey,
} from "./keys.js";
import { completeInterruptedWrite, writeBatch } from "./write/apply.js";
import { readRelationIds, readUsers } from "./write/plan.js";
import { withWriteLease } from "./write-lease.js";
import { hashGetMany, intersectSets, scanHash, scanSet, setHasMany } from "./set-reads.js";
import { startTracking, type RedisTracking } from "./tracking.js";
import { readWithinBound } from "../bounded-sets.js";

export type { RedisStoreOptions } from "./connection.js";

/**
 * The redis engine, over one standalone server ("redis") or a Redis Cluster ("redis-cluster").
 * Connects before resolving; rejects with StoreUnavailableError when Redis does not answer.
 * Key layout: keys.ts. Every failure of a method surfaces as StoreUnavailableError. It caches
 * nothing itself; it reports every change any process makes (tracking.ts), for the cache layer.
 */
export async function createRedisStore(options: RedisStoreOptions, writing: RedisEngineOptions = {}): Promise<GraphStore & ChangeNotifier> {
  const redis = await connectRedis(options, writing.fastPaths);
  let tracking: RedisTracking;
  try {
    tracking = writing.tracking === false ? untracked() : await startTracking(() => redis.dataNodes());
  } catch (cause) {
    await redis.close();
    throw unavailable(cause);
  }
  const store = guardAll(redisGraphStore(redis, writing, tracking));
  return {
    ...store,
    onChange: (listener) => tracking.onChange(listener),
    get watching() {
      return tracking.watching;
    },
    caughtUp: () => tracking.caughtUp(),
  };
}

/** How the redis engine writes, whether it reports changes, and how it reads UserId sets. */
export interface RedisEngineOptions {
  /** The write lease's time (write-lease.ts); by default DEFAULT_WRITE_LEASE_MS. */
  leaseMs?: number;
  /**
   * false opens no tracking connections: for processes that serve no cached reads (ingest, the feed),
   * which would otherwise receive an invalidation for every key they write themselves. Such a store
   * reports nothing and says it is not watching, so no cache layer may serve it.
   */
  tracking?: boolean;
  /**
   * FAST_PATHS: on a standalone server, id-set reads and bulk writes go over RESP sockets of the
   * engine's own (resp/); node-redis otherwise, and always on a cluster. Default false.
   */
  fastPaths?: boolean;
}

/** What work under the write lease knows (redisGraphStore's leaseHolder). */
interface LeaseHold {
  /** relationIds looked up since the lease was taken or last written under, with their ids (null: not stored). */
  relationIds: Map<string, UserId | null>;
  /** Writes begun under this hold, and those not yet finished: a lookup that overlaps one is not kept. */
  writesBegun: number;
  writing: number;
}

/** Tracking that reports nothing, for a store no cache layer serves. */
function untracked(): RedisTracking {
  return { onChange: () => () => {}, watching: false, caughtUp: async () => {}, close: async () => {} };
}

function redisGraphStore(redis: RedisConnection, writing: RedisEngineOptions, tracking: RedisTracking): GraphStore {
  let closed: Promise<void> | null = null;
  /**
   * Set inside work that holds the write lease, so that writes within it do not wait for it again.
   * It also keeps the relationIds looked up under the lease since the last write: nobody else writes
   * meanwhile, so the next write plans from them rather than reading them again (a load's validation
   * looks up every stored user it names, and its plan needs the same ids).
   */
  const leaseHolder = new AsyncLocalStorage<LeaseHold>();
  const asOnlyWriter = <T>(work: () => Promise<T>, onNotice?: (message: string) => void): Promise<T> => {
    if (leaseHolder.getStore()) return work();
    const leased = async () => {
      const completed = await completeInterruptedWrite(redis);
      if (completed > 0) onNotice?.(`completed an interrupted write of ${completed.toLocaleString("en-US")} records first`);
      return leaseHolder.run({ relationIds: new Map(), writesBegun: 0, writing: 0 }, work);
    };
    return withWriteLease(redis, leased, {
      ttlMs: writing.leaseMs,
      onWait: (holder) => onNotice?.(`waiting for the write lease held by ${holder}`),
    });
  };
  const toIds = (members: string[]) => members.map(Number);
  const setSizes = (keys: readonly string[]) => redis.idSets.sizes(keys);
  /**
   * Members of each set of UserIds no larger than maxSize (larger ones: null, unread), sized first
   * (see resp/id-set-reader.ts for why they may bypass node-redis). Unbounded: the caller sized them already (the
   * cache layer does), so they are read at once.
   */
  const boundedMembers = async (keys: readonly string[], maxSize: number): Promise<(UserId[] | null)[]> => {
    if (maxSize === Number.POSITIVE_INFINITY) return redis.idSets.members(keys);
    return readWithinBound(keys, await setSizes(keys), maxSize, (readable) => redis.idSets.members(readable));
  };

  return {
    engine: redis.engine,
    async ping() {
      await redis.send(undefined, ["PING"]);
    },
    close() {
      closed ??= Promise.all([tracking.close(), redis.close()]).then(() => {});
      return closed;
    },

    async resolve(identities: readonly Identity[]) {
      const kinds: IdentityKind[] = ["address", "social", "game"];
      const found = new Map<string, string | null>();
      await Promise.all(
        kinds.map(async (kind) => {
          const values = [...new Set(identities.filter((i) => i.kind === kind).map((i) => i.value))];
          const ids = await hashGetMany(redis, identityIndexKey(kind), values);
          values.forEach((value, i) => found.set(`${kind}:${value}`, ids[i] ?? null));
        }),
      );
      return identities.map(({ kind, value }) => toId(found.get(`${kind}:${value}`)));
    },
    async resolveRelationIds(relationIds: readonly string[]) {
      const hold = leaseHolder.getStore();
      const writesBegun = hold?.writesBegun;
      const ids = await readRelationIds(redis, relationIds);
      // Kept only when read with no write under way or begun since: it holds for the next write.
      if (hold && hold.writing === 0 && hold.writesBegun === writesBegun) relationIds.forEach((relationId, i) => hold.relationIds.set(relationId, ids[i]!));
      return ids;
    },
    users(ids: readonly UserId[]) {
      return readUsers(redis, ids);
    },
    async relationIds(ids: readonly UserId[]) {
      const found = await hashGetMany(redis, RELATION_ID_BY_USER, ids.map(String));
      return found.map((relationId) => relationId ?? "");
    },

    async userSet(kind: UserSetKind, id: UserId) {
      return toIds(await scanSet(redis, userSetKey(kind, id)));
    },
    userSetSizes(kind: UserSetKind, ids: readonly UserId[]) {
      return setSizes(ids.map((id) => userSetKey(kind, id)));
    },
    userSetsBounded(kind: UserSetKind, ids: readonly UserId[], maxSize: number) {
      return boundedMembers(
        ids.map((id) => userSetKey(kind, id)),
        maxSize,
      );
    },
    async userSetIntersection(kind: UserSetKind, ids: readonly UserId[]) {
      return toIds(await intersectSets(redis, ids.map((id) => userSetKey(kind, id))));
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
      return asOnlyWriter(async () => {
        // Handed over and forgotten: the write changes what they say.
        const hold = leaseHolder.getStore()!;
        const knownIds = hold.relationIds;
        hold.relationIds = new Map();
        hold.writesBegun++;
        hold.writing++;
        try {
          await writeBatch(redis, batch, { ...options, knownIds });
        } finally {
          hold.writing--;
        }
      }, options.onNotice);
    },
    exclusive<T>(work: () => Promise<T>, options: Pick<WriteOptions, "onNotice"> = {}) {
      return asOnlyWriter(work, options.onNotice);
    },
    keptState(space: string, fields: readonly string[]) {
      return hashGetMany(redis, keptSpaceKey(space), fields);
    },
    keptSpace(space: string) {
      return scanHash(redis, keptSpaceKey(space));
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

    async putPagingState(key: string, value: string, ttlSeconds: number, { owner, holder, limits }: PagingStateClaim = {}) {
      const state = pagingStateKey(key);
      const index = owner === undefined ? null : pagingStateOwnerKey(owner);
      const share = holder === undefined || !limits ? null : pagingStateHolderKey(holder);
      const ttl = String(ttlSeconds);
      const now = Date.now();
      const expiresAt = String(now + ttlSeconds * 1000);
      // Sent together: one round trip on a standalone server (node-redis pipelines them), one per
      // node on a cluster. Erasing the owner deletes what their index lists.
      const none = Promise.resolve<[number, number]>([0, 0]);
      const stored = redis.send(state, ["SET", state, value, "EX", ttl]);
      const ownerIndex =
        index === null ? none : runScript<[number, number]>(redis, ADD_TO_OWNER_INDEX, index, [state, ttl]);
      const everyState = !limits
        ? none
        : runScript<[number, number]>(redis, ADD_TO_ALL_STATES, PAGING_STATES, [state, expiresAt, String(now)]);
      // The holder's share is checked and taken in one script, so that concurrent puts of one holder
      // never pass its bound together.
      const holderShare =
        share === null || !limits
          ? Promise.resolve<[number, string]>([0, ""])
          : runScript<[number, string]>(redis, ADD_TO_HOLDER_SHARE, share, [state, expiresAt, String(now), String(limits.perHolder)]);
      // Awaited together, so that no failed command's rejection goes unhandled.
      const [, [added, owned], [addedAll, all], [claimed, heldUntil]] = await Promise.all([stored, ownerIndex, everyState, holderShare]);
      if (!limits) return;
      /**
       * Undoes what this put added, and refuses. A state new to the count of all states goes again;
       * one counted there before (another holder's, live) was only renewed, and stays as it was.
       */
      const refuse = async (limit: "perOwner" | "perHolder" | "total", retryAfterMs: number) => {
        const fresh = addedAll === 1;
        await Promise.all([
          fresh ? redis.send(state, ["DEL", state]) : null,
          fresh && index !== null ? redis.send(index, ["SREM", index, state]) : null,
          fresh ? redis.send(PAGING_STATES, ["ZREM", PAGING_STATES, state]) : null,
          share !== null && claimed === 1 ? redis.send(share, ["ZREM", share, state]) : null,
        ]);
        throw new PagingStateFullError(limit, Math.max(1, Math.ceil(retryAfterMs / 1000)));
      };
      // The holder's share is full. Another holder's live state is never deleted to make room.
      if (claimed === -1) await refuse("perHolder", Number(heldUntil) - now);
      // A key put again only renewed its state. Concurrent puts may each see the other and both
      // refuse: the bound holds, and errs on the side of refusing.
      if (addedAll === 1 && all > limits.total) {
        const [, oldest] = await redis.send<string[]>(PAGING_STATES, ["ZRANGE", PAGING_STATES, "0", "0", "WITHSCORES"]);
        await refuse("total", Number(oldest ?? 0) - now);
      }
      if (index !== null && added === 1 && owned > limits.perOwner) {
        // The index also lists states that expired since: forget those, and count again.
        const listed = (await scanSet(redis, index)).filter((listedState) => listedState !== state);
        const ttls = await Promise.all(listed.map((listedState) => redis.send<number>(listedState, ["PTTL", listedState])));
        const expired = listed.filter((_, i) => ttls[i]! < 0);
        if (expired.length > 0) await redis.send(index, ["SREM", index, ...expired]);
        const liveTtls = ttls.filter((remaining) => remaining >= 0);
        if (liveTtls.length >= limits.perOwner) await refuse("perOwner", Math.min(...liveTtls));
      }
    },
    async getPagingState(key: string, renew?: PagingStateRenewal) {
      const state = pagingStateKey(key);
      if (!renew) return redis.send<string | null>(state, ["GET", state]);
      const ttl = String(renew.ttlSeconds);
      const expiresAt = String(Date.now() + renew.ttlSeconds * 1000);
      const index = renew.owner === undefined ? null : pagingStateOwnerKey(renew.owner);
      const share = renew.holder === undefined ? null : pagingStateHolderKey(renew.holder);
      // One round trip: the state's new time, its owner's index (which outlives every state it
      // lists), its expiry in the count of all states, if it is counted there (XX), and in its
      // holder's share, if the holder has it counted.
      const [value] = await Promise.all([
        redis.send<string | null>(state, ["GETEX", state, "EX", ttl]),
        index === null ? null : redis.send(index, ["EXPIRE", index, ttl]),
        redis.send(PAGING_STATES, ["ZADD", PAGING_STATES, "XX", "GT", expiresAt, state]),
        share === null ? null : runScript(redis, RENEW_IN_HOLDER_SHARE, share, [expiresAt, state, String(renew.ttlSeconds * 1000)]),
      ]);
      return value;
    },

    async sharedSecret(name: string) {
      const key = sharedSecretKey(name);
      // One script, so that concurrent first asks all read the value that won the SET NX.
      const hex = await redis.send<string>(key, ["EVAL", "redis.call('SET', KEYS[1], ARGV[1], 'NX') return redis.call('GET', KEYS[1])", "1", key, randomBytes(32).toString("hex")]);
      return Buffer.from(hex, "hex");
    },
    evalScript(script: string, keys: readonly string[], args: readonly string[]) {
      return redis.send(keys[0], ["EVAL", script, String(keys.length), ...keys, ...args]);
    },
  };
}

/** A Lua script and its SHA-1, by which Redis knows it once loaded. */
interface Script {
  source: string;
  sha: string;
}

function script(source: string): Script {
  return { source, sha: createHash("sha1").update(source).digest("hex") };
}

/**
 * Runs a script over one key by its SHA-1, sending the source only to a server that does not know
 * it yet (NOSCRIPT): what EVALSHA saves is the source on every call, and hashing it on the server.
 */
async function runScript<T extends Reply>(redis: RedisConnection, { source, sha }: Script, key: string, args: string[]): Promise<T> {
  try {
    return await redis.send<T>(key, ["EVALSHA", sha, "1", key, ...args]);
  } catch (error) {
    if (!String((error as Error)?.message).startsWith("NOSCRIPT")) throw error;
    return redis.send<T>(key, ["EVAL", source, "1", key, ...args]);
  }
}

/**
 * Adds a paging state (ARGV[1]) to its owner's index (KEYS[1]), which lives as long as its newest
 * state (ARGV[2] seconds): whether it was new, and how many the index lists. One command instead of three.
 */
const ADD_TO_OWNER_INDEX = script(`
local added = redis.call('SADD', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {added, redis.call('SCARD', KEYS[1])}`);

/**
 * Adds a paging state (ARGV[1]) expiring at ARGV[2] (ms) to PAGING_STATES (KEYS[1]), forgetting
 * those expired by ARGV[3]: whether it was new, and how many are live.
 */
const ADD_TO_ALL_STATES = script(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
local added = redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return {added, redis.call('ZCARD', KEYS[1])}`);

/**
 * Counts a paging state (ARGV[1]), live until ARGV[2] (ms), toward a holder's share (KEYS[1]) of at
 * most ARGV[4], forgetting counts ended by ARGV[3]: {1, ''} when newly counted, {0, ''} when it was
 * counted already (its time renewed), {-1, the first count's end} when the share is full. The set
 * lives as long as its newest count.
 */
const ADD_TO_HOLDER_SHARE = script(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return {-1, redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]}
end
local added = redis.call('ZADD', KEYS[1], 'GT', ARGV[2], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
return {added, ''}`);

/**
 * Renews a state (ARGV[2]) a holder's share (KEYS[1]) has counted, to end at ARGV[1] (ms, ARGV[3]
 * from now), and the share's own time with it; a state the share does not count is not added.
 */
const RENEW_IN_HOLDER_SHARE = script(`
if redis.call('ZADD', KEYS[1], 'XX', 'GT', 'CH', ARGV[1], ARGV[2]) == 1 and redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('PEXPIREAT', KEYS[1], ARGV[1])
end
return 0`);

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
        if (cause instanceof UnknownRelationIdError || cause instanceof PagingStateFullError) throw cause;
        throw unavailable(cause);
      }
    };
  }
  return guarded as unknown as GraphStore;
}
