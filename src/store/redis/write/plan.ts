import { type AssetKind, type IdentityKind, type UserId, type UserRecord } from "../../../domain/model.js";
import { FollowColumns, FriendColumns, UnknownRelationIdError, identitiesOf, recordCount, relationColumns, staleIdentities, type RelationColumns } from "../../batch.js";
import { type IngestBatch, type KeptChange, type StreamAcknowledgement, type UserInput } from "../../store.js";
import { type RedisConnection } from "../connection.js";
import { RELATION_ID_BY_USER, RELATION_ID_INDEX, RELEASE_ALL, USER_ID_SEQUENCE, USER_SETS, addressAssetsKey, assetAddressesKey, assetHoldersKey, friendDescriptionsKey, identityIndexKey, keptSpaceKey, pagingStateOwnerKey, releaseKey, releasedToKey, type UserKeys, userAssetsKey, userKey, userSetKey } from "../keys.js";
import { GroupedMembers, KeyedCommands, type GroupedMembersOptions } from "../grouped-commands.js";
import { BulkStrings } from "../resp/command-buffer.js";
import { chunks } from "../command-chunks.js";
import { hashGetMany, readIdSets, scanSet, setHasMany } from "../set-reads.js";

/*
 * Planning a unit of changes from the state before it: every command fixed at planning time, so that
 * applying it again over a partly applied state ends where one whole application does (apply.ts).
 */

export const ASSET_KINDS: readonly AssetKind[] = ["contracts", "nfts"];

/**
 * One unit of changes, planned from the state before it: every command it sends is absolute (a
 * value to set, a member to add or remove), fixed at planning time, so that applying the unit again
 * over a partly applied state ends where one whole application does. This is what the journal
 * keeps (journal.ts). The bulk of a large load, its relation and asset records, stays in the
 * columns it came in and is turned into commands as it is sent.
 */
export interface PlannedUnit {
  /** Records the unit stands for: the unit of progress. */
  records: number;
  /** Erasures: every trace of each erased user. */
  erase: string[][];
  /** New and replaced users: records, relationId indexes, identities, assets their addresses already hold; former owners' trimmed records. */
  users: string[][];
  /** Identity entries the replaced users no longer have: removed once the new entries are in. */
  unlink: string[][];
  /** Asset record deletes. */
  deletes: string[][];
  /** Friend and follow upserts and deletes in columns over one list of names. */
  friends: FriendColumns;
  follows: FollowColumns;
  friendDeletes: FriendColumns;
  followDeletes: FollowColumns;
  /** By name index: the UserId once the unit is applied (0: none), for the upserts. */
  ids: Float64Array;
  /** By name index: the stored UserId whose edges the deletes remove (0: none, or erased by the unit). */
  deleteIds: Float64Array;
  /** Interaction and nft upserts, and the owner (once the unit is applied) of each address that has one. */
  assets: Record<AssetKind, { address: string; contract: string }[]>;
  owners: Map<string, UserId>;
  /** Release replacements, as the members each release loses and gains. */
  releases: ReleaseChanges;
  /** Users whose asset sets are trimmed to what their addresses hold, once everything else is in. */
  trims: UserId[];
  /** Addresses that lost asset records: unindexed at the end if they hold none any more. */
  emptied: [AssetKind, string][];
  /** Commands that complete the unit once it is applied (acknowledging the stream entries it came from). */
  then: string[][];
}

/** The users that columns of records name by index, with their ids. */
export class DenseUsers {
  /** Each user's id as the decimal text commands carry, made once per user rather than per member. */
  readonly idTexts: string[];
  /** Their RESP bulk strings, shared by every family's commands. */
  private readonly idBulks: BulkStrings;

  constructor(readonly ids: Float64Array) {
    this.idTexts = Array.from(ids, String);
    this.idBulks = new BulkStrings(this.idTexts);
  }

  /** Members of one per-user key family: subjects and members are indexes into this. */
  members(command: GroupedMembersOptions["command"], family: UserKeys, capacity: number, values?: readonly string[]): GroupedMembers {
    const { ids } = this;
    return new GroupedMembers({
      command,
      userKeys: { family, ids },
      subjects: ids,
      members: this.idTexts,
      capacity,
      values,
      memberBulks: this.idBulks,
    });
  }
}

