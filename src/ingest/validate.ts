/**
 * Validation of one load (contract.md, "Ingestion format" and "Changes"). Records arrive one at a
 * time, in any order and from any number of files; nothing is written until every record has been
 * checked, here and against what is already stored. The rules beyond the contract's text, written
 * down in docs/reference.md ("Loading data"):
 *
 * - Every record is a JSON object with a known `type` and only that type's fields, plus an optional
 *   `op` ("upsert", the default, or "delete"); blank lines are skipped.
 * - `user`: `relationId` and `addresses` (an array, possibly empty) are required; `name` and `avatar`
 *   may be absent or null and then read as "". `social` / `game` may be absent or null; when present,
 *   `social.username` / `game.gameId` are required non-empty strings without commas (list
 *   parameters are comma-separated) or surrounding spaces, and their `name` / `avatar` default to "".
 *   A username (case-folded), an address or a game id names at most one user.
 * - `friend`: `description` may be absent and then reads as "". Self-friend and self-follow are
 *   errors, and so is a release whose peers include the releasing user.
 * - A delete names what it deletes and nothing else: `relationId` (user, release), `a`/`b` (friend,
 *   a `description` is allowed and ignored), `from`/`to`, `address`/`contract`. A release delete
 *   withdraws the release, as `"peers":[]` does. Deleting what does not exist is not an error.
 * - Records about the same thing (a user, a friend pair in either direction, a follow, an
 *   interaction, an nft, a user's release) apply in load order: the last one wins. A user delete
 *   voids every earlier record of the load that names that user (their user records, edges and
 *   releases, and their place in others' releases) and the earlier interaction and nft records of the
 *   addresses they held, then erases what is stored of them. The validator hands the store the net
 *   effect (IngestBatch), so the store never sees two records about one thing.
 * - A record that survives must only name users that exist once the load is applied: defined by the
 *   load, or stored and not deleted by it.
 * - An identity (address, username, game id) already stored for another user is an error, unless
 *   this load redefines or deletes that user, which frees the identity.
 */
import type { Game, Identity, IdentityKind, Social } from "../domain/model.js";
import { RELATION_ID_PATTERN, normalizeAddress } from "../domain/identity.js";
import { FollowColumns, FriendColumns, identitiesOf, sortedByKey } from "../store/batch.js";
import { TextIndex } from "../store/text-index.js";
import type { GraphStore, IngestBatch, UserInput } from "../store/store.js";
import { float64Column, int32Column, uint32Column, uint8Column, type NumberColumn } from "./columns.js";
import { CompactEdge, CompactRelease } from "./compact-records.js";

/** What validation reads from the store: whether referenced users and claimed identities exist, and what deleted users held. */
export type StoredGraph = Pick<GraphStore, "resolve" | "resolveRelationIds" | "relationIds" | "users">;

/** Options of createLoadValidator. */
export interface LoadValidatorOptions {
  /** Names of the sources (file paths) that error locations cite, by index. */
  sources: readonly string[];
  /** How many errors a report lists before "… and N more errors". */
  maxErrors?: number;
}

/** Collects one load's records, then checks them as a whole and hands back the batch. */
export interface LoadValidator {
  /** Records seen so far (non-blank lines). */
  readonly records: number;
  /** Errors found so far: finish will throw when there are any. */
  readonly errorsSoFar: number;
  /** Parses and checks one line of JSON Lines; blank lines are skipped. Lines are 1-based. */
  addLine(text: string, source: number, line: number): void;
  /** addLine of the line in bytes[start, end), UTF-8 without its line break: the common compact records are read without text. */
  addLineBytes(bytes: Buffer, start: number, end: number, source: number, line: number): void;
  /** Checks one already-parsed record. */
  addRecord(value: unknown, source: number, line: number): void;
  /** Records an error found outside any record; line 0 cites the source alone. */
  reject(source: number, line: number, reason: string): void;
  /** Runs the checks that need the whole load and the store; throws IngestValidationError on any error. */
  finish(store: StoredGraph): Promise<IngestBatch>;
}

/** Thrown when a load holds invalid records; nothing was written. */
export class IngestValidationError extends Error {
  /**
   * @param errors the report: `file:line: reason` lines in file and line order, up to the limit,
   *   then "… and N more errors".
   * @param total how many errors were found in all.
   */
  constructor(
    readonly errors: readonly string[],
    readonly total: number,
  ) {
    super(`${total} error${total === 1 ? "" : "s"} in the load; nothing was written`);
    this.name = "IngestValidationError";
  }
}

