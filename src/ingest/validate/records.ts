/**
 * Reading one load's records, one at a time and in load order, into its LoadState: each record is
 * parsed and checked on its own (fields.ts) and kept in the state's columns; what a record means for
 * the load as a whole is worked out once the load is read (net-effect.ts, references.ts).
 */
import type { UserInput } from "../../store/store.js";
import { CompactEdge, CompactRelease } from "../compact-records.js";
import type { ErrorLog } from "./error-log.js";
import {
  ASSET_FIELDS,
  FOLLOW_FIELDS,
  FRIEND_FIELDS,
  RELEASE_DELETE_FIELDS,
  RELEASE_FIELDS,
  RecordError,
  USER_DELETE_FIELDS,
  USER_FIELDS,
  addressOf,
  checkFields,
  fail,
  gameOf,
  isObject,
  opOf,
  relationIdOf,
  show,
  socialOf,
  textOf,
  type Json,
} from "./fields.js";
import { DELETE, LINE_SPAN, UPSERT, type AssetRecord, type LoadState } from "./load-state.js";

const NON_SPACE = /\S/;

/** Reads records into `state`, reporting each invalid one to `errors`. */
export class RecordReader {
  /** Records seen so far (non-blank lines). */
  records = 0;
  private readonly addressIntern = new Map<string, string>();
  private readonly compactEdge = new CompactEdge();
  private readonly compactRelease = new CompactRelease();

  constructor(
    private readonly state: LoadState,
    private readonly errors: ErrorLog,
  ) {}

  addLine(text: string, source: number, line: number): void {
    // A search for the first non-space character, unlike trim(), copies nothing.
    if (!NON_SPACE.test(text)) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      this.records++;
      this.errors.add(source * LINE_SPAN + line, `invalid JSON: ${(error as Error).message}`);
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
    const relationIds = this.state.relationIds;
    const idx = relationIds.indexOfBytes(bytes, relationIdStart, relationIdEnd);
    let peers: "*" | number[] = "*";
    if (!release.all) {
      const listed: number[] = [];
      for (let k = 0; k < release.peers; k++) listed.push(relationIds.indexOfBytes(bytes, peerStarts[k]!, peerEnds[k]!));
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
    const state = this.state;
    const first = state.relationIds.indexOfBytes(bytes, edge.firstStart, edge.firstEnd);
    const second = state.relationIds.indexOfBytes(bytes, edge.secondStart, edge.secondEnd);
    const op = edge.remove ? DELETE : UPSERT;
    if (edge.kind === "follow") {
      state.followFrom.push(first);
      state.followTo.push(second);
      state.followOp.push(op);
      state.followAt.push(at);
      if (op === DELETE) state.followDeletes++;
      return true;
    }
    const description = edge.descriptionAscii
      ? state.descriptions.indexOfBytes(bytes, edge.descriptionStart, edge.descriptionEnd)
      : state.descriptions.indexOf(bytes.toString("utf8", edge.descriptionStart, edge.descriptionEnd));
    state.friendA.push(first);
    state.friendB.push(second);
    state.friendDescription.push(description);
    state.friendOp.push(op);
    state.friendAt.push(at);
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
          return this.addAsset(value, op, at, this.state.interactions);
        case "nft":
          return this.addAsset(value, op, at, this.state.nfts);
        case "release":
          return this.addRelease(value, op, at);
        case undefined:
          return fail('missing "type"');
        default:
          return fail(`unknown type ${show(value.type)} (expected user, friend, follow, interaction, nft or release)`);
      }
    } catch (error) {
      if (!(error instanceof RecordError)) throw error;
      this.errors.add(at, error.message);
    }
  }

  private addUser(record: Json, at: number): void {
    const state = this.state;
    // The relationId comes first so that a user rejected for another field still counts as defined:
    // references to it then do not each add an "unknown relationId" error.
    const idx = state.relationIds.indexOf(relationIdOf(record.relationId, "relationId"));
    let user: UserInput;
    try {
      checkFields(record, USER_FIELDS, "user record");
      user = {
        relationId: state.relationIds.texts[idx]!,
        name: textOf(record.name, "name"),
        avatar: textOf(record.avatar, "avatar"),
        addresses: this.addressList(record.addresses),
        social: socialOf(record.social),
        game: gameOf(record.game),
      };
    } catch (error) {
      if (state.definedAs.get(idx) === 0) state.definedAs.set(idx, -1);
      throw error;
    }
    const defined = state.definedAs.get(idx);
    if (defined > 0) {
      // A later record of the same user replaces the earlier one, keeping its place in the id order.
      addAll(state.replacedAddresses, idx, state.users[defined - 1]!.addresses);
      state.users[defined - 1] = user;
      state.userAt.set(defined - 1, at);
      return;
    }
    if (defined < 0) return;
    state.users.push(user);
    state.userAt.push(at);
    state.definedAs.set(idx, state.users.length);
  }

  private deleteUser(record: Json, at: number): void {
    const state = this.state;
    checkFields(record, USER_DELETE_FIELDS, "user delete");
    const idx = state.relationIds.indexOf(relationIdOf(record.relationId, "relationId"));
    state.erasedAt.set(idx, at);
    const defined = state.definedAs.get(idx);
    if (defined > 0) addAll(state.erasedAddresses, idx, state.users[defined - 1]!.addresses);
    addAll(state.erasedAddresses, idx, state.replacedAddresses.get(idx) ?? []);
  }

  private addFriend(record: Json, op: number, at: number): void {
    const state = this.state;
    checkFields(record, FRIEND_FIELDS, op === DELETE ? "friend delete" : "friend record");
    const a = relationIdOf(record.a, "a");
    const b = relationIdOf(record.b, "b");
    const description = textOf(record.description, "description");
    if (a === b) fail("a user cannot be their own friend");
    state.friendA.push(state.relationIds.indexOf(a));
    state.friendB.push(state.relationIds.indexOf(b));
    state.friendDescription.push(state.descriptions.indexOf(op === DELETE ? "" : description));
    state.friendOp.push(op);
    state.friendAt.push(at);
  }

  private addFollow(record: Json, op: number, at: number): void {
    const state = this.state;
    checkFields(record, FOLLOW_FIELDS, op === DELETE ? "follow delete" : "follow record");
    const from = relationIdOf(record.from, "from");
    const to = relationIdOf(record.to, "to");
    if (from === to) fail("a user cannot follow themselves");
    state.followFrom.push(state.relationIds.indexOf(from));
    state.followTo.push(state.relationIds.indexOf(to));
    state.followOp.push(op);
    state.followAt.push(at);
    if (op === DELETE) state.followDeletes++;
  }

  private addAsset(record: Json, op: typeof UPSERT | typeof DELETE, at: number, into: AssetRecord[]): void {
    checkFields(record, ASSET_FIELDS, `${String(record.type)} ${op === DELETE ? "delete" : "record"}`);
    const address = this.internAddress(addressOf(record.address, "address"));
    const contract = this.internAddress(addressOf(record.contract, "contract"));
    into.push({ address, contract, at, op });
    if (op === DELETE) this.state.assetDeletes++;
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
    const relationIds = this.state.relationIds;
    const idx = relationIds.indexOf(relationId);
    this.setRelease(idx, peers === "*" ? "*" : peers.map((peer) => relationIds.indexOf(peer)), at, op === DELETE);
  }

  private setRelease(idx: number, peers: "*" | number[], at: number, withdraw: boolean): void {
    // A release replaces the user's whole release, so only the latest one counts.
    this.state.releases.set(idx, { relationId: idx, peers, at, withdraw });
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