/** Plans a batch as one unit, reading everything it depends on from the state before it. */
export async function planUnit(
  redis: RedisConnection,
  batch: IngestBatch,
  acknowledge: StreamAcknowledgement | undefined,
  knownIds: ReadonlyMap<string, UserId | null>,
  keep: readonly KeptChange[] = [],
): Promise<PlannedUnit> {
  const erased = await planErasures(redis, batch.erasures ?? []);
  // A relationId ingested twice in one batch: the last record wins, as in the memory engine.
  const users = new Map(batch.users.map((user) => [user.relationId, user]));
  const relations = relationColumns(batch);
  const { idOf, ids, deleteIds } = await resolveOrAllocate(redis, batch, relations, users, erased.relationIds, knownIds);
  // Looked up while the rest is planned: the other plans read nothing these lookups tell.
  const storedDeletes = storedEdgeDeletes(redis, relations, deleteIds);
  storedDeletes.catch(() => {});
  const userPlan = await planUsers(redis, batch, users, idOf, erased);
  const deletes = await planAssetDeletes(redis, batch);
  const releases = await planReleases(redis, batch, idOf);
  const { friendDeletes, followDeletes } = await storedDeletes;
  return {
    records: recordCount(batch),
    erase: erased.commands,
    users: userPlan.commands,
    unlink: userPlan.unlink,
    deletes: deletes.commands,
    friends: relations.friends,
    follows: relations.follows,
    friendDeletes,
    followDeletes,
    ids,
    deleteIds,
    assets: { contracts: batch.interactions, nfts: batch.nfts },
    owners: userPlan.owners,
    releases,
    trims: [...new Set([...userPlan.trims, ...deletes.trims, ...deletes.claimants.map((relationId) => idOf.get(relationId) as UserId)])],
    emptied: deletes.emptied,
    then: [
      ...keptCommands(keep),
      ...(acknowledge && acknowledge.ids.length > 0 ? chunks(acknowledge.ids).map((ids) => ["XACK", acknowledge.stream, acknowledge.group, ...ids]) : []),
    ],
  };
}

/**
 * The kept state's changes as absolute commands, one hash per space: deletes, then sets (a unit
 * never both sets and deletes one field; were it to, the set would win, as the last change does).
 */
function keptCommands(keep: readonly KeptChange[]): string[][] {
  const spaces = new Map<string, { set: Map<string, string>; deleted: Set<string> }>();
  for (const { space, field, value } of keep) {
    let changes = spaces.get(space);
    if (!changes) spaces.set(space, (changes = { set: new Map(), deleted: new Set() }));
    if (value === null) {
      changes.set.delete(field);
      changes.deleted.add(field);
    } else {
      changes.deleted.delete(field);
      changes.set.set(field, value);
    }
  }
  const commands: string[][] = [];
  for (const [space, { set, deleted }] of spaces) {
    const key = keptSpaceKey(space);
    for (const fields of chunks([...deleted])) commands.push(["HDEL", key, ...fields]);
    for (const pairs of chunks([...set])) commands.push(["HSET", key, ...pairs.flat()]);
  }
  return commands;
}

/** Pairs looked up per round trip by storedPairs. */
const PAIRS_PER_LOOKUP = 20_000;

/**
 * The friend and follow deletes worth sending. A delete that cancels an upsert of the same load (the
 * batch's hints, BatchDeletes.friendsCancellingUpserts and followsCancellingUpserts) names an edge
 * that is often not stored at all: it is looked up, and dropped when it is not there. One read costs
 * Redis a fraction of the removals it spares: two set members for a follow, and for a friend two
 * more description fields, found only by scanning the users' hashes. One half of an edge tells:
 * every write of an edge writes both halves in one unit, and a unit is always completed
 * (journal.ts). Every other delete is of an edge that is likely stored, and is sent unread.
 */
