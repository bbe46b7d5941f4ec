import { foldSocialUsername } from "../domain/identity.js";
import type { IdentityKind, UserRecord } from "../domain/model.js";
import { TextIndex } from "./text-index.js";

/* Pure helpers over ingest batches, shared by every engine so that they agree on the details. */

/** A user record as ingested, before it has an id. Addresses are lowercase; the social username keeps its case. */
export type UserInput = Omit<UserRecord, "id">;

/** The edges a batch deletes; deleting an edge that is not stored is not an error. */
export interface BatchDeletes {
  /** Friend pairs, in either order. */
  /** An array, or typed columns (below; their descriptions are ignored) as the validator hands them. */
  friends: { a: string; b: string }[] | FriendColumns;
  /**
   * A hint, by position in `friends`: 1 where the load upserted the same pair before deleting it. Such a
   * delete cancels the load's own upsert, so the pair may well not be stored: an engine may look before
   * it removes (the redis engine does). It never changes what the batch means.
   */
  friendsCancellingUpserts?: Uint8Array;
  follows: FollowRecord[] | FollowColumns;
  /** The same hint for `follows`: 1 where the load followed before it unfollowed. */
  followsCancellingUpserts?: Uint8Array;
  interactions: { address: string; contract: string }[];
  nfts: { address: string; contract: string }[];
}

/**
 * One validated load, as its net effect: at most one change per thing (the validator applied the
 * load's order). Relations refer to users by relationId; every relationId an upsert names is either
 * in `users` or stored and not erased (the validator checked). Addresses are lowercase.
 *
 * Engines apply it in this order: erasures, users, deletes, upserts of relations, releases.
 */
export interface IngestBatch {
  /**
   * Users erased first: record, identities, every edge touching them, the releases naming them, the
   * interaction and nft records of their addresses, and their recommendation snapshots. A relationId
   * also in `users` is defined again afresh. Unknown relationIds are ignored.
   */
  erasures?: readonly string[];
  /** Users upserted: each replaces the stored record; identities it no longer lists are detached. */
  users: UserInput[];
  /** An array, or typed columns (below) that iterate as the same records: what large loads use. */
  friends: FriendRecord[] | FriendColumns;
  follows: FollowRecord[] | FollowColumns;
  interactions: { address: string; contract: string }[];
  nfts: { address: string; contract: string }[];
  /** Each replaces the user's whole release; `[]` withdraws it. */
  releases: { relationId: string; peers: "*" | string[] }[];
  deletes?: BatchDeletes;
}

/** Number of records in a batch, the unit of write progress for every engine. */
export function recordCount(batch: IngestBatch): number {
  const deletes = batch.deletes;
  return (
    (batch.erasures?.length ?? 0) +
    (deletes ? deletes.friends.length + deletes.follows.length + deletes.interactions.length + deletes.nfts.length : 0) +
    batch.users.length +
    batch.friends.length +
    batch.follows.length +
    batch.interactions.length +
    batch.nfts.length +
    batch.releases.length
  );
}

/** A friend record of a batch. */
export interface FriendRecord {
  a: string;
  b: string;
  description: string;
}

/** A follow record of a batch. */
export interface FollowRecord {
  from: string;
  to: string;
}

/**
 * Friend records in typed columns, relationIds and descriptions as indexes into `names` and
 * `descriptions`: a large load's millions of records then cost a few bytes each and give the
 * garbage collector nothing to trace. Iterates as the records themselves.
 */
export class FriendColumns implements Iterable<FriendRecord> {
  constructor(
    readonly names: readonly string[],
    readonly a: Uint32Array,
    readonly b: Uint32Array,
    readonly descriptions: readonly string[],
    readonly description: Uint32Array,
  ) {}

  get length(): number {
    return this.a.length;
  }

  *[Symbol.iterator](): Iterator<FriendRecord> {
    const { names, a, b, descriptions, description } = this;
    for (let i = 0; i < a.length; i++) yield { a: names[a[i]!]!, b: names[b[i]!]!, description: descriptions[description[i]!]! };
  }

