import { randomUUID } from "node:crypto";
import type { AssetKind, UserId, UserRecord } from "../../domain/model.js";
import { FollowColumns, FriendColumns, TextIndex, identitiesOf, sortedByKey, recordCount, referencedRelationIds, staleIdentities, UnknownRelationIdError } from "../batch.js";
import type { IngestBatch, UserInput, WriteProgress } from "../store.js";
import type { RedisConnection } from "./connection.js";
import {
  DATA_VERSION,
  addressAssetsKey,
  assetAddressesKey,
  assetHoldersKey,
  friendDescriptionsKey,
  identityIndexKey,
  RELATION_ID_BY_USER,
  RELATION_ID_INDEX,
  RELEASE_ALL,
  releaseKey,
  USER_ID_SEQUENCE,
  userAssetsKey,
  userKey,
  userSetKey,
} from "./keys.js";
import { ARGS_PER_COMMAND, chunks, hashGetMany, scanSet, setHasMany } from "./set-reads.js";

/** Records whose commands are grouped and flushed together; progress is reported after each flush. */
const RECORDS_PER_FLUSH = 200_000;
/**
 * Set members and hash fields sent at once on the grouped path (relations and assets); the next
 * ones are built meanwhile. Small enough that few commands outlive a scavenge: sending 400,000
 * at a time doubled the scavenging time of a large load's relations.
 */
const ARGS_PER_SEND = 50_000;

const ASSET_KINDS: readonly AssetKind[] = ["contracts", "nfts"];

/**
 * Applies one ingest batch to Redis. Everything the batch depends on is read up front in bulk
 * (relationIds, old records, identity owners, assets recorded before their user), so the write
 * itself is pure pipelined, per-key grouped SADD/HSET/SET traffic with no per-record round trip.
 *
 * Idempotent: sets and hashes absorb repeats, ids are only allocated for unknown relationIds, and
 * identity entries a re-ingested user no longer has are removed. Assumes one writer at a time
 * (ingestion is an offline job); id allocation is still safe against a concurrent writer.
 */
export async function writeBatch(
  redis: RedisConnection,
  batch: IngestBatch,
  onProgress?: (progress: WriteProgress) => void,
): Promise<void> {
  const total = recordCount(batch);
  // First of all: readers drop what they cached before this write, even if it fails halfway.
  await newDataVersion(redis);
  // A relationId ingested twice in one batch: the last record wins, as in the memory engine.
  const users = new Map(batch.users.map((user) => [user.relationId, user]));
  const idOf = await resolveOrAllocate(redis, batch, users);
  const plan = await planUsers(redis, batch, users, idOf);

  // Stale identity entries go before any new one, so an identity handed from one user to another
  // in this batch ends up with its new owner.
  await redis.sendAll(plan.staleEntries.map(([kind, value]) => ["HDEL", identityIndexKey(kind), value]));

  const buffer = new WriteBuffer();
  const sender = new PipelinedSender(redis);
  let pending = 0;
  let written = 0;
  const flush = async () => {
    const records = pending;
    pending = 0;
    await sender.send(buffer.drain(), () => {
      written += records;
      if (written < total) onProgress?.({ written, total });
    });
  };
  const id = (relationId: string) => idOf.get(relationId) as UserId;

  pending += batch.users.length - users.size;
  for (const user of users.values()) {
    const userId = id(user.relationId);
    buffer.strings.push(userKey(userId), JSON.stringify(toRecord(userId, user)));
    buffer.hashes.pair(RELATION_ID_BY_USER, String(userId), user.relationId);
    for (const [kind, value] of identitiesOf(user)) buffer.hashes.pair(identityIndexKey(kind), value, String(userId));
    for (const kind of ASSET_KINDS) {
      for (const address of user.addresses) {
        for (const asset of plan.storedAssets[kind].get(address) ?? []) buffer.linkAsset(kind, userId, asset);
      }
    }
    if (++pending >= RECORDS_PER_FLUSH) await flush();
  }
  for (const former of plan.formerOwners) buffer.strings.push(userKey(former.id), JSON.stringify(former));

  for (const { relationId, peers } of batch.releases) {
    const userId = id(relationId);
    if (peers === "*") buffer.releases.add(userId, RELEASE_ALL);
    else for (const peer of peers) buffer.releases.add(userId, id(peer));
    if (++pending >= RECORDS_PER_FLUSH) await flush();
  }
  await flush();
  await sender.done();
  for (const kind of ASSET_KINDS) {
    written += await writeAssets(redis, kind, kind === "contracts" ? batch.interactions : batch.nfts, plan.owners, (done) =>
      onProgress?.({ written: written + done, total }),
    );
  }
  written += await writeUserRelations(redis, batch, idOf, (done) => onProgress?.({ written: written + done, total }));

  // Only now, with every new record in place, can users that lost addresses be trimmed to the
  // union of what their remaining addresses hold.
  for (const [userId, addresses] of plan.lostAddresses) await trimAssets(redis, userId, addresses);
  // Again once everything is in place: readers drop what they cached while the write went on.
  await newDataVersion(redis);
  onProgress?.({ written: total, total });
}

