import { describe, expect, it } from "vitest";
import { FollowColumns, FriendColumns, recordCount, referencedRelationIds, relationColumns, sortedByKey } from "../../src/store/batch.js";
import { TextIndex } from "../../src/store/text-index.js";
import { batch, user } from "./store-acceptance.js";

const friends = [
  { a: "u1", b: "u2", description: "met at ETHDenver" },
  { a: "u3", b: "u1", description: "" },
  { a: "u2", b: "u3", description: "met at ETHDenver" },
];
const follows = [
  { from: "u4", to: "u1" },
  { from: "u1", to: "u5" },
];

describe("record columns", () => {
  it("iterate as the records they were made of, in order", () => {
    const friendColumns = FriendColumns.of(friends);
    const followColumns = FollowColumns.of(follows);
    expect(friendColumns.length).toBe(3);
    expect([...friendColumns]).toEqual(friends);
    expect(followColumns.length).toBe(2);
    expect([...followColumns]).toEqual(follows);
    // Names and descriptions are stored once each.
    expect(friendColumns.names).toEqual(["u1", "u2", "u3"]);
    expect(friendColumns.descriptions).toEqual(["met at ETHDenver", ""]);
    expect(FriendColumns.of(friendColumns)).toBe(friendColumns);
  });

  it("give a batch the same record count and referenced relationIds as arrays", () => {
    const users = [user("u9", []), user("u2", [])];
    const asArrays = batch({ users, friends, follows });
    const asColumns = batch({ users, friends: FriendColumns.of(friends), follows: FollowColumns.of(follows) });
    expect(referencedRelationIds(asColumns)).toEqual(["u9", "u2", "u1", "u3", "u4", "u5"]);
    expect(referencedRelationIds(asColumns)).toEqual(referencedRelationIds(asArrays));
    expect(recordCount(asColumns)).toBe(recordCount(asArrays));
  });
});

describe("relationColumns", () => {
  it("keeps columns that share one list of names as they are, empty lists fitting any", () => {
    const names = new TextIndex();
    const shared = batch({ friends: FriendColumns.of(friends, names), follows: FollowColumns.of(follows, names) });
    shared.deletes = { friends: FriendColumns.of([{ a: "u5", b: "u1" }], names), follows: [], interactions: [], nfts: [] };
    const columns = relationColumns(shared);
    expect(columns.names).toBe(names.texts);
    expect(columns.friends).toBe(shared.friends);
    expect(columns.follows).toBe(shared.follows);
    expect(columns.friendDeletes).toBe(shared.deletes.friends);
    expect(columns.followDeletes.length).toBe(0);
    expect(columns.followDeletes.names).toBe(names.texts);
  });

  it("numbers records of arrays, or of columns over different names, again in one list", () => {
    const mixed = batch({ friends: FriendColumns.of(friends), follows: FollowColumns.of(follows) });
    mixed.deletes = { friends: [{ a: "ghost", b: "u1" }], follows: [{ from: "u5", to: "u4" }], interactions: [], nfts: [] };
    const columns = relationColumns(mixed);
    expect(columns.names).toEqual(["u1", "u2", "u3", "u4", "u5", "ghost"]);
    for (const part of [columns.friends, columns.follows, columns.friendDeletes, columns.followDeletes]) expect(part.names).toBe(columns.names);
    expect([...columns.friends]).toEqual(friends);
    expect([...columns.follows]).toEqual(follows);
    expect([...columns.friendDeletes]).toEqual([{ a: "ghost", b: "u1", description: "" }]);
    expect([...columns.followDeletes]).toEqual([{ from: "u5", to: "u4" }]);
  });
});

describe("sortedByKey", () => {
  it("orders positions by key, stably, and by two keys when sorted by the minor one first", () => {
    const key = [2, 0, 1, 0, 2];
    expect(Array.from(sortedByKey(key, 3))).toEqual([1, 3, 2, 0, 4]);
    const major = [1, 0, 1, 0];
    const minor = [0, 1, 1, 0];
    // By major key, then minor: (0,0) is 3, (0,1) is 1, (1,0) is 0, (1,1) is 2.
    expect(Array.from(sortedByKey(major, 2, sortedByKey(minor, 2)))).toEqual([3, 1, 0, 2]);
    expect(Array.from(sortedByKey([], 1))).toEqual([]);
  });
});
