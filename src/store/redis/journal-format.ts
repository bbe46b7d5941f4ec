import { type AssetKind, type UserId } from "../../domain/model.js";
import { FollowColumns, FriendColumns } from "../batch.js";
import { type JournalPart } from "./journal.js";
import { pair, type PlannedUnit } from "./write/plan.js";

/* How a planned unit (write/plan.ts) is laid out in the write journal (journal.ts), and read back. */

/** The unit as journal parts. */
export function toJournal(unit: PlannedUnit): Map<string, JournalPart> {
  const { friends, follows } = unit;
  return new Map<string, JournalPart>([
    [
      "commands",
      {
        json: {
          format: UNIT_FORMAT,
          records: unit.records,
          erase: unit.erase,
          users: unit.users,
          unlink: unit.unlink,
          deletes: unit.deletes,
          trims: unit.trims,
          emptied: unit.emptied,
          then: unit.then,
          assets: { contracts: unit.assets.contracts.map(pair), nfts: unit.assets.nfts.map(pair) },
          owners: [...unit.owners],
          names: friends.names,
          friendDescriptions: friends.descriptions,
        },
      },
    ],
    ["ids", unit.ids],
    ["deleteIds", unit.deleteIds],
    ["friendA", friends.a],
    ["friendB", friends.b],
    ["friendDescription", friends.description],
    ["followFrom", follows.from],
    ["followTo", follows.to],
    ["friendDeleteA", unit.friendDeletes.a],
    ["friendDeleteB", unit.friendDeletes.b],
    ["followDeleteFrom", unit.followDeletes.from],
    ["followDeleteTo", unit.followDeletes.to],
    ["releaseIds", unit.releases.ids],
    ["releaseLostBy", unit.releases.lostBy],
    ["releaseLost", unit.releases.lost],
    ["releaseGainedBy", unit.releases.gainedBy],
    ["releaseGained", unit.releases.gained],
  ]);
}

/** The unit the journal parts hold. */
export function fromJournal(parts: Map<string, JournalPart>): PlannedUnit {
  const json = (parts.get("commands") as { json?: JournalledCommands } | undefined)?.json;
  if (json?.format !== UNIT_FORMAT) {
    throw new JournalFormatError(`the write journal holds a unit of format ${String(json?.format ?? 1)}, and this relgraph applies format ${UNIT_FORMAT} only: finish it with the relgraph version that wrote it`);
  }
  const typed = <T extends Uint32Array | Float64Array>(name: string, kind: new (length: number) => T): T => {
    const part = parts.get(name);
    if (!(part instanceof kind)) throw new JournalFormatError(`the write journal's unit lacks its part "${name}"`);
    return part;
  };
  const u32 = (name: string) => typed(name, Uint32Array);
  const f64 = (name: string) => typed(name, Float64Array);
  const unpair = ([address, contract]: [string, string]) => ({ address, contract });
  const deletedFriends = u32("friendDeleteA").length;
  const names = json.names.length;
  if (f64("ids").length !== names || f64("deleteIds").length !== names) throw new JournalFormatError("the write journal's ids do not match its names");
  checkColumns(names, u32("friendA"), u32("friendB"), u32("friendDescription"));
  checkColumns(names, u32("followFrom"), u32("followTo"));
  checkColumns(names, u32("friendDeleteA"), u32("friendDeleteB"));
  checkColumns(names, u32("followDeleteFrom"), u32("followDeleteTo"));
  const releaseIds = f64("releaseIds");
  checkColumns(releaseIds.length, u32("releaseLostBy"), u32("releaseLost"));
  checkColumns(releaseIds.length, u32("releaseGainedBy"), u32("releaseGained"));
  return {
    records: json.records,
    erase: json.erase,
    users: json.users,
    unlink: json.unlink,
    deletes: json.deletes,
    friends: new FriendColumns(json.names, u32("friendA"), u32("friendB"), json.friendDescriptions, u32("friendDescription")),
    follows: new FollowColumns(json.names, u32("followFrom"), u32("followTo")),
    friendDeletes: new FriendColumns(json.names, u32("friendDeleteA"), u32("friendDeleteB"), [""], new Uint32Array(deletedFriends)),
    followDeletes: new FollowColumns(json.names, u32("followDeleteFrom"), u32("followDeleteTo")),
    ids: f64("ids"),
    deleteIds: f64("deleteIds"),
    assets: { contracts: json.assets.contracts.map(unpair), nfts: json.assets.nfts.map(unpair) },
    owners: new Map(json.owners),
    releases: { ids: releaseIds, lostBy: u32("releaseLostBy"), lost: u32("releaseLost"), gainedBy: u32("releaseGainedBy"), gained: u32("releaseGained") },
    trims: json.trims,
    emptied: json.emptied,
    then: json.then,
  };
}

/**
 * The layout of a journalled unit (its parts and their meaning), written into it: a unit of another
 * layout (from an older relgraph) is refused rather than applied wrong.
 */
const UNIT_FORMAT = 3;

/** Thrown when the journal holds a unit this relgraph cannot apply as written; nothing was applied. */
export class JournalFormatError extends Error {
  override name = "JournalFormatError";
}

/**
 * Refuses columns of a journalled unit that differ in length or index past the list they index
 * (relation columns: its names; release changes: their users). The description column is checked
 * for length only.
 */
function checkColumns(listLength: number, first: Uint32Array, second: Uint32Array, third?: Uint32Array): void {
  if (second.length !== first.length || (third !== undefined && third.length !== first.length)) {
    throw new JournalFormatError("the write journal's columns differ in length");
  }
  for (let i = 0; i < first.length; i++) {
    if (first[i]! >= listLength || second[i]! >= listLength) throw new JournalFormatError("the write journal's columns index past their list");
  }
}

/** The JSON part of a journalled unit. */
interface JournalledCommands {
  format: number;
  records: number;
  erase: string[][];
  users: string[][];
  unlink: string[][];
  deletes: string[][];
  trims: UserId[];
  emptied: [AssetKind, string][];
  then: string[][];
  assets: Record<AssetKind, [string, string][]>;
  owners: [string, UserId][];
  /** The relation columns' names, by index. */
  names: string[];
  friendDescriptions: string[];
}