/**
 * Writes the friend and follow records, grouped by key over the whole batch rather than per flush:
 * any slice of a large load spreads over nearly every user, so per-flush grouping left about one
 * member per command, and per-command costs, here and in Redis, were most of the write. Members
 * wait in typed columns, not in strings. Resolves with the number of records written; onProgress
 * gets the running count.
 */
async function writeUserRelations(
  redis: RedisConnection,
  batch: IngestBatch,
  idOf: Map<string, UserId>,
  onProgress: (written: number) => void,
): Promise<number> {
  const friends = FriendColumns.of(batch.friends);
  const friendUsers = new DenseUsers(friends.names, idOf);
  const friendCount = friends.length;
  const friendSets = friendUsers.members("SADD", (id) => userSetKey("friends", id), 2 * friendCount);
  const descriptions = friendUsers.members("HSET", friendDescriptionsKey, 2 * friendCount, friends.descriptions);
  for (let i = 0; i < friendCount; i++) {
    const ia = friends.a[i]!;
    const ib = friends.b[i]!;
    friendSets.add(ia, ib);
    friendSets.add(ib, ia);
    // "" is what reads return when nothing is recorded, so it needs no write.
    const description = friends.description[i]!;
    if (friends.descriptions[description] !== "") {
      descriptions.add(ia, ib, description);
      descriptions.add(ib, ia, description);
    }
  }
  await sendGroups(redis, [friendSets, descriptions], (share) => onProgress(Math.floor(share * friendCount)));

  const follows = FollowColumns.of(batch.follows);
  const followUsers = new DenseUsers(follows.names, idOf);
  const followCount = follows.length;
  const following = followUsers.members("SADD", (id) => userSetKey("following", id), followCount);
  const followers = followUsers.members("SADD", (id) => userSetKey("followers", id), followCount);
  for (let i = 0; i < followCount; i++) {
    following.add(follows.from[i]!, follows.to[i]!);
    followers.add(follows.to[i]!, follows.from[i]!);
  }
  await sendGroups(redis, [following, followers], (share) => onProgress(friendCount + Math.floor(share * followCount)));
  return friendCount + followCount;
}

/**
 * Writes one kind of asset records, grouped by key over the whole batch like the user relations:
 * a contract's holders, for one, are spread over the whole load. `owners` holds the owner of each
 * address that has one once the batch is applied. Resolves with the number of records written.
 */
