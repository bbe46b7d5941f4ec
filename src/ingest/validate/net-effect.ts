/**
 * A load netted to its effect: of the records about one thing the last one counts, a user delete
 * voids what the load said of that user before it, and the store is handed an IngestBatch that never
 * holds two records about one thing.
 */
import { FollowColumns, FriendColumns, sortedByKey } from "../../store/batch.js";
import type { IngestBatch } from "../../store/store.js";
import type { NumberColumn } from "../columns.js";
import { DELETE, LOOKUP_CHUNK, UPSERT, VOID, type AssetRecord, type LoadState, type ReleaseRecord, type StoredGraph } from "./load-state.js";

/** Per record of a column of edges, its mark (UPSERT, DELETE or VOID), and at a surviving delete whether it cancels an upsert of the load. */
export interface EdgeMarks {
  marks: Uint8Array;
  afterUpsert: Uint8Array;
}

/** What survives of a load, ready to check against the store and then to hand over as a batch. */
export interface NetEffect {
  friends: EdgeMarks;
  follows: EdgeMarks;
  interactions: AssetRecord[];
  nfts: AssetRecord[];
  releases: ReleaseRecord[];
}

/** Nets the load's records, reading the store for what the users the load deletes held. */
export async function netEffect(state: LoadState, store: StoredGraph): Promise<NetEffect> {
  const friends = netFriends(state);
  const follows = netFollows(state);
  const interactions = netAssets(state, state.interactions);
  const nfts = netAssets(state, state.nfts);
  await voidAssetsOfErasedUsers(state, store, [interactions, nfts]);
  return { friends, follows, interactions, nfts, releases: netReleases(state) };
}

/** The batch a valid load hands the store; `releases` are the releases that survived the reference checks. */
export function batchOf(state: LoadState, net: NetEffect, releases: readonly ReleaseRecord[]): IngestBatch {
  const { marks: friendMarks, afterUpsert: friendsAfterUpsert } = net.friends;
  const { marks: followMarks, afterUpsert: followsAfterUpsert } = net.follows;
  const { interactions, nfts } = net;
  const names = state.relationIds.texts;
  const friendsOf = (op: number) => marked(friendMarks, op);
  const followsOf = (op: number) => marked(followMarks, op);
  const upserted = friendsOf(UPSERT);
  const follows = followsOf(UPSERT);
  const deletedFriends = friendsOf(DELETE);
  const deletedFollows = followsOf(DELETE);
  const assetsOf = (records: AssetRecord[], op: number) =>
    records.filter((record) => record.op === op).map(({ address, contract }) => ({ address, contract }));
  const erasures: string[] = [];
  for (let idx = 0; idx < names.length; idx++) if (state.erasedAt.get(idx) > 0) erasures.push(names[idx]!);
  return {
    erasures,
    users: state.users.filter((_, k) => state.userSurvives(k)),
    friends: new FriendColumns(names, pick(state.friendA, upserted), pick(state.friendB, upserted), state.descriptions.texts, pick(state.friendDescription, upserted)),
    follows: new FollowColumns(names, pick(state.followFrom, follows), pick(state.followTo, follows)),
    interactions: assetsOf(interactions, UPSERT),
    nfts: assetsOf(nfts, UPSERT),
    releases: releases.map(({ relationId, peers }) => ({
      relationId: names[relationId]!,
      peers: peers === "*" ? "*" : peers.map((peer) => names[peer]!),
    })),
    // Deletes stay in columns over the same names too: the writer plans them by index.
    deletes: {
      friends: new FriendColumns(names, pick(state.friendA, deletedFriends), pick(state.friendB, deletedFriends), [""], new Uint32Array(deletedFriends.length)),
      friendsCancellingUpserts: Uint8Array.from(deletedFriends, (i) => friendsAfterUpsert[i]!),
      follows: new FollowColumns(names, pick(state.followFrom, deletedFollows), pick(state.followTo, deletedFollows)),
      followsCancellingUpserts: Uint8Array.from(deletedFollows, (i) => followsAfterUpsert[i]!),
      interactions: assetsOf(interactions, DELETE),
      nfts: assetsOf(nfts, DELETE),
    },
  };
}

/**
 * Marks each friend record UPSERT, DELETE or VOID: the last record of each pair (in either
 * direction) counts, unless a later user delete voids it. Pairs are grouped by a two-pass counting
 * sort on their interned ends: linear time, and a few bytes per edge where a map keyed by pair
 * would cost tens.
 */
function netFriends(state: LoadState): EdgeMarks {
  const n = state.friendA.length;
  const marks = new Uint8Array(n);
  const a = state.friendA.view();
  const b = state.friendB.view();
  const lo = a.map((ia, i) => Math.min(ia, b[i]!));
  const hi = a.map((ia, i) => Math.max(ia, b[i]!));
  const range = state.relationIds.texts.length;
  const order = sortedByKey(lo, range, sortedByKey(hi, range));
  const samePair = (x: number, y: number) => lo[x] === lo[y] && hi[x] === hi[y];
  lastOfEachGroup(order, samePair, marks);
  const afterUpsert = afterAnUpsert(order, samePair, state.friendOp.view());
  for (let i = 0; i < n; i++) {
    if (marks[i] === VOID) continue;
    const at = state.friendAt.get(i);
    marks[i] = state.voidedBy(a[i]!, at) || state.voidedBy(b[i]!, at) ? VOID : state.friendOp.get(i);
  }
  return { marks, afterUpsert };
}

