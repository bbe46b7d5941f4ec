import { type AssetKind, type UserId } from "../../../domain/model.js";
import { TextIndex } from "../../text-index.js";
import { type IngestBatch, type KeptChange, type StreamAcknowledgement, type WriteProgress } from "../../store.js";
import { type RedisConnection } from "../connection.js";
import { loadJournal, saveJournal } from "../journal.js";
import { FRIEND_DESCRIPTIONS, RELEASED_TO, RELEASES, RELEASE_ALL, USER_SETS, addressAssetsKey, assetAddressesKey, assetHoldersKey, userAssetsKey } from "../keys.js";
import { GroupedMembers } from "../grouped-commands.js";
import { CommandBuffer } from "../resp/command-buffer.js";
import { chunks } from "../command-chunks.js";
import { ASSET_KINDS, DenseUsers, planUnit, readUsers, trimAssets, type PlannedUnit, type ReleaseChanges } from "./plan.js";
import { fromJournal, toJournal } from "../journal-format.js";

/*
 * Applying a planned unit (plan.ts): journalled first (journal.ts, journal-format.ts), then sent in
 * order, so that a unit a killed writer left half applied is completed by the next one.
 */

/**
 * Set members and hash fields sent at once on the grouped path (relations and assets); the next
 * ones are built meanwhile. Small enough that few commands outlive a scavenge: sending 400,000
 * at a time doubled the scavenging time of a large load's relations.
 */
const ARGS_PER_SEND = 50_000;

/** Options of writeBatch. */
export interface WriteBatchOptions {
  onProgress?: (progress: WriteProgress) => void;
  /** Stream entries the batch came from, acknowledged as part of the unit. */
  acknowledge?: StreamAcknowledgement;
  /** State kept with the batch, written as part of the unit. */
  keep?: readonly KeptChange[];
  /**
   * Stored ids of relationIds (null: not stored) read under the same hold of the write lease, with
   * no write since: the plan reads only the others.
   */
  knownIds?: ReadonlyMap<string, UserId | null>;
}

/**
 * Applies one ingest batch to Redis as one unit: plans it from the state before it (everything it
 * depends on is read up front, in bulk), saves the plan in the journal, applies it as pipelined,
 * per-key grouped traffic with no per-record round trip, then drops the journal. The caller holds
 * the write lease (write-lease.ts) and has completed any interrupted unit first.
 *
 * While it is applied, readers may see part of it, in this order: erasures; new and replaced user
 * records with their identities (a replaced user is answerable throughout: its new identities are
 * in before its old ones go); edge deletes; relation and asset upserts; releases.
 */
export async function writeBatch(redis: RedisConnection, batch: IngestBatch, options: WriteBatchOptions = {}): Promise<void> {
  const unit = await planUnit(redis, batch, options.acknowledge, options.knownIds ?? new Map(), options.keep);
  const journalled = await saveJournal(redis, toJournal(unit));
  await applyUnit(redis, unit, options.onProgress);
  await journalled.clear();
}

/**
 * Applies the unit an interrupted writer left in the journal, if any; resolves with the number of
 * records it stood for (0 when there was none). The caller holds the write lease.
 */
export async function completeInterruptedWrite(redis: RedisConnection, onProgress?: (progress: WriteProgress) => void): Promise<number> {
  const journalled = await loadJournal(redis);
  if (!journalled) return 0;
  const unit = fromJournal(journalled.parts);
  await applyUnit(redis, unit, onProgress);
  await journalled.clear();
  return unit.records;
}

async function applyUnit(redis: RedisConnection, unit: PlannedUnit, onProgress?: (progress: WriteProgress) => void): Promise<void> {
  const total = unit.records;
  // One sender from the erasures to the releases: each step's first commands go out while the
  // previous step's last ones are applied, rather than after them. They still reach Redis in this
  // order, one batch behind the other, so readers see the steps in the order writeBatch gives.
  const sender = new PipelinedSender(redis);
  for (const commands of [unit.erase, unit.users, unit.unlink, unit.deletes]) {
    for (const part of chunks(commands, ARGS_PER_SEND / 10)) await sender.send(part, () => {});
  }
  await deleteUserRelations(sender, unit);
  const small = total - unit.friends.length - unit.follows.length - unit.assets.contracts.length - unit.assets.nfts.length;
  let written = small;
  if (written < total) onProgress?.({ written, total });
  // Each step reports from where it starts: its last batch may be answered after the next step began.
  const from = (start: number) => (done: number) => onProgress?.({ written: start + done, total });
  for (const kind of ASSET_KINDS) {
    written += await writeAssets(sender, kind, unit.assets[kind], unit.owners, from(written));
  }
  written += await writeUserRelations(sender, unit, from(written));
  await writeReleases(sender, unit.releases);
  await sender.done();

  // Only now, with every new record in place, can users that lost addresses or assets be trimmed
  // to the union of what their remaining addresses hold. These read the state, which is the same
  // however often the steps before ran.
  const trimmed = await readUsers(redis, unit.trims);
  for (const record of trimmed) if (record) await trimAssets(redis, record.id, record.addresses);
  for (const [kind, address] of unit.emptied) {
    const left = await redis.send<number>(addressAssetsKey(kind, address), ["SCARD", addressAssetsKey(kind, address)]);
    if (left === 0) await redis.send(assetAddressesKey(kind), ["SREM", assetAddressesKey(kind), address]);
  }
  await redis.writeAll(unit.then);
  onProgress?.({ written: total, total });
}