async function writeAssets(
  redis: RedisConnection,
  kind: AssetKind,
  records: IngestBatch["interactions"],
  owners: Map<string, UserId>,
  onProgress: (written: number) => void,
): Promise<number> {
  const addresses = new TextIndex();
  const assets = new TextIndex();
  const holders = new TextIndex();
  const count = records.length;
  const sets = (keyOf: (subject: number) => string, subjects: { length: number }, members: readonly string[]) =>
    new GroupedMembers({ command: "SADD", keyOf, subjects, members, capacity: count });
  const addressAssets = sets((address) => addressAssetsKey(kind, addresses.texts[address]!), addresses.texts, assets.texts);
  // One key, subject 0.
  const knownAddresses = sets(() => assetAddressesKey(kind), { length: 1 }, addresses.texts);
  const userAssets = sets((holder) => userAssetsKey(kind, Number(holders.texts[holder])), holders.texts, assets.texts);
  const assetHolders = sets((asset) => assetHoldersKey(kind, assets.texts[asset]!), assets.texts, holders.texts);
  for (const { address, contract } of records) {
    const addressIndex = addresses.indexOf(address);
    const assetIndex = assets.indexOf(contract);
    addressAssets.add(addressIndex, assetIndex);
    knownAddresses.add(0, addressIndex);
    const owner = owners.get(address);
    if (owner === undefined) continue;
    const holderIndex = holders.indexOf(String(owner));
    userAssets.add(holderIndex, assetIndex);
    assetHolders.add(assetIndex, holderIndex);
  }
  await sendGroups(redis, [addressAssets, knownAddresses, userAssets, assetHolders], (share) => onProgress(Math.floor(share * count)));
  return count;
}

/**
 * Sends the groups' commands, building the next ARGS_PER_SEND arguments while the previous ones
 * are in flight; onProgress gets the share of arguments sent so far.
 */
async function sendGroups(
  redis: RedisConnection,
  groups: readonly GroupedMembers[],
  onProgress: (share: number) => void,
): Promise<void> {
  const totalArgs = groups.reduce((sum, group) => sum + group.args, 0);
  const sender = new PipelinedSender(redis);
  let sentArgs = 0;
  let commands: string[][] = [];
  let args = 0;
  const send = async () => {
    const batchArgs = args;
    const sending = commands;
    commands = [];
    args = 0;
    await sender.send(sending, () => {
      sentArgs += batchArgs;
      if (sentArgs < totalArgs) onProgress(sentArgs / totalArgs);
    });
  };
  for (const group of groups) {
    for (const command of group.commands()) {
      commands.push(command);
      args += command.length - 2;
      if (args >= ARGS_PER_SEND) await send();
    }
  }
  await send();
  await sender.done();
  onProgress(1);
}

/**
 * Sends batches of commands one behind the other: a batch goes out while the caller builds the
 * next, so Redis and this process work in parallel, and at most two batches are held at once.
 */
class PipelinedSender {
  private inFlight: Promise<void> = Promise.resolve();

  constructor(private readonly redis: RedisConnection) {}

  /** Sends `commands` once the previous batch is answered; `onSent` runs when they are. Rejects with an earlier batch's failure. */
  async send(commands: string[][], onSent: () => void): Promise<void> {
    await this.inFlight;
    this.inFlight = this.redis.sendAll(commands).then(onSent);
    // Marked handled here; the next send (or done) still sees the failure.
    this.inFlight.catch(() => {});
  }

  /** Resolves once every batch sent is answered; rejects with the failure of the last one. */
  done(): Promise<void> {
    return this.inFlight;
  }
}

/** The users that columns of records name by index, with their ids. */
class DenseUsers {
  readonly ids: UserId[];
  /** Each user's id as the decimal text commands carry, made once per user rather than per member. */
  readonly idTexts: string[];

  constructor(names: readonly string[], idOf: Map<string, UserId>) {
    this.ids = names.map((name) => idOf.get(name)!);
    this.idTexts = this.ids.map(String);
  }

