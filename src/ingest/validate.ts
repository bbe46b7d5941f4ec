/**
 * Validation of one load (contract.md, "Ingestion format"). Records arrive one at a time, in any
 * order and from any number of files; nothing is written until every record has been checked, here
 * and against what is already stored. The rules beyond the contract's text, written down in the
 * README's ingestion section:
 *
 * - Every record is a JSON object with a known `type` and only that type's fields; blank lines are
 *   skipped.
 * - `user`: `relationId` and `addresses` (an array, possibly empty) are required; `name` and `avatar`
 *   may be absent or null and then read as "". `social` / `game` may be absent or null; when present,
 *   `social.username` / `game.gameId` are required non-empty strings without commas (list
 *   parameters are comma-separated) or surrounding spaces, and their `name` / `avatar` default to "".
 *   A username, like an address, names at most one user, case-insensitively; a game id likewise.
 * - `friend`: `description` may be absent and then reads as "". Self-friend and self-follow are
 *   errors, and so is a release whose peers include the releasing user.
 * - Duplicates are fine; the same user, friend pair (in either direction) or release recorded twice
 *   with different content is an error naming both lines.
 * - An identity (address, username, game id) already stored for another user is an error, unless
 *   this load redefines that user, which moves the identity.
 */
import type { Game, Identity, IdentityKind, Social } from "../domain/model.js";
import { RELATION_ID_PATTERN, normalizeAddress, normalizeSocialUsername } from "../domain/identity.js";
import { FollowColumns, FriendColumns, TextIndex, sortedByKey } from "../store/batch.js";
import type { GraphStore, IngestBatch, UserInput } from "../store/store.js";
import { float64Column, int32Column, uint32Column, type NumberColumn } from "./columns.js";
import { parseCommonRecord } from "./common-records.js";

/** What validation reads from the store: whether referenced users and claimed identities exist. */
export type StoredGraph = Pick<GraphStore, "resolve" | "resolveRelationIds" | "relationIds">;

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
  /** Parses and checks one line of JSON Lines; blank lines are skipped. Lines are 1-based. */
  addLine(text: string, source: number, line: number): void;
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

const USER_FIELDS = ["type", "relationId", "name", "avatar", "addresses", "social", "game"];
const FRIEND_FIELDS = ["type", "a", "b", "description"];
const FOLLOW_FIELDS = ["type", "from", "to"];
const ASSET_FIELDS = ["type", "address", "contract"];
const RELEASE_FIELDS = ["type", "relationId", "peers"];
const SOCIAL_FIELDS = ["username", "name", "avatar"];
const GAME_FIELDS = ["gameId", "name", "avatar"];
const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const NON_SPACE = /\S/;
const IDENTIFIER_MAX = 256;
// Store lookups go in chunks so that a million identities never make one request.
const LOOKUP_CHUNK = 10_000;
// Errors kept for sorting; beyond this they are only counted.
const ERRORS_KEPT = 10_000;
// A location packs the source index and the line into one double.
const LINE_SPAN = 2 ** 32;

/** Thrown inside a record's checks with the reason it is rejected. */
class RecordError extends Error {}

function fail(reason: string): never {
  throw new RecordError(reason);
}

type Json = Record<string, unknown>;

/** Locations of references to one relationId that is not (yet) defined in the load. */
interface PendingRefs {
  at: number[];
  more: number;
}

class Validation implements LoadValidator {
  records = 0;
  private readonly errors: { at: number; reason: string }[] = [];
  private errorCount = 0;
  // relationIds interned to dense indexes: equal strings are shared, and friend pairs sort as integers.
  private readonly relationIds = new TextIndex();
  // Per relationId index: 0 not defined in the load, -1 defined by an invalid record, k users[k-1].
  private readonly definedAs = int32Column();
  private readonly pending = new Map<number, PendingRefs>();
  private readonly users: UserInput[] = [];
  private readonly userAt = float64Column();
  private readonly owners: Record<IdentityKind, Map<string, number>> = {
    address: new Map(),
    social: new Map(),
    game: new Map(),
  };
  // Friend and follow records in columns of interned relationIds and descriptions: millions of
  // records held as objects until the write made garbage collection most of a large load's time.
  private readonly friendA = uint32Column();
  private readonly friendB = uint32Column();
  private readonly friendDescription = uint32Column();
  private readonly descriptions = new TextIndex();
  private readonly friendAt = float64Column();
  private readonly followFrom = uint32Column();
  private readonly followTo = uint32Column();
  private readonly interactions: IngestBatch["interactions"] = [];
  private readonly nfts: IngestBatch["nfts"] = [];
  private readonly addressIntern = new Map<string, string>();
  private readonly releases: IngestBatch["releases"] = [];
  private readonly releaseAt: number[] = [];
  private readonly releaseOf = new Map<number, number>();