/** Creates a validator for one load. */
export function createLoadValidator(options: LoadValidatorOptions): LoadValidator {
  return new Validation(options.sources, options.maxErrors ?? 100);
}

const USER_FIELDS = ["op", "type", "relationId", "name", "avatar", "addresses", "social", "game"];
const FRIEND_FIELDS = ["op", "type", "a", "b", "description"];
const FOLLOW_FIELDS = ["op", "type", "from", "to"];
const ASSET_FIELDS = ["op", "type", "address", "contract"];
const RELEASE_FIELDS = ["op", "type", "relationId", "peers"];
const USER_DELETE_FIELDS = ["op", "type", "relationId"];
const RELEASE_DELETE_FIELDS = ["op", "type", "relationId"];
const SOCIAL_FIELDS = ["username", "name", "avatar"];
const GAME_FIELDS = ["gameId", "name", "avatar"];
const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const NON_SPACE = /\S/;
const IDENTIFIER_MAX = 256;
// Store lookups go in chunks so that a million identities never make one request.
const LOOKUP_CHUNK = 10_000;
// Errors kept for sorting; beyond this they are only counted.
const ERRORS_KEPT = 10_000;
// A location packs the source index and the line into one double; it grows in load order.
const LINE_SPAN = 2 ** 32;
// Column marks of a relation record: what it does, or that a later record or a user delete voids it.
const UPSERT = 0;
const DELETE = 1;
const VOID = 2;

/** Thrown inside a record's checks with the reason it is rejected. */
class RecordError extends Error {}

function fail(reason: string): never {
  throw new RecordError(reason);
}

type Json = Record<string, unknown>;

/** An interaction or nft record, with where it is and what it does. */
interface AssetRecord {
  address: string;
  contract: string;
  at: number;
  op: typeof UPSERT | typeof DELETE;
}

/** A user's latest release record in the load. */
interface ReleaseRecord {
  relationId: number;
  /** Interned relationIds, or "*". */
  peers: "*" | number[];
  at: number;
  /** A release delete: withdraws the release, and is no error when the user does not exist. */
  withdraw: boolean;
}

class Validation implements LoadValidator {
  records = 0;
  private readonly errors: { at: number; reason: string }[] = [];
  private errorCount = 0;
  // relationIds interned to dense indexes: equal strings are shared, and friend pairs sort as integers.
  private readonly relationIds = new TextIndex();
  // Per relationId index: 0 not defined in the load, -1 defined by an invalid record, k users[k-1].
  private readonly definedAs = int32Column();
  // Per relationId index: where the load last deletes that user (0: never).
  private readonly erasedAt = float64Column();
  // Addresses of user records that a later delete voided, by relationId index: their asset records
  // before the delete are voided too.
  private readonly erasedAddresses = new Map<number, Set<string>>();
  // Addresses of user records that a later record of the same user replaced: a later delete voids
  // their asset records too.
  private readonly replacedAddresses = new Map<number, Set<string>>();
  // The latest user record of each relationId the load defines, in order of first appearance (the
  // order ids are allocated in), and where each is.
  private readonly users: UserInput[] = [];
  private readonly userAt = float64Column();
  // Friend and follow records in columns of interned relationIds and descriptions: millions of
  // records held as objects until the write made garbage collection most of a large load's time.
  private readonly friendA = uint32Column();
  private readonly friendB = uint32Column();
  private readonly friendDescription = uint32Column();
  private readonly friendOp = uint8Column();
  private readonly descriptions = new TextIndex();
  private readonly friendAt = float64Column();
  private readonly followFrom = uint32Column();
  private readonly followTo = uint32Column();
  private readonly followOp = uint8Column();
  private readonly followAt = float64Column();
  private followDeletes = 0;
  private readonly interactions: AssetRecord[] = [];
  private readonly nfts: AssetRecord[] = [];
  private assetDeletes = 0;
  private readonly addressIntern = new Map<string, string>();
  private readonly releases = new Map<number, ReleaseRecord>();
  private readonly compactEdge = new CompactEdge();
  private readonly compactRelease = new CompactRelease();

  constructor(
    private readonly sources: readonly string[],
    private readonly maxErrors: number,
  ) {}

  get errorsSoFar(): number {
    return this.errorCount;
  }