  /** Members of one per-user key family: subjects and members are indexes into this. */
  members(command: "SADD" | "HSET", keyOf: (id: UserId) => string, capacity: number, values?: readonly string[]): GroupedMembers {
    return new GroupedMembers({ command, keyOf: (subject) => keyOf(this.ids[subject]!), subjects: this.ids, members: this.idTexts, capacity, values });
  }
}

/** Options of GroupedMembers. */
interface GroupedMembersOptions {
  command: "SADD" | "HSET";
  /** The key of a subject, by index. */
  keyOf: (subject: number) => string;
  /** The subjects, by index; read when commands are made, so it may still grow while members are added. */
  subjects: { readonly length: number };
  /** Member texts (SADD members, HSET fields), by index; read when commands are made. */
  members: readonly string[];
  /** How many members will be added, at most. */
  capacity: number;
  /** HSET value texts, by index. */
  values?: readonly string[];
}

/**
 * Members of one family of keys (SADD members, or HSET fields with their values), in typed columns
 * of indexes, sent grouped by key: one command per key and ARGS_PER_COMMAND arguments. Entries of
 * one key keep their order, so a field set twice ends with its last value, as if the records were
 * sent one by one.
 */
class GroupedMembers {
  private readonly subjects: Uint32Array;
  private readonly members: Uint32Array;
  private readonly valueIndexes: Uint32Array;
  private length = 0;

  constructor(private readonly options: GroupedMembersOptions) {
    this.subjects = new Uint32Array(options.capacity);
    this.members = new Uint32Array(options.capacity);
    this.valueIndexes = new Uint32Array(options.values ? options.capacity : 0);
  }

  /** Arguments the commands will carry besides command names and keys. */
  get args(): number {
    return this.options.values ? 2 * this.length : this.length;
  }

  /** Adds a member, or for HSET a field with the value values[value]. */
  add(subject: number, member: number, value = 0): void {
    if (this.options.values) this.valueIndexes[this.length] = value;
    this.subjects[this.length] = subject;
    this.members[this.length++] = member;
  }

  *commands(): Generator<string[]> {
    const { subjects, members, valueIndexes, length } = this;
    const { command, keyOf, values } = this.options;
    const memberTexts = this.options.members;
    const order = sortedByKey(subjects.subarray(0, length), this.options.subjects.length);
    for (let start = 0; start < length; ) {
      const subject = subjects[order[start]!]!;
      const key = keyOf(subject);
      let args = [command, key];
      let k = start;
      for (; k < length && subjects[order[k]!] === subject; k++) {
        const entry = order[k]!;
        args.push(memberTexts[members[entry]!]!);
        if (values) args.push(values[valueIndexes[entry]!]!);
        // ARGS_PER_COMMAND is even, so HSET field/value pairs never straddle two commands.
        if (args.length - 2 >= ARGS_PER_COMMAND) {
          yield args;
          args = [command, key];
        }
      }
      if (args.length > 2) yield args;
      start = k;
    }
  }
}

/** What a batch's users change, computed from the state before the batch. */
interface UserPlan {
  /** Identity index entries to remove: they still point to a re-ingested user that no longer has them. */
  staleEntries: [kind: "address" | "social" | "game", value: string][];
  /** Users (not in the batch) that lose an address to a batch user, with their trimmed records. */
  formerOwners: UserRecord[];
  /** Users that lost addresses, with the addresses they keep. */
  lostAddresses: Map<UserId, string[]>;
  /** Assets already recorded against batch users' addresses, by kind and address. */
  storedAssets: Record<AssetKind, Map<string, string[]>>;
  /** Owners, once the batch is applied, of the addresses the batch's records name (absent: none). */
  owners: Map<string, UserId>;
}