  constructor(
    private readonly sources: readonly string[],
    private readonly maxErrors: number,
  ) {}

  addLine(text: string, source: number, line: number): void {
    // A search for the first non-space character, unlike trim(), copies nothing.
    if (!NON_SPACE.test(text)) return;
    let value: unknown = parseCommonRecord(text);
    if (value === undefined) {
      try {
        value = JSON.parse(text);
      } catch (error) {
        this.records++;
        this.reject(source, line, `invalid JSON: ${(error as Error).message}`);
        return;
      }
    }
    this.addRecord(value, source, line);
  }

  addRecord(value: unknown, source: number, line: number): void {
    this.records++;
    const at = source * LINE_SPAN + line;
    try {
      if (!isObject(value)) fail("a record must be a JSON object");
      switch (value.type) {
        case "user":
          return this.addUser(value, at);
        case "friend":
          return this.addFriend(value, at);
        case "follow":
          return this.addFollow(value, at);
        case "interaction":
          return this.addAsset(value, this.interactions);
        case "nft":
          return this.addAsset(value, this.nfts);
        case "release":
          return this.addRelease(value, at);
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
    await this.checkStoredReferences(store);
    await this.checkStoredOwners(store);
    const duplicate = this.findDuplicateFriends();
    if (this.errorCount > 0) throw new IngestValidationError(this.report(), this.errorCount);
    const kept = (column: NumberColumn<Uint32Array>) => withoutMarked(column.view(), duplicate);
    return {
      users: this.users,
      friends: new FriendColumns(this.relationIds.texts, kept(this.friendA), kept(this.friendB), this.descriptions.texts, kept(this.friendDescription)),
      follows: new FollowColumns(this.relationIds.texts, this.followFrom.view(), this.followTo.view()),
      interactions: this.interactions,
      nfts: this.nfts,
      releases: this.releases,
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
      if (this.definedAs.get(idx) === 0) this.define(idx, -1);
      throw error;
    }
    const defined = this.definedAs.get(idx);
    if (defined > 0) {
      if (!sameUser(this.users[defined - 1]!, user)) {
        fail(`user ${show(user.relationId)} is already defined differently at ${this.where(this.userAt.get(defined - 1))}`);
      }
      return;
    }
    const userIndex = this.users.length;
    this.users.push(user);
    this.userAt.push(at);
    this.define(idx, userIndex + 1);
    for (const address of user.addresses) this.claim("address", address, userIndex, at);
    if (user.social) this.claim("social", user.social.username, userIndex, at);
    if (user.game) this.claim("game", user.game.gameId, userIndex, at);
  }

  private addFriend(record: Json, at: number): void {
    checkFields(record, FRIEND_FIELDS, "friend record");
    const a = relationIdOf(record.a, "a");
    const b = relationIdOf(record.b, "b");
    const description = textOf(record.description, "description");
    if (a === b) fail("a user cannot be their own friend");
    this.friendA.push(this.reference(a, at));
    this.friendB.push(this.reference(b, at));
    this.friendDescription.push(this.descriptions.indexOf(description));
    this.friendAt.push(at);
  }

  private addFollow(record: Json, at: number): void {
    checkFields(record, FOLLOW_FIELDS, "follow record");
    const from = relationIdOf(record.from, "from");
    const to = relationIdOf(record.to, "to");
    if (from === to) fail("a user cannot follow themselves");
    this.followFrom.push(this.reference(from, at));
    this.followTo.push(this.reference(to, at));
  }

  private addAsset(record: Json, into: { address: string; contract: string }[]): void {
    checkFields(record, ASSET_FIELDS, `${String(record.type)} record`);
    const address = this.internAddress(addressOf(record.address, "address"));
    const contract = this.internAddress(addressOf(record.contract, "contract"));
    into.push({ address, contract });
  }

  private addRelease(record: Json, at: number): void {
    checkFields(record, RELEASE_FIELDS, "release record");
    const relationId = relationIdOf(record.relationId, "relationId");
    let peers: "*" | string[];
    if (record.peers === "*") {
      peers = "*";
    } else if (Array.isArray(record.peers)) {
      peers = [...new Set(record.peers.map((peer, i) => relationIdOf(peer, `peers[${i}]`)))];
      if (peers.includes(relationId)) fail(`"peers" must not include the releasing user ${show(relationId)}`);
    } else {
      fail('"peers" must be "*" or an array of relationIds');
    }
    const idx = this.reference(relationId, at);
    const prior = this.releaseOf.get(idx);
    if (prior !== undefined) {
      if (!sameRelease(this.releases[prior]!.peers, peers)) {
        fail(`the release of ${show(relationId)} is already recorded differently at ${this.where(this.releaseAt[prior]!)}`);
      }
      return;
    }
    const interned = peers === "*" ? peers : peers.map((peer) => this.relationIds.texts[this.reference(peer, at)]!);
    this.releaseOf.set(idx, this.releases.length);
    this.releases.push({ relationId: this.relationIds.texts[idx]!, peers: interned });
    this.releaseAt.push(at);
  }

  private addressList(value: unknown): string[] {
    if (!Array.isArray(value)) fail('"addresses" must be an array of addresses');
    const addresses = value.map((item, i) => this.internAddress(addressOf(item, `addresses[${i}]`)));
    return [...new Set(addresses)];
  }

  /** Registers one user's claim on an identity; a claim by another user of the load is an error. */
  private claim(kind: IdentityKind, value: string, userIndex: number, at: number): void {
    const owners = this.owners[kind];
    const owner = owners.get(value);
    if (owner === undefined) {
      owners.set(value, userIndex);
    } else if (owner !== userIndex) {
      const user = this.users[owner]!;
      this.error(at, `${identityLabel(kind, value)} already belongs to user ${show(user.relationId)} (${this.where(this.userAt.get(owner))})`);
    }
  }

  private internAddress(address: string): string {
    const known = this.addressIntern.get(address);
    if (known !== undefined) return known;
    this.addressIntern.set(address, address);
    return address;
  }

  /** Interns a referenced relationId and remembers where, until the load defines it. */
  private reference(relationId: string, at: number): number {
    const idx = this.relationIds.indexOf(relationId);
    if (this.definedAs.get(idx) !== 0) return idx;
    let refs = this.pending.get(idx);
    if (!refs) {
      refs = { at: [], more: 0 };
      this.pending.set(idx, refs);
    }
    // Only the earliest locations can make the printed report; later ones are counted.
    if (refs.at.length < this.maxErrors) refs.at.push(at);
    else refs.more++;
    return idx;
  }

  private define(idx: number, as: number): void {
    this.definedAs.set(idx, as);
    this.pending.delete(idx);
  }

  private isDefined(relationId: string): boolean {
    const idx = this.relationIds.find(relationId);
    return idx !== undefined && this.definedAs.get(idx) !== 0;
  }

  /** References to users the load does not define must name stored users. */
  private async checkStoredReferences(store: StoredGraph): Promise<void> {
    const missing = [...this.pending.keys()];
    for (let start = 0; start < missing.length; start += LOOKUP_CHUNK) {
      const chunk = missing.slice(start, start + LOOKUP_CHUNK);
      const ids = await store.resolveRelationIds(chunk.map((idx) => this.relationIds.texts[idx]!));
      chunk.forEach((idx, k) => {
        if (ids[k] !== null) return;
        const refs = this.pending.get(idx)!;
        const reason = `unknown relationId ${show(this.relationIds.texts[idx]!)}: not in this load and not stored`;
        for (const at of refs.at) this.error(at, reason);
        this.errorCount += refs.more;
      });
    }
  }

  /** Identities the load assigns must not be stored for a user that this load leaves as it is. */
  private async checkStoredOwners(store: StoredGraph): Promise<void> {
    const claims = this.claims();
    for (let chunk = takeChunk(claims); chunk.length > 0; chunk = takeChunk(claims)) {
      const ids = await store.resolve(chunk.map((claim) => claim.identity));
      const hits = chunk.flatMap((claim, k) => (ids[k] == null ? [] : [{ claim, id: ids[k] }]));
      if (hits.length === 0) continue;
      const owners = await store.relationIds(hits.map((hit) => hit.id));
      hits.forEach(({ claim }, k) => {
        const owner = owners[k]!;
        const user = this.users[claim.user]!;
        if (owner === user.relationId || owner === "" || this.isDefined(owner)) return;
        const where = this.userAt.get(claim.user);
        this.error(where, `${identityLabel(claim.identity.kind, claim.identity.value)} already belongs to stored user ${show(owner)}`);
      });
    }
  }

  private *claims(): Generator<{ identity: Identity; user: number }> {
    for (let user = 0; user < this.users.length; user++) {
      const { addresses, social, game } = this.users[user]!;
      for (const value of addresses) yield { identity: { kind: "address", value }, user };
      if (social) yield { identity: { kind: "social", value: social.username }, user };
      if (game) yield { identity: { kind: "game", value: game.gameId }, user };
    }
  }

  /**
   * Marks repeated friend pairs (1 = drop) and reports pairs recorded with different descriptions.
   * Pairs are grouped by a two-pass counting sort on their interned ends: linear time, and a few
   * bytes per edge where a map keyed by pair would cost tens.
   */
  private findDuplicateFriends(): Uint8Array {
    const n = this.friendA.length;
    const duplicate = new Uint8Array(n);
    const a = this.friendA.view();
    const b = this.friendB.view();
    const lo = a.map((ia, i) => Math.min(ia, b[i]!));
    const hi = a.map((ia, i) => Math.max(ia, b[i]!));
    const order = sortedByKey(lo, this.relationIds.texts.length, sortedByKey(hi, this.relationIds.texts.length));
    let head = 0;
    for (let k = 1; k < n; k++) {
      const first = order[head]!;
      const current = order[k]!;
      if (lo[first] !== lo[current] || hi[first] !== hi[current]) {
        head = k;
        continue;
      }
      duplicate[current] = 1;
      // Interned descriptions: equal indexes, equal texts.
      if (this.friendDescription.get(first) !== this.friendDescription.get(current)) {
        const names = `${show(this.relationIds.texts[a[current]!])}–${show(this.relationIds.texts[b[current]!])}`;
        this.error(this.friendAt.get(current), `friend ${names} is already recorded with a different description at ${this.where(this.friendAt.get(first))}`);
      }
    }
    return duplicate;
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

function takeChunk<T>(items: Iterator<T>): T[] {
  const chunk: T[] = [];
  for (let next = items.next(); !next.done; next = items.next()) {
    chunk.push(next.value);
    if (chunk.length === LOOKUP_CHUNK) break;
  }
  return chunk;
}

/** The values whose entry in `marked` is 0, in order. */
function withoutMarked(values: Uint32Array, marked: Uint8Array): Uint32Array {
  let count = 0;
  for (const mark of marked) count += mark === 0 ? 1 : 0;
  const kept = new Uint32Array(count);
  let k = 0;
  for (let i = 0; i < values.length; i++) if (marked[i] === 0) kept[k++] = values[i]!;
  return kept;
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
    username: normalizeSocialUsername(identifierOf(value.username, "social.username")),
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

function sameUser(x: UserInput, y: UserInput): boolean {
  return (
    x.name === y.name &&
    x.avatar === y.avatar &&
    sameSet(x.addresses, y.addresses) &&
    JSON.stringify(x.social) === JSON.stringify(y.social) &&
    JSON.stringify(x.game) === JSON.stringify(y.game)
  );
}

function sameRelease(x: "*" | string[], y: "*" | string[]): boolean {
  if (x === "*" || y === "*") return x === y;
  return sameSet(x, y);
}

function sameSet(x: readonly string[], y: readonly string[]): boolean {
  if (x.length !== y.length) return false;
  const members = new Set(x);
  return y.every((item) => members.has(item));
}

function identityLabel(kind: IdentityKind, value: string): string {
  if (kind === "address") return `address ${value}`;
  return kind === "social" ? `social username ${show(value)}` : `game id ${show(value)}`;
}

/** A value as JSON, cut short so that a report line stays readable. */
function show(value: unknown): string {
  const text = value === undefined ? "undefined" : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}