async function storedEdgeDeletes(
  redis: RedisConnection,
  relations: RelationColumns,
  deleteIds: Float64Array,
): Promise<{ friendDeletes: FriendColumns; followDeletes: FollowColumns }> {
  const { friendDeletes: friends, followDeletes: follows } = relations;
  const [friendsKept, followsKept] = await Promise.all([
    storedPairs(redis, friends.a, friends.b, relations.friendDeletesCancelling, deleteIds, USER_SETS.friends.key),
    storedPairs(redis, follows.from, follows.to, relations.followDeletesCancelling, deleteIds, USER_SETS.following.key),
  ]);
  return {
    friendDeletes: friendsKept ? new FriendColumns(friends.names, friendsKept.first, friendsKept.second, [""], new Uint32Array(friendsKept.first.length)) : friends,
    followDeletes: followsKept ? new FollowColumns(follows.names, followsKept.first, followsKept.second) : follows,
  };
}

/**
 * The pairs (first[i], second[i]) of a delete column worth sending: those not flagged in
 * `cancelling`, and the flagged ones whose half keyOf(first) ∋ second is stored. Null when every pair
 * is kept.
 */
async function storedPairs(
  redis: RedisConnection,
  first: Uint32Array,
  second: Uint32Array,
  cancelling: Uint8Array | null,
  deleteIds: Float64Array,
  keyOf: (id: UserId) => string,
): Promise<{ first: Uint32Array; second: Uint32Array } | null> {
  if (cancelling === null) return null;
  const looked: number[] = [];
  // Deletes with an end that is not stored (or erased by the unit) are skipped when sent anyway.
  for (let i = 0; i < first.length; i++) {
    if (cancelling[i] === 1 && deleteIds[first[i]!] !== 0 && deleteIds[second[i]!] !== 0) looked.push(i);
  }
  if (looked.length === 0) return null;
  const lookups = chunks(looked, PAIRS_PER_LOOKUP).map((part) => {
    const keys: string[] = [];
    const members: UserId[] = [];
    for (const i of part) {
      keys.push(keyOf(deleteIds[first[i]!]!));
      members.push(deleteIds[second[i]!]!);
    }
    return redis.idSets.contains(keys, members);
  });
  const found = (await Promise.all(lookups)).flat();
  const absent = new Uint8Array(first.length);
  looked.forEach((i, k) => {
    if (!found[k]) absent[i] = 1;
  });
  const kept = first.length - absent.reduce((sum, flag) => sum + flag, 0);
  const keptFirst = new Uint32Array(kept);
  const keptSecond = new Uint32Array(kept);
  for (let i = 0, k = 0; i < first.length; i++) {
    if (absent[i] === 1) continue;
    keptFirst[k] = first[i]!;
    keptSecond[k++] = second[i]!;
  }
  return { first: keptFirst, second: keptSecond };
}

/** Sets sized per round trip when erasures are planned. */
const ERASED_SETS_PER_READ = 10_000;

/**
 * The commands that erase users: record, relationId, identities, every edge touching them (and the
 * other end's half of it), their assets and their addresses' asset records, their release and their
 * place in others' releases, their paging states (recommendation snapshots).
 */