/**
 * Writes the friend and follow upserts, grouped by key over the whole unit rather than per slice:
 * any slice of a large load spreads over nearly every user, so per-slice grouping left about one
 * member per command, and per-command costs, here and in Redis, were most of the write. Members
 * wait in typed columns, not in strings. Resolves with the number of records written; onProgress
 * gets the running count.
 */
async function writeUserRelations(sender: PipelinedSender, unit: PlannedUnit, onProgress: (written: number) => void): Promise<number> {
  const { friends, follows } = unit;
  // Friends and follows index one list of names: one set of user ids serves both.
  const users = new DenseUsers(unit.ids);
  const friendCount = friends.length;
  const friendSets = users.members("SADD", USER_SETS.friends, 2 * friendCount);
  const descriptions = users.members("HSET", FRIEND_DESCRIPTIONS, 2 * friendCount, friends.descriptions);
  const cleared = users.members("HDEL", FRIEND_DESCRIPTIONS, 2 * friendCount);
  for (let i = 0; i < friendCount; i++) {
    const ia = friends.a[i]!;
    const ib = friends.b[i]!;
    friendSets.add(ia, ib);
    friendSets.add(ib, ia);
    // An upsert replaces the relation, its description too: "" is no description.
    const description = friends.description[i]!;
    if (friends.descriptions[description] !== "") {
      descriptions.add(ia, ib, description);
      descriptions.add(ib, ia, description);
    } else {
      cleared.add(ia, ib);
      cleared.add(ib, ia);
    }
  }
  await sendGroups(sender, [friendSets, descriptions, cleared], (share) => onProgress(Math.floor(share * friendCount)));

  const followCount = follows.length;
  const following = users.members("SADD", USER_SETS.following, followCount);
  const followers = users.members("SADD", USER_SETS.followers, followCount);
  for (let i = 0; i < followCount; i++) {
    following.add(follows.from[i]!, follows.to[i]!);
    followers.add(follows.to[i]!, follows.from[i]!);
  }
  await sendGroups(sender, [following, followers], (share) => onProgress(friendCount + Math.floor(share * followCount)));
  return friendCount + followCount;
}

/**
 * Removes the deleted friend and follow edges, grouped by key over the whole unit as the upserts
 * are; an edge with an end that is not stored (or that the unit erases) has nothing to remove.
 */
async function deleteUserRelations(sender: PipelinedSender, unit: PlannedUnit): Promise<void> {
  const { friendDeletes, followDeletes, deleteIds } = unit;
  if (friendDeletes.length + followDeletes.length === 0) return;
  const users = new DenseUsers(deleteIds);
  const friendSets = users.members("SREM", USER_SETS.friends, 2 * friendDeletes.length);
  const descriptions = users.members("HDEL", FRIEND_DESCRIPTIONS, 2 * friendDeletes.length);
  for (let i = 0; i < friendDeletes.length; i++) {
    const ia = friendDeletes.a[i]!;
    const ib = friendDeletes.b[i]!;
    if (deleteIds[ia] === 0 || deleteIds[ib] === 0) continue;
    friendSets.add(ia, ib);
    friendSets.add(ib, ia);
    descriptions.add(ia, ib);
    descriptions.add(ib, ia);
  }
  const following = users.members("SREM", USER_SETS.following, followDeletes.length);
  const followers = users.members("SREM", USER_SETS.followers, followDeletes.length);
  for (let i = 0; i < followDeletes.length; i++) {
    const from = followDeletes.from[i]!;
    const to = followDeletes.to[i]!;
    if (deleteIds[from] === 0 || deleteIds[to] === 0) continue;
    following.add(from, to);
    followers.add(to, from);
  }
  await sendGroups(sender, [friendSets, descriptions, following, followers], () => {});
}