/** Ids of every relationId the batch names, allocating fresh ids for new users. */
async function resolveOrAllocate(
  redis: RedisConnection,
  batch: IngestBatch,
  users: Map<string, UserInput>,
): Promise<Map<string, UserId>> {
  const relationIds = referencedRelationIds(batch);
  const stored = await hashGetMany(redis, RELATION_ID_INDEX, relationIds);
  const idOf = new Map<string, UserId>();
  const fresh: string[] = [];
  relationIds.forEach((relationId, i) => {
    const id = stored[i];
    if (id != null) idOf.set(relationId, Number(id));
    else if (users.has(relationId)) fresh.push(relationId);
    else throw new UnknownRelationIdError(relationId);
  });
  if (fresh.length === 0) return idOf;

  const last = await redis.send<number>(USER_ID_SEQUENCE, ["INCRBY", USER_ID_SEQUENCE, String(fresh.length)]);
  const first = last - fresh.length + 1;
  const claimed = await redis.sendAll(
    fresh.map((relationId, i) => ["HSETNX", RELATION_ID_INDEX, relationId, String(first + i)]),
  );
  // A concurrent writer may have claimed some relationIds first: theirs wins (our ids stay unused).
  const lost = fresh.filter((_, i) => claimed[i] !== 1);
  const winners = await hashGetMany(redis, RELATION_ID_INDEX, lost);
  fresh.forEach((relationId, i) => idOf.set(relationId, first + i));
  lost.forEach((relationId, i) => idOf.set(relationId, Number(winners[i])));
  return idOf;
}

async function planUsers(
  redis: RedisConnection,
  batch: IngestBatch,
  users: Map<string, UserInput>,
  idOf: Map<string, UserId>,
): Promise<UserPlan> {
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

  const stale: { id: UserId; user: UserInput; kind: "address" | "social" | "game"; value: string }[] = [];
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
    readStoredAssets(redis, claimedAddresses),
  ]);

  const staleEntries: UserPlan["staleEntries"] = [];
  const lostAddresses = new Map<UserId, string[]>();
  stale.forEach(({ id, user, kind, value }, i) => {
    if (staleOwners[i] !== String(id)) return;
    staleEntries.push([kind, value]);
    if (kind === "address") lostAddresses.set(id, user.addresses);
  });

  // Addresses taken from users outside the batch: those users' records must drop them.
  const taken = new Map<UserId, Set<string>>();
  claimedAddresses.forEach((address, i) => {
    const previous = previousOwners[i];
    if (previous == null || batchIds.has(Number(previous))) return;
    const set = taken.get(Number(previous)) ?? new Set<string>();
    taken.set(Number(previous), set.add(address));
  });
  const formerIds = [...taken.keys()];
  const formerRecords = await readUsers(redis, formerIds);
  const formerOwners: UserRecord[] = [];
  formerRecords.forEach((record, i) => {
    const lost = taken.get(formerIds[i] as UserId);
    if (!record || !lost) return;
    const trimmed = { ...record, addresses: record.addresses.filter((address) => !lost.has(address)) };
    formerOwners.push(trimmed);
    lostAddresses.set(trimmed.id, trimmed.addresses);
  });

  const owners = newOwner;
  assetAddresses.forEach((address, i) => {
    const owner = storedOwners[i];
    // An address still indexed to a batch user that no longer lists it has no owner any more.
    if (owner != null && !batchIds.has(Number(owner))) owners.set(address, Number(owner));
  });
  return { staleEntries, formerOwners, lostAddresses, storedAssets, owners };
}