  /**
   * The records in columns; columns are returned as they are, unless `names` is given and they
   * index another list: then they are numbered again in `names`. Records without a description
   * (deletes) read as "".
   */
  static of(records: IngestBatch["friends"] | BatchDeletes["friends"], names?: TextIndex): FriendColumns {
    if (records instanceof FriendColumns && (names === undefined || records.names === names.texts)) return records;
    const index = names ?? new TextIndex();
    const descriptions = new TextIndex();
    const count = records.length;
    const a = new Uint32Array(count);
    const b = new Uint32Array(count);
    const description = new Uint32Array(count);
    let i = 0;
    for (const record of records as Iterable<{ a: string; b: string; description?: string }>) {
      a[i] = index.indexOf(record.a);
      b[i] = index.indexOf(record.b);
      description[i++] = descriptions.indexOf(record.description ?? "");
    }
    return new FriendColumns(index.texts, a, b, descriptions.texts, description);
  }
}

/** Follow records in typed columns, relationIds as indexes into `names` (see FriendColumns). */
export class FollowColumns implements Iterable<FollowRecord> {
  constructor(
    readonly names: readonly string[],
    readonly from: Uint32Array,
    readonly to: Uint32Array,
  ) {}

  get length(): number {
    return this.from.length;
  }

  *[Symbol.iterator](): Iterator<FollowRecord> {
    const { names, from, to } = this;
    for (let i = 0; i < from.length; i++) yield { from: names[from[i]!]!, to: names[to[i]!]! };
  }

  /** The records in columns, as FriendColumns.of makes them. */
  static of(records: IngestBatch["follows"], names?: TextIndex): FollowColumns {
    if (records instanceof FollowColumns && (names === undefined || records.names === names.texts)) return records;
    const index = names ?? new TextIndex();
    const from = new Uint32Array(records.length);
    const to = new Uint32Array(records.length);
    let i = 0;
    for (const record of records) {
      from[i] = index.indexOf(record.from);
      to[i++] = index.indexOf(record.to);
    }
    return new FollowColumns(index.texts, from, to);
  }
}

/** A batch's friend and follow records, upserts and deletes, in columns over one list of relationIds. */
export interface RelationColumns {
  names: readonly string[];
  friends: FriendColumns;
  follows: FollowColumns;
  friendDeletes: FriendColumns;
  /** BatchDeletes.friendsCancellingUpserts, by position in friendDeletes; null without it. */
  friendDeletesCancelling: Uint8Array | null;
  followDeletes: FollowColumns;
  /** BatchDeletes.followsCancellingUpserts, by position in followDeletes; null without it. */
  followDeletesCancelling: Uint8Array | null;
}

/**
 * The batch's relation records in columns over one list of names: as they are when they already
 * share one (the validator's, which numbered every relationId once while reading the load), so
 * that a unit's millions of records are planned by index, with no lookup by name; numbered again
 * otherwise.
 */
export function relationColumns(batch: IngestBatch): RelationColumns {
  const deletes = batch.deletes ?? { friends: [], follows: [] };
  // Renumbering keeps the records' order, so the hint stays aligned either way.
  const hint = (flags: Uint8Array | undefined, records: { length: number }) => (flags !== undefined && flags.length === records.length ? flags : null);
  const friendDeletesCancelling = hint(batch.deletes?.friendsCancellingUpserts, deletes.friends);
  const followDeletesCancelling = hint(batch.deletes?.followsCancellingUpserts, deletes.follows);
  const lists = [batch.friends, batch.follows, deletes.friends, deletes.follows];
  const shared = lists.find((records) => records instanceof FriendColumns || records instanceof FollowColumns)?.names;
  // Empty record lists fit any list of names.
  const fits = (records: (typeof lists)[number]) =>
    records.length === 0 || ((records instanceof FriendColumns || records instanceof FollowColumns) && records.names === shared);
  if (shared !== undefined && lists.every(fits)) {
    const none = new Uint32Array(0);
    const friendsOf = (records: (typeof lists)[number]) => (records instanceof FriendColumns ? records : new FriendColumns(shared, none, none, [""], none));
    const followsOf = (records: (typeof lists)[number]) => (records instanceof FollowColumns ? records : new FollowColumns(shared, none, none));
    return {
      names: shared,
      friends: friendsOf(batch.friends),
      follows: followsOf(batch.follows),
      friendDeletes: friendsOf(deletes.friends),
      friendDeletesCancelling,
      followDeletes: followsOf(deletes.follows),
      followDeletesCancelling,
    };
  }
  const names = new TextIndex();
  return {
    names: names.texts,
    friends: FriendColumns.of(batch.friends, names),
    follows: FollowColumns.of(batch.follows, names),
    friendDeletes: FriendColumns.of(deletes.friends, names),
    friendDeletesCancelling,
    followDeletes: FollowColumns.of(deletes.follows, names),
    followDeletesCancelling,
  };
}