async function planErasures(redis: RedisConnection, relationIds: readonly string[]): Promise<ErasurePlan> {
  const commands: string[][] = [];
  // Erased users' traces in keys they share with others: one command per key for all of them.
  const grouped = new KeyedCommands();
  const ids = new Set<UserId>();
  const addresses = new Set<string>();
  if (relationIds.length === 0) return { commands, ids, relationIds: new Set(), addresses };
  const stored = await hashGetMany(redis, RELATION_ID_INDEX, relationIds);
  const targets = relationIds.flatMap((relationId, i) => (stored[i] == null ? [] : [{ relationId, id: Number(stored[i]) }]));
  const records = await readUsers(redis, targets.map(({ id }) => id));
  // The sets of UserIds are read in bulk, as numbers; the others (assets, paging states) are sized in
  // bulk, and only those that hold anything are scanned: a node-redis command per set per user was
  // most of planning a feed unit that erases users an earlier unit created.
  const idSetKeys = (id: UserId) => [userSetKey("friends", id), userSetKey("following", id), userSetKey("followers", id), releaseKey(id), releasedToKey(id)];
  const textSetKeys = (id: UserId) => [userAssetsKey("contracts", id), userAssetsKey("nfts", id), pagingStateOwnerKey(id)];
  const sizeAll = async (keys: string[]) => {
    const sizes: number[] = [];
    for (const part of chunks(keys, ERASED_SETS_PER_READ)) for (const size of await redis.idSets.sizes(part)) sizes.push(size);
    return sizes;
  };
  const [idSets, textSetSizes] = await Promise.all([readIdSets(redis, targets.flatMap(({ id }) => idSetKeys(id))), sizeAll(targets.flatMap(({ id }) => textSetKeys(id)))]);
  await Promise.all(
    targets.map(async ({ relationId, id }, i) => {
      const record = records[i];
      const [friends = [], following = [], followers = [], release = [], releasedTo = []] = idSets.slice(5 * i, 5 * i + 5);
      const [contracts = [], nfts = [], pages = []] = await Promise.all(textSetKeys(id).map((key, k) => (textSetSizes[3 * i + k]! > 0 ? scanSet(redis, key) : [])));
      const owned = record ? identitiesOf(record) : [];
      const owners = await Promise.all(owned.map(([kind, value]) => redis.send<string | null>(identityIndexKey(kind), ["HGET", identityIndexKey(kind), value])));
      const self = String(id);
      grouped.add("HDEL", RELATION_ID_INDEX, relationId);
      grouped.add("HDEL", RELATION_ID_BY_USER, self);
      commands.push(["DEL", userKey(id)]);
      owned.forEach(([kind, value], k) => {
        if (owners[k] === self) grouped.add("HDEL", identityIndexKey(kind), value);
      });
      for (const friend of friends) {
        grouped.add("SREM", userSetKey("friends", friend), self);
        grouped.add("HDEL", friendDescriptionsKey(friend), self);
      }
      for (const followed of following) grouped.add("SREM", userSetKey("followers", followed), self);
      for (const follower of followers) grouped.add("SREM", userSetKey("following", follower), self);
      for (const asset of contracts) grouped.add("SREM", assetHoldersKey("contracts", asset), self);
      for (const asset of nfts) grouped.add("SREM", assetHoldersKey("nfts", asset), self);
      for (const address of record?.addresses ?? []) {
        addresses.add(address);
        for (const kind of ASSET_KINDS) {
          commands.push(["DEL", addressAssetsKey(kind, address)]);
          grouped.add("SREM", assetAddressesKey(kind), address);
        }
      }
      for (const peer of release) if (peer !== Number(RELEASE_ALL)) grouped.add("SREM", releasedToKey(peer), self);
      for (const releaser of releasedTo) grouped.add("SREM", releaseKey(releaser), self);
      for (const key of pages) commands.push(["DEL", key]);
      const own = [
        userSetKey("friends", id),
        userSetKey("following", id),
        userSetKey("followers", id),
        friendDescriptionsKey(id),
        userAssetsKey("contracts", id),
        userAssetsKey("nfts", id),
        releaseKey(id),
        releasedToKey(id),
        pagingStateOwnerKey(id),
      ];
      for (const key of own) commands.push(["DEL", key]);
      ids.add(id);
    }),
  );
  return { commands: [...commands, ...grouped.commands()], ids, relationIds: new Set(targets.map(({ relationId }) => relationId)), addresses };
}

/** What erasures remove, planned from the state before them. */
interface ErasurePlan {
  commands: string[][];
  /** The erased users' ids and relationIds. */
  ids: Set<UserId>;
  relationIds: Set<string>;
  /** The addresses they held: their asset records go with them. */
  addresses: Set<string>;
}