/** Assets already recorded against some addresses, reading only the addresses that have any. */
async function readStoredAssets(redis: RedisConnection, addresses: string[]): Promise<UserPlan["storedAssets"]> {
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

/** Sets a fresh data version (keys.ts, DATA_VERSION): records cached by readers are stale from now on. */
function newDataVersion(redis: RedisConnection): Promise<unknown> {
  return redis.send(DATA_VERSION, ["SET", DATA_VERSION, randomUUID()]);
}

/** Loads user records by id (null for unknown), in one round trip. */
export async function readUsers(redis: RedisConnection, ids: readonly UserId[]): Promise<(UserRecord | null)[]> {
  const values = await redis.getMany(ids.map(userKey));
  return values.map((value) => (value === null ? null : (JSON.parse(value) as UserRecord)));
}

/** Removes from a user's asset sets (and their reverse indexes) what its addresses no longer hold. */
async function trimAssets(redis: RedisConnection, id: UserId, addresses: readonly string[]): Promise<void> {
  for (const kind of ASSET_KINDS) {
    const [current, ...held] = await Promise.all([
      scanSet(redis, userAssetsKey(kind, id)),
      ...addresses.map((address) => scanSet(redis, addressAssetsKey(kind, address))),
    ]);
    const wanted = new Set(held.flat());
    const extra = (current ?? []).filter((asset) => !wanted.has(asset));
    if (extra.length === 0) continue;
    await redis.sendAll([
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

/**
 * Members (SADD) or field/value pairs (HSET) grouped by the subject of their key (a UserId, an
 * address, a contract, or a whole key), so that records touching one key cost one command, and
 * key names are built once per key rather than once per record.
 */
class Grouped<S extends string | number> {
  readonly #entries = new Map<S, (string | number)[]>();
  constructor(
    private readonly command: "SADD" | "HSET",
    private readonly keyOf: (subject: S) => string,
  ) {}

  add(subject: S, member: string | number): void {
    const entries = this.#entries.get(subject);
    if (entries) entries.push(member);
    else this.#entries.set(subject, [member]);
  }

  pair(subject: S, field: string | number, value: string): void {
    const entries = this.#entries.get(subject);
    if (entries) entries.push(field, value);
    else this.#entries.set(subject, [field, value]);
  }

  drainInto(commands: string[][]): void {
    // ARGS_PER_COMMAND is even, so HSET field/value pairs never straddle two commands.
    for (const [subject, entries] of this.#entries) {
      const key = this.keyOf(subject);
      for (let start = 0; start < entries.length; start += ARGS_PER_COMMAND) {
        const end = Math.min(start + ARGS_PER_COMMAND, entries.length);
        const args = [this.command, key];
        for (let i = start; i < end; i++) args.push(String(entries[i]));
        commands.push(args);
      }
    }
    this.#entries.clear();
  }
}

/** Everything a write sends, grouped per key until the next flush. */
class WriteBuffer {
  readonly releases = new Grouped<UserId>("SADD", releaseKey);
  readonly userAssets = {
    contracts: new Grouped<UserId>("SADD", (id) => userAssetsKey("contracts", id)),
    nfts: new Grouped<UserId>("SADD", (id) => userAssetsKey("nfts", id)),
  };
  readonly holders = assetGroups((kind) => (asset: string) => assetHoldersKey(kind, asset));
  /** Hashes named directly by their key. */
  readonly hashes = new Grouped<string>("HSET", (key) => key);
  /** SET key value, flattened. */
  strings: string[] = [];

  linkAsset(kind: AssetKind, owner: UserId, asset: string): void {
    this.userAssets[kind].add(owner, asset);
    this.holders[kind].add(asset, owner);
  }

  /** The buffered commands, emptying the buffer. */
  drain(): string[][] {
    const commands: string[][] = [];
    const groups = [
      this.releases,
      ...Object.values(this.userAssets),
      ...Object.values(this.holders),
      this.hashes,
    ];
    for (const group of groups) group.drainInto(commands);
    for (let i = 0; i < this.strings.length; i += 2) commands.push(["SET", this.strings[i] as string, this.strings[i + 1] as string]);
    this.strings = [];
    return commands;
  }
}

function assetGroups(keyOf: (kind: AssetKind) => (subject: string) => string): Record<AssetKind, Grouped<string>> {
  return { contracts: new Grouped("SADD", keyOf("contracts")), nfts: new Grouped("SADD", keyOf("nfts")) };
}