/**
 * Writes one kind of asset records, grouped by key over the whole unit like the user relations:
 * a contract's holders, for one, are spread over the whole load. `owners` holds the owner of each
 * address that has one once the unit is applied. Resolves with the number of records written.
 */
async function writeAssets(
  sender: PipelinedSender,
  kind: AssetKind,
  records: readonly { address: string; contract: string }[],
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
  await sendGroups(sender, [addressAssets, knownAddresses, userAssets, assetHolders], (share) => onProgress(Math.floor(share * count)));
  return count;
}

/**
 * Sends the groups' commands through `sender`, building the next ARGS_PER_SEND arguments while the
 * previous ones are in flight; resolves once the last batch is sent (not answered: the caller awaits
 * sender.done() before it reads). onProgress gets the share of arguments answered so far, 1 last.
 */
async function sendGroups(sender: PipelinedSender, groups: readonly GroupedMembers[], onProgress: (share: number) => void): Promise<void> {
  const totalArgs = groups.reduce((sum, group) => sum + group.args, 0);
  let sentArgs = 0;
  let args = 0;
  const sent = (batchArgs: number) => () => {
    sentArgs += batchArgs;
    onProgress(sentArgs >= totalArgs ? 1 : sentArgs / totalArgs);
  };
  const { writeEncoded } = sender.redis;
  if (writeEncoded) {
    // Encoded as built: the window hands its bytes over and starts again, as the groups' generators append to it.
    const window = new CommandBuffer();
    const send = async () => {
      const sending = window.take();
      const batchArgs = args;
      args = 0;
      await sender.sendWith(() => writeEncoded(sending), sent(batchArgs));
    };
    for (const group of groups) {
      for (const commandArgs of group.encodeInto(window)) {
        args += commandArgs;
        if (args >= ARGS_PER_SEND) await send();
      }
    }
    await send();
  } else {
    let commands: string[][] = [];
    const send = async () => {
      const sending = commands;
      commands = [];
      const batchArgs = args;
      args = 0;
      await sender.send(sending, sent(batchArgs));
    };
    for (const group of groups) {
      for (const command of group.commands()) {
        commands.push(command);
        args += command.length - 2;
        if (args >= ARGS_PER_SEND) await send();
      }
    }
    await send();
  }
}

/**
 * Sends batches of commands one behind the other: a batch goes out while the caller builds the
 * next, so Redis and this process work in parallel, and at most two batches are held at once.
 */
class PipelinedSender {
  private inFlight: Promise<void> = Promise.resolve();

  constructor(readonly redis: RedisConnection) {}

  /** Sends `commands` once the previous batch is answered; `onSent` runs when they are. Rejects with an earlier batch's failure. */
  send(commands: string[][], onSent: () => void): Promise<void> {
    return this.sendWith(() => this.redis.writeAll(commands), onSent);
  }

  /** The same for a batch that `write` sends. */
  async sendWith(write: () => Promise<void>, onSent: () => void): Promise<void> {
    await this.inFlight;
    this.inFlight = write().then(onSent);
    // Marked handled here; the next send (or done) still sees the failure.
    this.inFlight.catch(() => {});
  }

  /** Resolves once every batch sent is answered; rejects with the failure of the last one. */
  done(): Promise<void> {
    return this.inFlight;
  }
}

/** Applies release changes: members lost first, so that a narrowed release never shows more than either version. */
async function writeReleases(sender: PipelinedSender, changes: ReleaseChanges): Promise<void> {
  const { ids, lostBy, lost, gainedBy, gained } = changes;
  if (lostBy.length + gainedBy.length === 0) return;
  const users = new DenseUsers(ids);
  const all = Number(RELEASE_ALL);
  const releasesLosing = users.members("SREM", RELEASES, lostBy.length);
  const unlisted = users.members("SREM", RELEASED_TO, lostBy.length);
  const releasesGaining = users.members("SADD", RELEASES, gainedBy.length);
  const listed = users.members("SADD", RELEASED_TO, gainedBy.length);
  for (let i = 0; i < lostBy.length; i++) {
    releasesLosing.add(lostBy[i]!, lost[i]!);
    if (ids[lost[i]!] !== all) unlisted.add(lost[i]!, lostBy[i]!);
  }
  for (let i = 0; i < gainedBy.length; i++) {
    releasesGaining.add(gainedBy[i]!, gained[i]!);
    if (ids[gained[i]!] !== all) listed.add(gained[i]!, gainedBy[i]!);
  }
  await sendGroups(sender, [releasesLosing, unlisted, releasesGaining, listed], () => {});
}