/** The commands of asset record deletes; users that may have lost an asset, and addresses that may hold none any more. */
async function planAssetDeletes(
  redis: RedisConnection,
  batch: IngestBatch,
): Promise<{ commands: string[][]; trims: UserId[]; emptied: [AssetKind, string][]; claimants: string[] }> {
  const deletes = batch.deletes;
  if (!deletes) return { commands: [], trims: [], emptied: [], claimants: [] };
  const grouped = new KeyedCommands();
  const emptied: [AssetKind, string][] = [];
  const touched = new Set<string>();
  for (const kind of ASSET_KINDS) {
    const records = kind === "contracts" ? deletes.interactions : deletes.nfts;
    const seen = new Set<string>();
    for (const { address, contract } of records) {
      grouped.add("SREM", addressAssetsKey(kind, address), contract);
      touched.add(address);
      if (!seen.has(address)) emptied.push([kind, address]);
      seen.add(address);
    }
  }
  // Owners of those addresses, before the batch and after it, may hold the asset through another
  // address: trimmed at the end, to what their records then list.
  const addresses = [...touched];
  const owners = await hashGetMany(redis, identityIndexKey("address"), addresses);
  const trims = owners.filter((owner) => owner != null).map(Number);
  const claimants = batch.users.filter((user) => user.addresses.some((address) => touched.has(address))).map((user) => user.relationId);
  return { commands: grouped.commands(), trims, emptied, claimants };
}

/**
 * Release replacements as changes of members, in columns over one list of users (RELEASE_ALL is user
 * 0): what each release loses and gains against the state before the unit. Sent as SREM and SADD
 * rather than a DEL and a refill, so that only what changes is sent and the peers a release keeps
 * stay in it throughout; both are absolute, so the unit may be applied again. The reverse index
 * (released-to) changes with them.
 */
export interface ReleaseChanges {
  /** The users the changes name, by index: releasers and peers. */
  ids: Float64Array;
  /** By change, the releaser and the peer, as indexes into ids. */
  lostBy: Uint32Array;
  lost: Uint32Array;
  gainedBy: Uint32Array;
  gained: Uint32Array;
}

/** What the batch's releases change, against the releases stored before it. */
async function planReleases(redis: RedisConnection, batch: IngestBatch, idOf: Map<string, UserId>): Promise<ReleaseChanges> {
  const releasers = batch.releases.map(({ relationId }) => idOf.get(relationId) as UserId);
  const before = await readIdSets(redis, releasers.map(releaseKey));
  const all = Number(RELEASE_ALL);
  const ids = new IdList();
  const lostBy: number[] = [];
  const lost: number[] = [];
  const gainedBy: number[] = [];
  const gained: number[] = [];
  batch.releases.forEach(({ peers }, i) => {
    const self = ids.indexOf(releasers[i]!);
    // Both lists hold distinct ids (a set's members; a validated release's peers).
    const old = before[i]!;
    const next = peers === "*" ? [all] : peers.map((peer) => idOf.get(peer) as UserId);
    const inOld = membership(old);
    const inNext = membership(next);
    for (const peer of old) {
      if (inNext(peer)) continue;
      lostBy.push(self);
      lost.push(ids.indexOf(peer));
    }
    for (const peer of next) {
      if (inOld(peer)) continue;
      gainedBy.push(self);
      gained.push(ids.indexOf(peer));
    }
  });
  return { ids: Float64Array.from(ids.ids), lostBy: Uint32Array.from(lostBy), lost: Uint32Array.from(lost), gainedBy: Uint32Array.from(gainedBy), gained: Uint32Array.from(gained) };
}

/** Lists up to this long are searched rather than put in a Set: a release names a few peers. */
const SCANNED_LIST = 16;

/** Whether an id is in `list`: by a scan for a short list, which costs less than making a Set of it. */
function membership(list: readonly UserId[]): (id: UserId) => boolean {
  if (list.length <= SCANNED_LIST) return (id) => list.includes(id);
  const set = new Set(list);
  return (id) => set.has(id);
}

/** Distinct user ids numbered in order of first appearance. */
class IdList {
  readonly ids: UserId[] = [];
  readonly #index = new Map<UserId, number>();

  indexOf(id: UserId): number {
    let index = this.#index.get(id);
    if (index === undefined) {
      index = this.ids.length;
      this.ids.push(id);
      this.#index.set(id, index);
    }
    return index;
  }
}