  addLine(text: string, source: number, line: number): void {
    // A search for the first non-space character, unlike trim(), copies nothing.
    if (!NON_SPACE.test(text)) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      this.records++;
      this.reject(source, line, `invalid JSON: ${(error as Error).message}`);
      return;
    }
    this.addRecord(value, source, line);
  }

  addLineBytes(bytes: Buffer, start: number, end: number, source: number, line: number): void {
    const at = source * LINE_SPAN + line;
    if (this.compactEdge.read(bytes, start, end)) {
      if (this.addCompactEdge(bytes, this.compactEdge, at)) return;
    } else if (this.compactRelease.read(bytes, start, end) && this.addCompactRelease(bytes, this.compactRelease, at)) {
      return;
    }
    this.addLine(bytes.toString("utf8", start, end), source, line);
  }

  /**
   * What addRelease does with the record, from its bytes: the same release, names numbered in the
   * same order (the releasing user, then each peer once, in order). False, with nothing done, for a
   * list that names the releasing user, left to the general path to report.
   */
  private addCompactRelease(bytes: Buffer, release: CompactRelease, at: number): boolean {
    const { relationIdStart, relationIdEnd, peerStarts, peerEnds } = release;
    for (let k = 0; k < release.peers; k++) {
      if (spellSame(bytes, peerStarts[k]!, peerEnds[k]!, relationIdStart, relationIdEnd)) return false;
    }
    this.records++;
    const idx = this.relationIds.indexOfBytes(bytes, relationIdStart, relationIdEnd);
    let peers: "*" | number[] = "*";
    if (!release.all) {
      const listed: number[] = [];
      for (let k = 0; k < release.peers; k++) listed.push(this.relationIds.indexOfBytes(bytes, peerStarts[k]!, peerEnds[k]!));
      peers = listed.length > 1 ? [...new Set(listed)] : listed;
    }
    this.setRelease(idx, peers, at, release.remove);
    return true;
  }

  /**
   * What addFriend or addFollow does with the record, from its bytes: the same checks (the form
   * already holds the field and pattern ones) and the same columns, names numbered in the same order.
   * False, with nothing done, for a self-friend or self-follow, left to the general path to report.
   */
  private addCompactEdge(bytes: Buffer, edge: CompactEdge, at: number): boolean {
    if (spellSame(bytes, edge.firstStart, edge.firstEnd, edge.secondStart, edge.secondEnd)) return false;
    this.records++;
    const first = this.relationIds.indexOfBytes(bytes, edge.firstStart, edge.firstEnd);
    const second = this.relationIds.indexOfBytes(bytes, edge.secondStart, edge.secondEnd);
    const op = edge.remove ? DELETE : UPSERT;
    if (edge.kind === "follow") {
      this.followFrom.push(first);
      this.followTo.push(second);
      this.followOp.push(op);
      this.followAt.push(at);
      if (op === DELETE) this.followDeletes++;
      return true;
    }
    const description = edge.descriptionAscii
      ? this.descriptions.indexOfBytes(bytes, edge.descriptionStart, edge.descriptionEnd)
      : this.descriptions.indexOf(bytes.toString("utf8", edge.descriptionStart, edge.descriptionEnd));
    this.friendA.push(first);
    this.friendB.push(second);
    this.friendDescription.push(description);
    this.friendOp.push(op);
    this.friendAt.push(at);
    return true;
  }

  addRecord(value: unknown, source: number, line: number): void {
    this.records++;
    const at = source * LINE_SPAN + line;
    try {
      if (!isObject(value)) fail("a record must be a JSON object");
      const op = opOf(value.op);
      switch (value.type) {
        case "user":
          return op === DELETE ? this.deleteUser(value, at) : this.addUser(value, at);
        case "friend":
          return this.addFriend(value, op, at);
        case "follow":
          return this.addFollow(value, op, at);
        case "interaction":
          return this.addAsset(value, op, at, this.interactions);
        case "nft":
          return this.addAsset(value, op, at, this.nfts);
        case "release":
          return this.addRelease(value, op, at);
        case undefined:
          return fail('missing "type"');
        default:
          return fail(`unknown type ${show(value.type)} (expected user, friend, follow, interaction, nft or release)`);
      }
    } catch (error) {
      if (!(error instanceof RecordError)) throw error;
      this.error(at, error.message);
    }
  }

  reject(source: number, line: number, reason: string): void {
    this.error(source * LINE_SPAN + line, reason);
  }

  async finish(store: StoredGraph): Promise<IngestBatch> {
    const { marks: friendMarks, afterUpsert: friendsAfterUpsert } = this.netFriends();
    const { marks: followMarks, afterUpsert: followsAfterUpsert } = this.netFollows();
    const interactions = this.netAssets(this.interactions);
    const nfts = this.netAssets(this.nfts);
    await this.voidAssetsOfErasedUsers(store, [interactions, nfts]);
    const releases = await this.checkReferences(store, friendMarks, followMarks, this.netReleases());
    await this.checkClaims(store);
    if (this.errorCount > 0) throw new IngestValidationError(this.report(), this.errorCount);

    const names = this.relationIds.texts;
    const friendsOf = (op: number) => marked(friendMarks, op);
    const followsOf = (op: number) => marked(followMarks, op);
    const upserted = friendsOf(UPSERT);
    const follows = followsOf(UPSERT);
    const deletedFriends = friendsOf(DELETE);
    const deletedFollows = followsOf(DELETE);
    const assetsOf = (records: AssetRecord[], op: number) =>
      records.filter((record) => record.op === op).map(({ address, contract }) => ({ address, contract }));
    const erasures: string[] = [];
    for (let idx = 0; idx < names.length; idx++) if (this.erasedAt.get(idx) > 0) erasures.push(names[idx]!);
    return {
      erasures,
      users: this.users.filter((_, k) => this.userSurvives(k)),
      friends: new FriendColumns(names, pick(this.friendA, upserted), pick(this.friendB, upserted), this.descriptions.texts, pick(this.friendDescription, upserted)),
      follows: new FollowColumns(names, pick(this.followFrom, follows), pick(this.followTo, follows)),
      interactions: assetsOf(interactions, UPSERT),
      nfts: assetsOf(nfts, UPSERT),
      releases: releases.map(({ relationId, peers }) => ({
        relationId: names[relationId]!,
        peers: peers === "*" ? "*" : peers.map((peer) => names[peer]!),
      })),
      // Deletes stay in columns over the same names too: the writer plans them by index.
      deletes: {
        friends: new FriendColumns(names, pick(this.friendA, deletedFriends), pick(this.friendB, deletedFriends), [""], new Uint32Array(deletedFriends.length)),
        friendsCancellingUpserts: Uint8Array.from(deletedFriends, (i) => friendsAfterUpsert[i]!),
        follows: new FollowColumns(names, pick(this.followFrom, deletedFollows), pick(this.followTo, deletedFollows)),
        followsCancellingUpserts: Uint8Array.from(deletedFollows, (i) => followsAfterUpsert[i]!),
        interactions: assetsOf(interactions, DELETE),
        nfts: assetsOf(nfts, DELETE),
      },
    };
  }

  private addUser(record: Json, at: number): void {
    // The relationId comes first so that a user rejected for another field still counts as defined:
    // references to it then do not each add an "unknown relationId" error.
    const idx = this.relationIds.indexOf(relationIdOf(record.relationId, "relationId"));
    let user: UserInput;
    try {
      checkFields(record, USER_FIELDS, "user record");
      user = {
        relationId: this.relationIds.texts[idx]!,
        name: textOf(record.name, "name"),
        avatar: textOf(record.avatar, "avatar"),
        addresses: this.addressList(record.addresses),
        social: socialOf(record.social),
        game: gameOf(record.game),
      };
    } catch (error) {
      if (this.definedAs.get(idx) === 0) this.definedAs.set(idx, -1);
      throw error;
    }
    const defined = this.definedAs.get(idx);
    if (defined > 0) {
      // A later record of the same user replaces the earlier one, keeping its place in the id order.
      addAll(this.replacedAddresses, idx, this.users[defined - 1]!.addresses);
      this.users[defined - 1] = user;
      this.userAt.set(defined - 1, at);
      return;
    }
    if (defined < 0) return;
    this.users.push(user);
    this.userAt.push(at);
    this.definedAs.set(idx, this.users.length);
  }

  private deleteUser(record: Json, at: number): void {
    checkFields(record, USER_DELETE_FIELDS, "user delete");
    const idx = this.relationIds.indexOf(relationIdOf(record.relationId, "relationId"));
    this.erasedAt.set(idx, at);
    const defined = this.definedAs.get(idx);
    if (defined > 0) addAll(this.erasedAddresses, idx, this.users[defined - 1]!.addresses);
    addAll(this.erasedAddresses, idx, this.replacedAddresses.get(idx) ?? []);
  }

  private addFriend(record: Json, op: number, at: number): void {
    checkFields(record, FRIEND_FIELDS, op === DELETE ? "friend delete" : "friend record");
    const a = relationIdOf(record.a, "a");
    const b = relationIdOf(record.b, "b");
    const description = textOf(record.description, "description");
    if (a === b) fail("a user cannot be their own friend");
    this.friendA.push(this.relationIds.indexOf(a));
    this.friendB.push(this.relationIds.indexOf(b));
    this.friendDescription.push(this.descriptions.indexOf(op === DELETE ? "" : description));
    this.friendOp.push(op);
    this.friendAt.push(at);
  }

  private addFollow(record: Json, op: number, at: number): void {
    checkFields(record, FOLLOW_FIELDS, op === DELETE ? "follow delete" : "follow record");
    const from = relationIdOf(record.from, "from");
    const to = relationIdOf(record.to, "to");
    if (from === to) fail("a user cannot follow themselves");
    this.followFrom.push(this.relationIds.indexOf(from));
    this.followTo.push(this.relationIds.indexOf(to));
    this.followOp.push(op);
    this.followAt.push(at);
    if (op === DELETE) this.followDeletes++;
  }

  private addAsset(record: Json, op: typeof UPSERT | typeof DELETE, at: number, into: AssetRecord[]): void {
    checkFields(record, ASSET_FIELDS, `${String(record.type)} ${op === DELETE ? "delete" : "record"}`);
    const address = this.internAddress(addressOf(record.address, "address"));
    const contract = this.internAddress(addressOf(record.contract, "contract"));
    into.push({ address, contract, at, op });
    if (op === DELETE) this.assetDeletes++;
  }

  private addRelease(record: Json, op: number, at: number): void {
    checkFields(record, op === DELETE ? RELEASE_DELETE_FIELDS : RELEASE_FIELDS, op === DELETE ? "release delete" : "release record");
    const relationId = relationIdOf(record.relationId, "relationId");
    let peers: "*" | string[];
    if (op === DELETE) {
      peers = [];
    } else if (record.peers === "*") {
      peers = "*";
    } else if (Array.isArray(record.peers)) {
      peers = [...new Set(record.peers.map((peer, i) => relationIdOf(peer, `peers[${i}]`)))];
      if (peers.includes(relationId)) fail(`"peers" must not include the releasing user ${show(relationId)}`);
    } else {
      fail('"peers" must be "*" or an array of relationIds');
    }
    const idx = this.relationIds.indexOf(relationId);
    this.setRelease(idx, peers === "*" ? "*" : peers.map((peer) => this.relationIds.indexOf(peer)), at, op === DELETE);
  }

  private setRelease(idx: number, peers: "*" | number[], at: number, withdraw: boolean): void {
    // A release replaces the user's whole release, so only the latest one counts.
    this.releases.set(idx, { relationId: idx, peers, at, withdraw });
  }

  private addressList(value: unknown): string[] {
    if (!Array.isArray(value)) fail('"addresses" must be an array of addresses');
    const addresses = value.map((item, i) => this.internAddress(addressOf(item, `addresses[${i}]`)));
    return [...new Set(addresses)];
  }

  private internAddress(address: string): string {
    const known = this.addressIntern.get(address);
    if (known !== undefined) return known;
    this.addressIntern.set(address, address);
    return address;
  }

  /** Whether users[k] is in the load's outcome: not followed by a delete of the same user. */
  private userSurvives(k: number): boolean {
    const idx = this.relationIds.find(this.users[k]!.relationId)!;
    return this.userAt.get(k) > this.erasedAt.get(idx);
  }

  /** Whether a record at `at` naming idx is voided by a later delete of that user. */
  private voidedBy(idx: number, at: number): boolean {
    return at < this.erasedAt.get(idx);
  }

  /**
   * Marks each friend record UPSERT, DELETE or VOID: the last record of each pair (in either
   * direction) counts, unless a later user delete voids it. Pairs are grouped by a two-pass counting
   * sort on their interned ends: linear time, and a few bytes per edge where a map keyed by pair
   * would cost tens.
   */
  private netFriends(): { marks: Uint8Array; afterUpsert: Uint8Array } {
    const n = this.friendA.length;
    const marks = new Uint8Array(n);
    const a = this.friendA.view();
    const b = this.friendB.view();
    const lo = a.map((ia, i) => Math.min(ia, b[i]!));
    const hi = a.map((ia, i) => Math.max(ia, b[i]!));
    const range = this.relationIds.texts.length;
    const order = sortedByKey(lo, range, sortedByKey(hi, range));
    const samePair = (x: number, y: number) => lo[x] === lo[y] && hi[x] === hi[y];
    lastOfEachGroup(order, samePair, marks);
    const afterUpsert = afterAnUpsert(order, samePair, this.friendOp.view());
    for (let i = 0; i < n; i++) {
      if (marks[i] === VOID) continue;
      const at = this.friendAt.get(i);
      marks[i] = this.voidedBy(a[i]!, at) || this.voidedBy(b[i]!, at) ? VOID : this.friendOp.get(i);
    }
    return { marks, afterUpsert };
  }

  /** Marks each follow record as netFriends does friends; with no follow deletes, repeats are harmless and kept. */
  private netFollows(): { marks: Uint8Array; afterUpsert: Uint8Array } {
    const n = this.followFrom.length;
    const marks = new Uint8Array(n);
    const from = this.followFrom.view();
    const to = this.followTo.view();
    // Read only at deleted follows: with none, nothing is read.
    let afterUpsert: Uint8Array = new Uint8Array(0);
    if (this.followDeletes > 0) {
      const range = this.relationIds.texts.length;
      const order = sortedByKey(from, range, sortedByKey(to, range));
      const sameEdge = (x: number, y: number) => from[x] === from[y] && to[x] === to[y];
      lastOfEachGroup(order, sameEdge, marks);
      afterUpsert = afterAnUpsert(order, sameEdge, this.followOp.view());
    }
    const anyErased = this.erasedAt.length > 0;
    for (let i = 0; i < n; i++) {
      if (marks[i] === VOID) continue;
      const at = this.followAt.get(i);
      marks[i] = anyErased && (this.voidedBy(from[i]!, at) || this.voidedBy(to[i]!, at)) ? VOID : this.followOp.get(i);
    }
    return { marks, afterUpsert };
  }

  /** The last record of each (address, contract) pair; every record when the load deletes none. */
  private netAssets(records: AssetRecord[]): AssetRecord[] {
    if (this.assetDeletes === 0) return records;
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
  private async voidAssetsOfErasedUsers(store: StoredGraph, lists: AssetRecord[][]): Promise<void> {
    const erased: number[] = [];
    for (let idx = 0; idx < this.relationIds.texts.length; idx++) if (this.erasedAt.get(idx) > 0) erased.push(idx);
    if (erased.length === 0 || lists.every((list) => list.length === 0)) return;
    const erasedAtOf = new Map<string, number>();
    const note = (address: string, at: number) => erasedAtOf.set(address, Math.max(erasedAtOf.get(address) ?? 0, at));
    for (const idx of erased) for (const address of this.erasedAddresses.get(idx) ?? []) note(address, this.erasedAt.get(idx));
    for (let start = 0; start < erased.length; start += LOOKUP_CHUNK) {
      const chunk = erased.slice(start, start + LOOKUP_CHUNK);
      const ids = await store.resolveRelationIds(chunk.map((idx) => this.relationIds.texts[idx]!));
      const present = chunk.flatMap((idx, k) => (ids[k] == null ? [] : [{ idx, id: ids[k] }]));
      const records = await store.users(present.map(({ id }) => id));
      present.forEach(({ idx }, k) => {
        for (const address of records[k]?.addresses ?? []) note(address, this.erasedAt.get(idx));
      });
    }
    for (const list of lists) {
      const kept = list.filter((record) => record.at >= (erasedAtOf.get(record.address) ?? 0));
      list.splice(0, list.length, ...kept);
    }
  }

  /** The latest release of each user that survives, without the peers a later user delete removes. */
  private netReleases(): ReleaseRecord[] {
    const releases: ReleaseRecord[] = [];
    for (const release of this.releases.values()) {
      if (this.voidedBy(release.relationId, release.at)) continue;
      const peers = release.peers === "*" ? "*" : release.peers.filter((peer) => !this.voidedBy(peer, release.at));
      releases.push({ ...release, peers });
    }
    return releases;
  }

  /**
   * Every user a surviving upsert names must exist once the load is applied: defined by the load,
   * or stored and not deleted by it. Deletes may name anyone. Resolves with the releases to apply:
   * a release delete of a user that does not exist withdraws nothing, and is dropped.
   */
  private async checkReferences(store: StoredGraph, friendMarks: Uint8Array, followMarks: Uint8Array, releases: ReleaseRecord[]): Promise<ReleaseRecord[]> {
    const names = this.relationIds.texts;
    // Per relationId index: 1 exists, 2 deleted by the load, 3 must be looked up, 4 not stored, 0 not named.
    const state = new Uint8Array(names.length);
    const lookups: number[] = [];
    const stateOf = (idx: number): number => {
      if (state[idx] === 0) {
        const defined = this.definedAs.get(idx);
        if (defined < 0 || (defined > 0 && this.userSurvives(defined - 1))) state[idx] = 1;
        else if (this.erasedAt.get(idx) > 0) state[idx] = 2;
        else {
          state[idx] = 3;
          lookups.push(idx);
        }
      }
      return state[idx]!;
    };
    // Two passes over the references, the second only when some name is missing: a large load names
    // stored users millions of times, and keeping each reference to report it later cost an object apiece.
    let missing = false;
    this.forEachReference(friendMarks, followMarks, releases, (idx) => {
      if (stateOf(idx) === 2) missing = true;
    });
    for (const release of releases) if (release.withdraw) stateOf(release.relationId);
    for (let start = 0; start < lookups.length; start += LOOKUP_CHUNK) {
      const chunk = lookups.slice(start, start + LOOKUP_CHUNK);
      const ids = await store.resolveRelationIds(chunk.map((idx) => names[idx]!));
      chunk.forEach((idx, k) => {
        state[idx] = ids[k] === null ? 4 : 1;
        if (ids[k] === null) missing = true;
      });
    }
    if (missing) {
      this.forEachReference(friendMarks, followMarks, releases, (idx, at) => {
        if (state[idx] === 2) this.error(at, `relationId ${show(names[idx]!)} is deleted at ${this.where(this.erasedAt.get(idx))} and not defined again after it`);
        else if (state[idx] === 4) this.error(at, `unknown relationId ${show(names[idx]!)}: not in this load and not stored`);
      });
    }
    return releases.filter((release) => !release.withdraw || state[release.relationId] === 1);
  }

  /** Every relationId a surviving upsert names, with where: friend ends, follow ends, then releasers and their peers. */
  private forEachReference(friendMarks: Uint8Array, followMarks: Uint8Array, releases: readonly ReleaseRecord[], visit: (idx: number, at: number) => void): void {
    for (let i = 0; i < friendMarks.length; i++) {
      if (friendMarks[i] !== UPSERT) continue;
      visit(this.friendA.get(i), this.friendAt.get(i));
      visit(this.friendB.get(i), this.friendAt.get(i));
    }
    for (let i = 0; i < followMarks.length; i++) {
      if (followMarks[i] !== UPSERT) continue;
      visit(this.followFrom.get(i), this.followAt.get(i));
      visit(this.followTo.get(i), this.followAt.get(i));
    }
    for (const release of releases) {
      if (release.withdraw) continue;
      visit(release.relationId, release.at);
      if (release.peers !== "*") for (const peer of release.peers) visit(peer, release.at);
    }
  }

  /**
   * Each identity (address, case-folded username, game id) names at most one user once the load is
   * applied: no two users of the load claim one, and none is stored for a user the load leaves as it is.
   */
  private async checkClaims(store: StoredGraph): Promise<void> {
    const owners: Record<IdentityKind, Map<string, number>> = { address: new Map(), social: new Map(), game: new Map() };
    const claims: { identity: Identity; user: number }[] = [];
    for (let k = 0; k < this.users.length; k++) {
      if (!this.userSurvives(k)) continue;
      for (const [kind, value] of identitiesOf(this.users[k]!)) {
        const owner = owners[kind].get(value);
        if (owner === undefined) {
          owners[kind].set(value, k);
          claims.push({ identity: { kind, value }, user: k });
          continue;
        }
        // Reported at the later of the two records.
        const [first, second] = this.userAt.get(owner) < this.userAt.get(k) ? [owner, k] : [k, owner];
        this.error(this.userAt.get(second), `${identityLabel(kind, value, this.users[second]!)} already belongs to user ${show(this.users[first]!.relationId)} (${this.where(this.userAt.get(first))})`);
      }
    }
    for (let start = 0; start < claims.length; start += LOOKUP_CHUNK) {
      const chunk = claims.slice(start, start + LOOKUP_CHUNK);
      const ids = await store.resolve(chunk.map((claim) => claim.identity));
      const hits = chunk.flatMap((claim, k) => (ids[k] == null ? [] : [{ claim, id: ids[k] }]));
      if (hits.length === 0) continue;
      const stored = await store.relationIds(hits.map((hit) => hit.id));
      hits.forEach(({ claim }, k) => {
        const owner = stored[k]!;
        const user = this.users[claim.user]!;
        if (owner === user.relationId || owner === "" || this.redefines(owner)) return;
        this.error(this.userAt.get(claim.user), `${identityLabel(claim.identity.kind, claim.identity.value, user)} already belongs to stored user ${show(owner)}`);
      });
    }
  }

  /** Whether the load defines or deletes the user: then its stored identities are the load's to move. */
  private redefines(relationId: string): boolean {
    const idx = this.relationIds.find(relationId);
    return idx !== undefined && (this.definedAs.get(idx) !== 0 || this.erasedAt.get(idx) > 0);
  }

  private error(at: number, reason: string): void {
    this.errorCount++;
    if (this.errors.length < ERRORS_KEPT) this.errors.push({ at, reason });
  }

  private report(): string[] {
    const lines = [...this.errors]
      .sort((x, y) => x.at - y.at)
      .slice(0, this.maxErrors)
      .map(({ at, reason }) => `${this.where(at)}: ${reason}`);
    const more = this.errorCount - lines.length;
    if (more > 0) lines.push(`… and ${more} more error${more === 1 ? "" : "s"}`);
    return lines;
  }

  private where(at: number): string {
    const source = this.sources[Math.floor(at / LINE_SPAN)] ?? "?";
    const line = at % LINE_SPAN;
    return line === 0 ? source : `${source}:${line}`;
  }
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

/** Whether bytes[start1, end1) and bytes[start2, end2) are the same. */
function spellSame(bytes: Buffer, start1: number, end1: number, start2: number, end2: number): boolean {
  if (end1 - start1 !== end2 - start2) return false;
  for (let k = 0; k < end1 - start1; k++) if (bytes[start1 + k] !== bytes[start2 + k]) return false;
  return true;
}

/** Adds `values` to the set at `key`. */
function addAll<K, V>(map: Map<K, Set<V>>, key: K, values: Iterable<V>): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  for (const value of values) set.add(value);
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

function opOf(value: unknown): typeof UPSERT | typeof DELETE {
  if (value === undefined || value === "upsert") return UPSERT;
  if (value === "delete") return DELETE;
  return fail(`"op" must be "upsert" or "delete", got ${show(value)}`);
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function checkFields(record: Json, allowed: readonly string[], what: string): void {
  for (const key in record) {
    if (!allowed.includes(key)) fail(`unknown field ${show(key)} in ${what}`);
  }
}

function relationIdOf(value: unknown, field: string): string {
  if (typeof value !== "string" || !RELATION_ID_PATTERN.test(value)) {
    fail(`"${field}" must be a relationId (1 to 64 of A-Z a-z 0-9 _ -), got ${show(value)}`);
  }
  return value;
}

function addressOf(value: unknown, field: string): string {
  if (typeof value !== "string") fail(`"${field}" must be an address string, got ${show(value)}`);
  const address = normalizeAddress(value);
  if (address !== null) return address;
  return fail(
    HEX_ADDRESS.test(value)
      ? `"${field}" ${show(value)} has a wrong EIP-55 checksum`
      : `"${field}" ${show(value)} is not an address (0x and 40 hex digits)`,
  );
}

function textOf(value: unknown, field: string): string {
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") fail(`"${field}" must be a string, got ${show(value)}`);
  return value;
}

/** A username or game id: what callers pass as a query parameter, so it must survive list parsing. */
function identifierOf(value: unknown, field: string): string {
  if (typeof value !== "string" || value === "" || value.length > IDENTIFIER_MAX || value.trim() !== value || value.includes(",")) {
    fail(`"${field}" must be a non-empty string of at most ${IDENTIFIER_MAX} characters without commas or surrounding spaces, got ${show(value)}`);
  }
  return value;
}

function socialOf(value: unknown): Social | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) fail(`"social" must be an object or null, got ${show(value)}`);
  checkFields(value, SOCIAL_FIELDS, '"social"');
  return {
    username: identifierOf(value.username, "social.username"),
    name: textOf(value.name, "social.name"),
    avatar: textOf(value.avatar, "social.avatar"),
  };
}

function gameOf(value: unknown): Game | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) fail(`"game" must be an object or null, got ${show(value)}`);
  checkFields(value, GAME_FIELDS, '"game"');
  return {
    gameId: identifierOf(value.gameId, "game.gameId"),
    name: textOf(value.name, "game.name"),
    avatar: textOf(value.avatar, "game.avatar"),
  };
}

/** How an error names an identity: a username as the user wrote it, not its folded form. */
function identityLabel(kind: IdentityKind, value: string, user: UserInput): string {
  if (kind === "address") return `address ${value}`;
  return kind === "social" ? `social username ${show(user.social?.username ?? value)}` : `game id ${show(value)}`;
}

/** A value as JSON, cut short so that a report line stays readable. */
function show(value: unknown): string {
  const text = value === undefined ? "undefined" : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}