/** Marks each follow record as netFriends does friends; with no follow deletes, repeats are harmless and kept. */
function netFollows(state: LoadState): EdgeMarks {
  const n = state.followFrom.length;
  const marks = new Uint8Array(n);
  const from = state.followFrom.view();
  const to = state.followTo.view();
  // Read only at deleted follows: with none, nothing is read.
  let afterUpsert: Uint8Array = new Uint8Array(0);
  if (state.followDeletes > 0) {
    const range = state.relationIds.texts.length;
    const order = sortedByKey(from, range, sortedByKey(to, range));
    const sameEdge = (x: number, y: number) => from[x] === from[y] && to[x] === to[y];
    lastOfEachGroup(order, sameEdge, marks);
    afterUpsert = afterAnUpsert(order, sameEdge, state.followOp.view());
  }
  const anyErased = state.erasedAt.length > 0;
  for (let i = 0; i < n; i++) {
    if (marks[i] === VOID) continue;
    const at = state.followAt.get(i);
    marks[i] = anyErased && (state.voidedBy(from[i]!, at) || state.voidedBy(to[i]!, at)) ? VOID : state.followOp.get(i);
  }
  return { marks, afterUpsert };
}

/** The last record of each (address, contract) pair; every record when the load deletes none. */
function netAssets(state: LoadState, records: AssetRecord[]): AssetRecord[] {
  if (state.assetDeletes === 0) return records;
  const last = new Map<string, AssetRecord>();
  for (const record of records) {
    const key = `${record.address}\n${record.contract}`;
    // Re-inserted so that the map keeps load order of the last records.
    last.delete(key);
    last.set(key, record);
  }
  return [...last.values()];
}

/**
 * Drops asset records that a later user delete voids: those of addresses the deleted user held,
 * as stored or as the load recorded before the delete.
 */
async function voidAssetsOfErasedUsers(state: LoadState, store: StoredGraph, lists: AssetRecord[][]): Promise<void> {
  const erased: number[] = [];
  for (let idx = 0; idx < state.relationIds.texts.length; idx++) if (state.erasedAt.get(idx) > 0) erased.push(idx);
  if (erased.length === 0 || lists.every((list) => list.length === 0)) return;
  const erasedAtOf = new Map<string, number>();
  const note = (address: string, at: number) => erasedAtOf.set(address, Math.max(erasedAtOf.get(address) ?? 0, at));
  for (const idx of erased) for (const address of state.erasedAddresses.get(idx) ?? []) note(address, state.erasedAt.get(idx));
  for (let start = 0; start < erased.length; start += LOOKUP_CHUNK) {
    const chunk = erased.slice(start, start + LOOKUP_CHUNK);
    const ids = await store.resolveRelationIds(chunk.map((idx) => state.relationIds.texts[idx]!));
    const present = chunk.flatMap((idx, k) => (ids[k] == null ? [] : [{ idx, id: ids[k] }]));
    const records = await store.users(present.map(({ id }) => id));
    present.forEach(({ idx }, k) => {
      for (const address of records[k]?.addresses ?? []) note(address, state.erasedAt.get(idx));
    });
  }
  for (const list of lists) {
    const kept = list.filter((record) => record.at >= (erasedAtOf.get(record.address) ?? 0));
    list.splice(0, list.length, ...kept);
  }
}

/** The latest release of each user that survives, without the peers a later user delete removes. */
function netReleases(state: LoadState): ReleaseRecord[] {
  const releases: ReleaseRecord[] = [];
  for (const release of state.releases.values()) {
    if (state.voidedBy(release.relationId, release.at)) continue;
    const peers = release.peers === "*" ? "*" : release.peers.filter((peer) => !state.voidedBy(peer, release.at));
    releases.push({ ...release, peers });
  }
  return releases;
}

/**
 * Given positions sorted so that records about one thing are adjacent and in load order, marks every
 * record but the last of its group VOID.
 */
function lastOfEachGroup(order: Uint32Array, same: (x: number, y: number) => boolean, marks: Uint8Array): void {
  for (let k = 0; k + 1 < order.length; k++) {
    if (same(order[k]!, order[k + 1]!)) marks[order[k]!] = VOID;
  }
}

/**
 * Per record, 1 when an earlier record of its group (in `order`, groups adjacent and each in load
 * order) is an upsert: at a group's surviving delete, that the delete cancels an upsert of the load.
 */
function afterAnUpsert(order: Uint32Array, same: (x: number, y: number) => boolean, ops: Uint8Array): Uint8Array {
  const flags = new Uint8Array(order.length);
  let upserted = false;
  for (let k = 0; k < order.length; k++) {
    const i = order[k]!;
    if (k > 0 && !same(order[k - 1]!, i)) upserted = false;
    if (upserted) flags[i] = 1;
    if (ops[i] === UPSERT) upserted = true;
  }
  return flags;
}

/** Positions whose mark is `mark`, in order. */
function marked(marks: Uint8Array, mark: number): Uint32Array {
  let count = 0;
  for (const m of marks) count += m === mark ? 1 : 0;
  const positions = new Uint32Array(count);
  let k = 0;
  for (let i = 0; i < marks.length; i++) if (marks[i] === mark) positions[k++] = i;
  return positions;
}

/** The column's values at `positions`. */
function pick(column: NumberColumn<Uint32Array>, positions: Uint32Array): Uint32Array {
  const values = column.view();
  const picked = new Uint32Array(positions.length);
  for (let k = 0; k < positions.length; k++) picked[k] = values[positions[k]!]!;
  return picked;
}