/** The ids a unit's names have: by relationId for users and releases, by name index for the relation columns. */
interface ResolvedIds {
  idOf: Map<string, UserId>;
  /** By name index: the UserId once the unit is applied, for the upserts (0 for a name only deletes use). */
  ids: Float64Array;
  /** By name index: the stored UserId whose edges the deletes remove (0: none, or erased by the unit). */
  deleteIds: Float64Array;
}

/**
 * Ids of every relationId the batch names, read in one go. New users (and users the batch erases
 * and defines again) get fresh ids from the sequence, in the order of batch.users; their relationId
 * indexes are written with the unit. The relation columns are resolved by name index, with no
 * lookup by name: a unit names tens of thousands of users.
 */
async function resolveOrAllocate(
  redis: RedisConnection,
  batch: IngestBatch,
  relations: RelationColumns,
  users: Map<string, UserInput>,
  erased: Set<string>,
  knownIds: ReadonlyMap<string, UserId | null>,
): Promise<ResolvedIds> {
  const { names, friends, follows } = relations;
  // Users first: fresh ids go in their order.
  const named = new Set(users.keys());
  for (const { relationId, peers } of batch.releases) {
    named.add(relationId);
    if (peers !== "*") for (const peer of peers) named.add(peer);
  }
  const others = [...named];
  const replies = await storedIds(redis, [...names, ...others], knownIds);
  const storedId = (name: string, id: UserId | null | undefined): UserId | null => (id == null || (erased.size > 0 && erased.has(name)) ? null : id);

  const idOf = new Map<string, UserId>();
  const fresh: string[] = [];
  others.forEach((relationId, k) => {
    const id = storedId(relationId, replies[names.length + k]);
    if (id !== null) idOf.set(relationId, id);
    else if (users.has(relationId)) fresh.push(relationId);
    else throw new UnknownRelationIdError(relationId);
  });
  if (fresh.length > 0) {
    const first = await allocateUserIds(redis, fresh.length);
    fresh.forEach((relationId, i) => idOf.set(relationId, first + i));
  }

  // Upserts must name users that exist once the unit is applied; deletes may name anyone.
  const upserted = new Uint8Array(names.length);
  for (const column of [friends.a, friends.b, follows.from, follows.to]) for (let i = 0; i < column.length; i++) upserted[column[i]!] = 1;
  const ids = new Float64Array(names.length);
  const deleteIds = new Float64Array(names.length);
  for (let i = 0; i < names.length; i++) {
    const id = storedId(names[i]!, replies[i]);
    // Edges of erased users go with them; an unknown relationId has no edges to delete.
    deleteIds[i] = id ?? 0;
    if (id !== null) ids[i] = id;
    else if (upserted[i] === 1) {
      // Not stored (or erased): only a user of the batch, with its fresh id, may be named.
      const allocated = idOf.get(names[i]!);
      if (allocated === undefined) throw new UnknownRelationIdError(names[i]!);
      ids[i] = allocated;
    }
  }
  return { idOf, ids, deleteIds };
}

/**
 * Allocates `count` consecutive fresh UserIds and returns the first. Ids are only numbers until the
 * unit writes them: an interrupted plan just leaves a gap. The sequence lives on one node, and a
 * failover that promotes a replica behind it takes it back, so ids it had already handed out would
 * be handed out again and a new user would take over an old one's edges. A range is therefore
 * checked against the ids the relationId index holds, and one holding any is skipped, with jumps
 * that double, until a range holds none.
 */
async function allocateUserIds(redis: RedisConnection, count: number): Promise<UserId> {
  for (let jump = count; ; jump *= 2) {
    const last = await redis.send<number>(USER_ID_SEQUENCE, ["INCRBY", USER_ID_SEQUENCE, String(jump)]);
    const first = last - count + 1;
    const holders = await hashGetMany(redis, RELATION_ID_BY_USER, Array.from({ length: count }, (_, i) => String(first + i)));
    if (holders.every((relationId) => relationId == null)) return first;
  }
}