/**
 * Positions 0..n-1 of `key` (or those of `order`, in that order) stably sorted by key, keys being
 * integers in [0, range): a counting sort, linear where a comparison sort of millions of records
 * would not be. Sorting by a minor key and then by a major one orders by both.
 */
export function sortedByKey(key: ArrayLike<number>, range: number, order?: Uint32Array): Uint32Array {
  let positions = order;
  if (!positions) {
    positions = new Uint32Array(key.length);
    for (let i = 0; i < key.length; i++) positions[i] = i;
  }
  const start = new Uint32Array(range + 1);
  for (const i of positions) start[key[i]! + 1]!++;
  for (let k = 1; k <= range; k++) start[k]! += start[k - 1]!;
  const sorted = new Uint32Array(positions.length);
  for (const i of positions) sorted[start[key[i]!]!++] = i;
  return sorted;
}

/** Every relationId a batch names, its users' first, in order of first appearance. */
export function referencedRelationIds(batch: IngestBatch): string[] {
  const referenced = new Set(batch.users.map((user) => user.relationId));
  const friends = FriendColumns.of(batch.friends);
  addNames(referenced, friends.names, friends.a, friends.b);
  const follows = FollowColumns.of(batch.follows);
  addNames(referenced, follows.names, follows.from, follows.to);
  for (const { relationId, peers } of batch.releases) {
    referenced.add(relationId);
    if (peers !== "*") for (const peer of peers) referenced.add(peer);
  }
  return [...referenced];
}

/** Adds the names that the pairs first[i]–second[i] index, in order; each name is looked at once. */
function addNames(referenced: Set<string>, names: readonly string[], first: Uint32Array, second: Uint32Array): void {
  const seen = new Uint8Array(names.length);
  const add = (index: number) => {
    if (seen[index] === 1) return;
    seen[index] = 1;
    referenced.add(names[index]!);
  };
  for (let i = 0; i < first.length; i++) {
    add(first[i]!);
    add(second[i]!);
  }
}

/** The identity index entries a user record owns; a username is indexed case-folded. */
export function identitiesOf(user: UserInput): [IdentityKind, string][] {
  const entries: [IdentityKind, string][] = user.addresses.map((address) => ["address", address]);
  if (user.social) entries.push(["social", foldSocialUsername(user.social.username)]);
  if (user.game) entries.push(["game", user.game.gameId]);
  return entries;
}

/** Identity entries of the old record that the new record no longer has. */
export function staleIdentities(old: UserInput, next: UserInput): [IdentityKind, string][] {
  const kept = new Set(identitiesOf(next).map(([kind, value]) => `${kind}:${value}`));
  return identitiesOf(old).filter(([kind, value]) => !kept.has(`${kind}:${value}`));
}

/** Thrown when a batch names a relationId that is neither in it nor stored; the ingester checks this first. */
export class UnknownRelationIdError extends Error {
  constructor(relationId: string) {
    super(`relationId ${relationId} is neither in the batch nor stored`);
    this.name = "UnknownRelationIdError";
  }
}