/** The stored id of each relationId (null: not stored): those in `known` as they are, the others read. */
async function storedIds(redis: RedisConnection, relationIds: readonly string[], known: ReadonlyMap<string, UserId | null>): Promise<(UserId | null)[]> {
  const ids = relationIds.map((relationId) => known.get(relationId));
  const unknownAt: number[] = [];
  for (let i = 0; i < ids.length; i++) if (ids[i] === undefined) unknownAt.push(i);
  const read = await readRelationIds(redis, unknownAt.map((i) => relationIds[i]!));
  unknownAt.forEach((i, k) => (ids[i] = read[k]!));
  return ids as (UserId | null)[];
}

/** The stored id of each relationId, read from the relationId index; null when it is not stored. */
export async function readRelationIds(redis: RedisConnection, relationIds: readonly string[]): Promise<(UserId | null)[]> {
  return (await hashGetMany(redis, RELATION_ID_INDEX, relationIds)).map((reply) => (reply == null ? null : Number(reply)));
}

/** What the batch's users change, planned from the state before the batch. */
async function planUsers(
  redis: RedisConnection,
  batch: IngestBatch,
  users: Map<string, UserInput>,
  idOf: Map<string, UserId>,
  erased: ErasurePlan,
): Promise<{ commands: string[][]; unlink: string[][]; owners: Map<string, UserId>; trims: UserId[] }> {
  const batchIds = new Set<UserId>();
  const newOwner = new Map<string, UserId>();
  for (const user of users.values()) {
    const id = idOf.get(user.relationId) as UserId;
    batchIds.add(id);
    for (const address of user.addresses) newOwner.set(address, id);
  }
  const batchUsers = [...users.values()];
  const oldRecords = await readUsers(
    redis,
    batchUsers.map((user) => idOf.get(user.relationId) as UserId),
  );

  const stale: { id: UserId; user: UserInput; kind: IdentityKind; value: string }[] = [];
  batchUsers.forEach((user, i) => {
    const old = oldRecords[i];
    if (!old) return;
    for (const [kind, value] of staleIdentities(old, user)) stale.push({ id: old.id, user, kind, value });
  });
  const assetAddresses = [...new Set([...batch.interactions, ...batch.nfts].map((record) => record.address))].filter(
    (address) => !newOwner.has(address),
  );
  const claimedAddresses = [...newOwner.keys()];
  const [staleOwners, previousOwners, storedOwners, storedAssets] = await Promise.all([
    Promise.all(stale.map(({ kind, value }) => redis.send<string | null>(identityIndexKey(kind), ["HGET", identityIndexKey(kind), value]))),
    hashGetMany(redis, identityIndexKey("address"), claimedAddresses),
    hashGetMany(redis, identityIndexKey("address"), assetAddresses),
    // Erasures go first: the asset records of the addresses they free are gone by then.
    readStoredAssets(redis, claimedAddresses.filter((address) => !erased.addresses.has(address))),
  ]);

  const unlink: string[][] = [];
  const trims = new Set<UserId>();
  // An identity one batch user drops and another takes is overwritten, never unlinked.
  const claimed = new Set(batchUsers.flatMap((user) => identitiesOf(user).map(([kind, value]) => `${kind}:${value}`)));
  stale.forEach(({ id, user, kind, value }, i) => {
    if (staleOwners[i] !== String(id)) return;
    if (!claimed.has(`${kind}:${value}`)) unlink.push(["HDEL", identityIndexKey(kind), value]);
    if (kind === "address") trims.add(id);
  });

  // Addresses taken from users outside the batch: those users' records must drop them. Users the
  // batch erases lose them anyway.
  const taken = new Map<UserId, Set<string>>();
  claimedAddresses.forEach((address, i) => {
    const previous = previousOwners[i];
    if (previous == null || batchIds.has(Number(previous)) || erased.ids.has(Number(previous))) return;
    const set = taken.get(Number(previous)) ?? new Set<string>();
    taken.set(Number(previous), set.add(address));
  });
  const formerIds = [...taken.keys()];
  const formerRecords = await readUsers(redis, formerIds);

  const commands: string[][] = [];
  for (const user of users.values()) {
    const userId = idOf.get(user.relationId) as UserId;
    const self = String(userId);
    commands.push(
      ["SET", userKey(userId), JSON.stringify(toRecord(userId, user))],
      ["HSET", RELATION_ID_INDEX, user.relationId, self],
      ["HSET", RELATION_ID_BY_USER, self, user.relationId],
    );
    for (const [kind, value] of identitiesOf(user)) commands.push(["HSET", identityIndexKey(kind), value, self]);
    for (const kind of ASSET_KINDS) {
      const held = new Set(user.addresses.flatMap((address) => storedAssets[kind].get(address) ?? []));
      for (const part of chunks([...held])) commands.push(["SADD", userAssetsKey(kind, userId), ...part]);
      for (const asset of held) commands.push(["SADD", assetHoldersKey(kind, asset), self]);
    }
  }
  formerRecords.forEach((record, i) => {
    const lost = taken.get(formerIds[i] as UserId);
    if (!record || !lost) return;
    const trimmed = { ...record, addresses: record.addresses.filter((address) => !lost.has(address)) };
    commands.push(["SET", userKey(trimmed.id), JSON.stringify(trimmed)]);
    trims.add(trimmed.id);
  });

  const owners = newOwner;
  assetAddresses.forEach((address, i) => {
    const owner = storedOwners[i];
    // An address still indexed to a batch user that no longer lists it has no owner any more, and
    // one of an erased user has none either.
    if (owner != null && !batchIds.has(Number(owner)) && !erased.ids.has(Number(owner))) owners.set(address, Number(owner));
  });
  return { commands, unlink, owners, trims: [...trims] };
}

/** Assets already recorded against some addresses, reading only the addresses that have any. */
async function readStoredAssets(redis: RedisConnection, addresses: string[]): Promise<Record<AssetKind, Map<string, string[]>>> {
  const stored = { contracts: new Map<string, string[]>(), nfts: new Map<string, string[]>() };
  await Promise.all(
    ASSET_KINDS.map(async (kind) => {
      const present = await setHasMany(redis, assetAddressesKey(kind), addresses);
      const withAssets = addresses.filter((_, i) => present[i]);
      const sets = await Promise.all(withAssets.map((address) => scanSet(redis, addressAssetsKey(kind, address))));
      withAssets.forEach((address, i) => stored[kind].set(address, sets[i] ?? []));
    }),
  );
  return stored;
}

export function pair({ address, contract }: { address: string; contract: string }): [string, string] {
  return [address, contract];
}

/** Loads user records by id (null for unknown), in one round trip. */
export async function readUsers(redis: RedisConnection, ids: readonly UserId[]): Promise<(UserRecord | null)[]> {
  const values = await redis.getMany(ids.map(userKey));
  return values.map((value) => (value === null ? null : (JSON.parse(value) as UserRecord)));
}

/** Removes from a user's asset sets (and their reverse indexes) what its addresses no longer hold. */
export async function trimAssets(redis: RedisConnection, id: UserId, addresses: readonly string[]): Promise<void> {
  for (const kind of ASSET_KINDS) {
    const [current, ...held] = await Promise.all([
      scanSet(redis, userAssetsKey(kind, id)),
      ...addresses.map((address) => scanSet(redis, addressAssetsKey(kind, address))),
    ]);
    const wanted = new Set(held.flat());
    const extra = (current ?? []).filter((asset) => !wanted.has(asset));
    if (extra.length === 0) continue;
    await redis.writeAll([
      ...chunks(extra).map((part) => ["SREM", userAssetsKey(kind, id), ...part]),
      ...extra.map((asset) => ["SREM", assetHoldersKey(kind, asset), String(id)]),
    ]);
  }
}

/** The stored form of a user: exactly the record's fields, whatever else the input object carries. */
function toRecord(id: UserId, user: UserInput): UserRecord {
  const { relationId, name, avatar, addresses, social, game } = user;
  return { id, relationId, name, avatar, addresses, social, game };
}
