import { getAddress } from "ethers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ingestFiles, IngestValidationError, type IngestOptions, type IngestResult } from "../../src/ingest/ingest.js";
import { foldSocialUsername } from "../../src/domain/identity.js";
import { createLoadValidator } from "../../src/ingest/validate.js";
import { FollowColumns, FriendColumns } from "../../src/store/batch.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { addr, createFileBox, dump, userLine, type FileBox } from "./helpers.js";

type Files = Record<string, (string | object)[]>;

let box: FileBox;
let store: GraphStore;

beforeEach(async () => {
  box = await createFileBox();
  store = createMemoryStore();
});

afterEach(async () => {
  await store.close();
  await box.remove();
});

async function paths(files: Files): Promise<string[]> {
  const written: string[] = [];
  for (const [name, lines] of Object.entries(files)) written.push(await box.write(name, lines));
  return written;
}

/** Loads the files and returns the result; fails the test when the load is rejected. */
async function loads(files: Files, options?: IngestOptions): Promise<IngestResult> {
  return ingestFiles(store, await paths(files), options);
}

/** Loads the files, expects a rejection, and returns its report with the directory stripped. */
async function rejects(files: Files, options?: IngestOptions): Promise<string[]> {
  const error: unknown = await ingestFiles(store, await paths(files), options).then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(IngestValidationError);
  return box.relative((error as IngestValidationError).errors);
}

const A = addr("a1");
const B = addr("b1");
const C = addr("c1");
const K = addr("c0001");
const CHECKSUMMED = getAddress(addr("abcdef0123456789abcdef"));
// Same hex digits, one letter's case flipped: a mixed-case address with a wrong checksum.
const BAD_CHECKSUM = CHECKSUMMED.replace(/[a-f]/, (c) => c.toUpperCase());

const u1 = userLine("u1", [A]);
const u2 = userLine("u2", [B]);

async function userOf(relationId: string) {
  const [id] = await store.resolveRelationIds([relationId]);
  if (id == null) return null;
  const [record] = await store.users([id]);
  return record;
}

describe("lines and records", () => {
  it("skips blank lines, tolerates CRLF and a byte-order mark, and counts records", async () => {
    const path = await box.write("a.jsonl", [`\ufeff${JSON.stringify(u1)}\r`, "", "   ", `${JSON.stringify(u2)}\r`]);
    const result = await ingestFiles(store, [path]);
    expect(result).toMatchObject({ records: 2, users: 2 });
    expect(result.recordsPerSecond).toBeGreaterThan(0);
    expect((await userOf("u2"))?.addresses).toEqual([B]);
  });

  it("reports invalid JSON with file and line", async () => {
    const errors = await rejects({ "a.jsonl": [u1, "", '{"type":"user",'] });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^a\.jsonl:3: invalid JSON: /);
  });

  it("requires an object with a known type", async () => {
    expect(await rejects({ "a.jsonl": ["[1,2]", "42", '{"relationId":"u1"}', '{"type":"usr"}', '{"type":7}'] })).toEqual([
      "a.jsonl:1: a record must be a JSON object",
      "a.jsonl:2: a record must be a JSON object",
      'a.jsonl:3: missing "type"',
      'a.jsonl:4: unknown type "usr" (expected user, friend, follow, interaction, nft or release)',
      "a.jsonl:5: unknown type 7 (expected user, friend, follow, interaction, nft or release)",
    ]);
  });

  it("rejects fields a record type does not have", async () => {
    expect(
      await rejects({
        "a.jsonl": [
          { ...u1, extra: 1 },
          { type: "friend", a: "u1", b: "u2", weight: 3 },
          { type: "follow", from: "u1", to: "u2", at: "now" },
          { type: "interaction", address: A, contract: K, value: 1 },
          { type: "release", relationId: "u1", peers: "*", until: 0 },
          { ...u2, social: { username: "bob", karma: 1 } },
        ],
      }),
    ).toEqual([
      'a.jsonl:1: unknown field "extra" in user record',
      'a.jsonl:2: unknown field "weight" in friend record',
      'a.jsonl:3: unknown field "at" in follow record',
      'a.jsonl:4: unknown field "value" in interaction record',
      'a.jsonl:5: unknown field "until" in release record',
      'a.jsonl:6: unknown field "karma" in "social"',
    ]);
  });
});

describe("user records", () => {
  it("checks relationIds", async () => {
    const long = "x".repeat(64);
    await loads({ "ok.jsonl": [userLine(long, []), userLine("A_b-9", [])] });
    expect(await userOf(long)).not.toBeNull();
    expect(
      await rejects({
        "a.jsonl": [userLine("u 1", []), userLine(`${long}y`, []), userLine("", []), { ...u1, relationId: 7 }, { type: "user", addresses: [] }, userLine("z".repeat(100), [])],
      }),
    ).toEqual([
      'a.jsonl:1: "relationId" must be a relationId (1 to 64 of A-Z a-z 0-9 _ -), got "u 1"',
      `a.jsonl:2: "relationId" must be a relationId (1 to 64 of A-Z a-z 0-9 _ -), got "${long}y"`,
      'a.jsonl:3: "relationId" must be a relationId (1 to 64 of A-Z a-z 0-9 _ -), got ""',
      'a.jsonl:4: "relationId" must be a relationId (1 to 64 of A-Z a-z 0-9 _ -), got 7',
      'a.jsonl:5: "relationId" must be a relationId (1 to 64 of A-Z a-z 0-9 _ -), got undefined',
      // Long values are cut short so that a report line stays readable.
      `a.jsonl:6: "relationId" must be a relationId (1 to 64 of A-Z a-z 0-9 _ -), got "${"z".repeat(76)}…`,
    ]);
  });

  it("normalizes addresses to lowercase and accepts a valid checksum or a single case", async () => {
    const upper = `0x${"C1".padStart(40, "0").toUpperCase()}`;
    await loads({ "a.jsonl": [userLine("u1", [CHECKSUMMED, upper, CHECKSUMMED.toLowerCase()])] });
    expect((await userOf("u1"))?.addresses).toEqual([CHECKSUMMED.toLowerCase(), C]);
    const [id] = await store.resolve([{ kind: "address", value: C }]);
    expect(id).not.toBeNull();
  });

  it("rejects malformed addresses and wrong checksums", async () => {
    expect(
      await rejects({
        "a.jsonl": [
          userLine("u1", [BAD_CHECKSUM]),
          userLine("u2", ["0x123"]),
          { ...userLine("u3", []), addresses: A },
          { ...userLine("u4", []), addresses: undefined },
          userLine("u5", [A, 5 as unknown as string]),
        ],
      }),
    ).toEqual([
      `a.jsonl:1: "addresses[0]" "${BAD_CHECKSUM}" has a wrong EIP-55 checksum`,
      'a.jsonl:2: "addresses[0]" "0x123" is not an address (0x and 40 hex digits)',
      'a.jsonl:3: "addresses" must be an array of addresses',
      'a.jsonl:4: "addresses" must be an array of addresses',
      'a.jsonl:5: "addresses[1]" must be an address string, got 5',
    ]);
  });

  it("reads absent or null name, avatar, social and game as empty", async () => {
    await loads({
      "a.jsonl": [
        { type: "user", relationId: "u1", addresses: [A] },
        { type: "user", relationId: "u2", name: null, avatar: null, addresses: [B], social: null, game: null },
      ],
    });
    for (const relationId of ["u1", "u2"]) {
      expect(await userOf(relationId)).toMatchObject({ name: "", avatar: "", social: null, game: null });
    }
    expect(await rejects({ "b.jsonl": [{ ...u1, name: 5 }, { ...u2, social: "bob" }, userLine("u3", [], { game: [] })] })).toEqual([
      'b.jsonl:1: "name" must be a string, got 5',
      'b.jsonl:2: "social" must be an object or null, got "bob"',
      'b.jsonl:3: "game" must be an object or null, got []',
    ]);
  });

  it("keeps social usernames and game ids as given, and matches usernames case-folded", async () => {
    await loads({
      "a.jsonl": [userLine("u1", [A], { social: { username: "Alice_W", name: "Alice" }, game: { gameId: "Steam:42" } })],
    });
    expect(await userOf("u1")).toMatchObject({
      social: { username: "Alice_W", name: "Alice", avatar: "" },
      game: { gameId: "Steam:42", name: "", avatar: "" },
    });
    const ids = await store.resolve([
      { kind: "social", value: foldSocialUsername("ALICE_w") },
      { kind: "game", value: "Steam:42" },
    ]);
    expect(ids.every((id) => id !== null)).toBe(true);
  });

  it("rejects unusable usernames and game ids", async () => {
    const rule = "must be a non-empty string of at most 256 characters without commas or surrounding spaces";
    expect(
      await rejects({
        "a.jsonl": [
          userLine("u1", [], { social: { username: "" } }),
          userLine("u2", [], { social: { username: "a,b" } }),
          userLine("u3", [], { social: { username: " bob" } }),
          userLine("u4", [], { social: { name: "no username" } }),
          userLine("u5", [], { game: { gameId: 76561198000000001 } }),
        ],
      }),
    ).toEqual([
      `a.jsonl:1: "social.username" ${rule}, got ""`,
      `a.jsonl:2: "social.username" ${rule}, got "a,b"`,
      `a.jsonl:3: "social.username" ${rule}, got " bob"`,
      `a.jsonl:4: "social.username" ${rule}, got undefined`,
      `a.jsonl:5: "game.gameId" ${rule}, got 76561198000000000`,
    ]);
  });

  it("applies a user recorded twice in load order: the last record wins, across files", async () => {
    await loads({ "a.jsonl": [userLine("u1", [A, C])], "b.jsonl": [userLine("u1", [C, A, A])] });
    expect((await userOf("u1"))?.addresses).toEqual([C, A]);
    await loads({ "c.jsonl": [u2, u1, { ...u1, name: "Other" }] });
    expect(await userOf("u1")).toMatchObject({ name: "Other", addresses: [A] });
    // Only the last record claims identities: C, listed by the first, is free again.
    await loads({ "d.jsonl": [userLine("u3", [C])] });
    expect((await userOf("u3"))?.addresses).toEqual([C]);
  });
});

describe("identities belong to one user", () => {
  it("rejects an address claimed by two users of the load, across files", async () => {
    expect(await rejects({ "a.jsonl": [u1], "b.jsonl": ["", userLine("u2", [B, A])] })).toEqual([
      `b.jsonl:2: address ${A} already belongs to user "u1" (a.jsonl:1)`,
    ]);
  });

  it("rejects a username claimed twice in any letter case, and a game id claimed twice", async () => {
    expect(
      await rejects({
        "a.jsonl": [
          userLine("u1", [A], { social: { username: "Alice" }, game: { gameId: "g1" } }),
          userLine("u2", [B], { social: { username: "aLICE" } }),
          userLine("u3", [C], { game: { gameId: "g1" } }),
        ],
      }),
    ).toEqual([
      'a.jsonl:2: social username "aLICE" already belongs to user "u1" (a.jsonl:1)',
      'a.jsonl:3: game id "g1" already belongs to user "u1" (a.jsonl:1)',
    ]);
  });

  it("folds usernames as Unicode case folding does: ẞ is ß and ss, dotless ı is not i", async () => {
    expect(
      await rejects({
        "a.jsonl": [userLine("u1", [A], { social: { username: "straße" } }), userLine("u2", [B], { social: { username: "STRAẞE" } })],
      }),
    ).toEqual(['a.jsonl:2: social username "STRAẞE" already belongs to user "u1" (a.jsonl:1)']);
    await loads({ "a.jsonl": [userLine("u1", [A], { social: { username: "ıpek" } }), userLine("u2", [B], { social: { username: "Ipek" } })] });
    const [byDotless, byDotted] = await store.resolve([
      { kind: "social", value: foldSocialUsername("IPEK") },
      { kind: "social", value: foldSocialUsername("ıPEK") },
    ]);
    expect([byDotless, byDotted].map((id) => id === null)).toEqual([false, false]);
    expect(byDotless).not.toBe(byDotted);
  });

  it("rejects identities stored for another user, unless the load redefines that user", async () => {
    await loads({ "a.jsonl": [userLine("u1", [A], { social: { username: "alice" }, game: { gameId: "g1" } })] });
    expect(
      await rejects({
        "b.jsonl": [userLine("u2", [A]), userLine("u3", [B], { social: { username: "ALICE" } }), userLine("u4", [C], { game: { gameId: "g1" } })],
      }),
    ).toEqual([
      `b.jsonl:1: address ${A} already belongs to stored user "u1"`,
      'b.jsonl:2: social username "ALICE" already belongs to stored user "u1"',
      'b.jsonl:3: game id "g1" already belongs to stored user "u1"',
    ]);
    // Redefining u1 without A moves A to u2.
    await loads({ "c.jsonl": [userLine("u2", [A]), userLine("u1", [B])] });
    const [owner] = await store.resolve([{ kind: "address", value: A }]);
    expect(await store.relationIds([owner!])).toEqual(["u2"]);
  });

  it("lets a user keep its own stored identities", async () => {
    await loads({ "a.jsonl": [userLine("u1", [A], { social: { username: "alice" } })] });
    await loads({ "b.jsonl": [userLine("u1", [A, B], { social: { username: "Alice" } })] });
    expect((await userOf("u1"))?.addresses).toEqual([A, B]);
  });
});

describe("relations", () => {
  it("accepts references in any order, across files and to stored users", async () => {
    await loads({
      "a.jsonl": [{ type: "friend", a: "u1", b: "u2", description: "met" }, { type: "follow", from: "u2", to: "u1" }],
      "b.jsonl": [u2, u1],
    });
    await loads({ "c.jsonl": [userLine("u3", [C]), { type: "friend", a: "u3", b: "u1" }, { type: "release", relationId: "u1", peers: ["u3"] }] });
    const state = await dump(store, ["u1", "u2", "u3"]);
    expect(state.u1).toMatchObject({ friends: ["u2", "u3"], followers: ["u2"], release: ["u3"], descriptions: { u2: "met", u3: "" } });
    expect(state.u2).toMatchObject({ friends: ["u1"], following: ["u1"] });
  });

  it("rejects references to users neither in the load nor stored, on every line", async () => {
    await loads({ "a.jsonl": [u1] });
    expect(
      await rejects({
        "b.jsonl": [
          { type: "friend", a: "u1", b: "u9" },
          { type: "follow", from: "u8", to: "u1" },
          { type: "release", relationId: "u1", peers: ["u9"] },
          { type: "release", relationId: "u7", peers: "*" },
          { type: "friend", a: "u8", b: "u9" },
        ],
      }),
    ).toEqual([
      'b.jsonl:1: unknown relationId "u9": not in this load and not stored',
      'b.jsonl:2: unknown relationId "u8": not in this load and not stored',
      'b.jsonl:3: unknown relationId "u9": not in this load and not stored',
      'b.jsonl:4: unknown relationId "u7": not in this load and not stored',
      'b.jsonl:5: unknown relationId "u8": not in this load and not stored',
      'b.jsonl:5: unknown relationId "u9": not in this load and not stored',
    ]);
  });

  it("does not add unknown-reference errors for a user whose own record is invalid", async () => {
    expect(await rejects({ "a.jsonl": [u1, userLine("u2", ["0x1"]), { type: "friend", a: "u1", b: "u2" }] })).toEqual([
      'a.jsonl:2: "addresses[0]" "0x1" is not an address (0x and 40 hex digits)',
    ]);
  });

  it("rejects self-friend and self-follow", async () => {
    expect(await rejects({ "a.jsonl": [u1, { type: "friend", a: "u1", b: "u1" }, { type: "follow", from: "u1", to: "u1" }] })).toEqual([
      "a.jsonl:2: a user cannot be their own friend",
      "a.jsonl:3: a user cannot follow themselves",
    ]);
  });

  it("checks relation fields", async () => {
    expect(
      await rejects({
        "a.jsonl": [u1, u2, { type: "friend", a: "u1", b: "u2", description: 3 }, { type: "friend", a: "u1" }, { type: "follow", from: "u1", to: "bad id" }],
      }),
    ).toEqual([
      'a.jsonl:3: "description" must be a string, got 3',
      'a.jsonl:4: "b" must be a relationId (1 to 64 of A-Z a-z 0-9 _ -), got undefined',
      'a.jsonl:5: "to" must be a relationId (1 to 64 of A-Z a-z 0-9 _ -), got "bad id"',
    ]);
  });

  it("treats friends as undirected: the last record of a pair, in either direction, wins", async () => {
    await loads({
      "a.jsonl": [u1, u2, { type: "friend", a: "u1", b: "u2", description: "x" }, { type: "friend", a: "u2", b: "u1", description: "x" }],
    });
    expect((await dump(store, ["u2"])).u2).toMatchObject({ friends: ["u1"], descriptions: { u1: "x" } });
    await loads({ "b.jsonl": [{ type: "friend", a: "u1", b: "u2", description: "x" }, { type: "friend", a: "u2", b: "u1", description: "y" }] });
    expect((await dump(store, ["u1", "u2"])).u1).toMatchObject({ friends: ["u2"], descriptions: { u2: "y" } });
    // An upsert replaces the relation: no description is no description.
    await loads({ "c.jsonl": [{ type: "friend", a: "u2", b: "u1" }] });
    expect((await dump(store, ["u1", "u2"])).u2).toMatchObject({ friends: ["u1"], descriptions: { u1: "" } });
  });

  it("hands the store friend and follow records in columns, in load order, one per friend pair (its last)", async () => {
    const validator = createLoadValidator({ sources: ["a.jsonl"] });
    const records = [
      u1,
      u2,
      userLine("u3", [C]),
      { type: "friend", a: "u2", b: "u1", description: "x" },
      { type: "follow", from: "u3", to: "u1" },
      { type: "friend", a: "u3", b: "u1" },
      { type: "friend", a: "u1", b: "u2", description: "x" },
      { type: "follow", from: "u1", to: "u2" },
    ];
    records.forEach((record, i) => validator.addRecord(record, 0, i + 1));
    const loaded = await validator.finish(store);
    expect(loaded.friends).toBeInstanceOf(FriendColumns);
    expect(loaded.follows).toBeInstanceOf(FollowColumns);
    expect([...loaded.friends]).toEqual([
      { a: "u3", b: "u1", description: "" },
      { a: "u1", b: "u2", description: "x" },
    ]);
    expect([...loaded.follows]).toEqual([
      { from: "u3", to: "u1" },
      { from: "u1", to: "u2" },
    ]);
  });

  it("accepts releases to everyone or to a list, the last one of a user winning, and rejects other peers", async () => {
    await loads({
      "a.jsonl": [u1, u2, userLine("u3", [C]), { type: "release", relationId: "u1", peers: "*" }, { type: "release", relationId: "u2", peers: ["u1", "u3", "u1"] }, { type: "release", relationId: "u3", peers: [] }],
    });
    const state = await dump(store, ["u1", "u2", "u3"]);
    expect([state.u1, state.u2, state.u3].map((s) => (s as { release: unknown }).release)).toEqual(["*", ["u1", "u3"], []]);
    expect(
      await rejects({
        "b.jsonl": [
          { type: "release", relationId: "u1", peers: "all" },
          { type: "release", relationId: "u1", peers: { u2: true } },
          { type: "release", relationId: "u2", peers: ["u1", "u2"] },
          { type: "release", relationId: "u3", peers: ["u1", 4] },
          { type: "release", relationId: "u1", peers: ["u2"] },
          { type: "release", relationId: "u1", peers: "*" },
        ],
      }),
    ).toEqual([
      'b.jsonl:1: "peers" must be "*" or an array of relationIds',
      'b.jsonl:2: "peers" must be "*" or an array of relationIds',
      'b.jsonl:3: "peers" must not include the releasing user "u2"',
      'b.jsonl:4: "peers[1]" must be a relationId (1 to 64 of A-Z a-z 0-9 _ -), got 4',
    ]);
    await loads({ "c.jsonl": [{ type: "release", relationId: "u1", peers: ["u2"] }, { type: "release", relationId: "u2", peers: "*" }, { type: "release", relationId: "u1", peers: ["u3"] }] });
    const after = await dump(store, ["u1", "u2", "u3"]);
    expect([after.u1, after.u2].map((s) => (s as { release: unknown }).release)).toEqual([["u3"], "*"]);
  });

  it("accepts interactions and NFTs of any address, in any letter case", async () => {
    const contract = getAddress(addr("c0ffee"));
    await loads({
      "a.jsonl": [u1, { type: "interaction", address: A.toUpperCase().replace("0X", "0x"), contract }, { type: "nft", address: A, contract: K }, { type: "interaction", address: C, contract }],
    });
    expect((await dump(store, ["u1"])).u1).toMatchObject({ contracts: [contract.toLowerCase()], nfts: [K] });
    expect(await store.contractIntersection([A, C])).toEqual([contract.toLowerCase()]);
    expect(
      await rejects({ "b.jsonl": [{ type: "nft", address: A, contract: BAD_CHECKSUM }, { type: "interaction", address: "alice", contract: K }] }),
    ).toEqual([
      `b.jsonl:1: "contract" "${BAD_CHECKSUM}" has a wrong EIP-55 checksum`,
      'b.jsonl:2: "address" "alice" is not an address (0x and 40 hex digits)',
    ]);
  });
});

describe("changes", () => {
  const u3 = userLine("u3", [C]);
  const friend = (a: string, b: string, extra: object = {}) => ({ type: "friend", a, b, ...extra });

  it("checks op and the fields of deletes", async () => {
    expect(
      await rejects({
        "a.jsonl": [
          { ...u1, op: "remove" },
          { op: "delete", type: "user", relationId: "u1", name: "x" },
          { op: "delete", type: "release", relationId: "u1", peers: [] },
          { op: "delete", type: "follow", from: "u1" },
        ],
      }),
    ).toEqual([
      'a.jsonl:1: "op" must be "upsert" or "delete", got "remove"',
      'a.jsonl:2: unknown field "name" in user delete',
      'a.jsonl:3: unknown field "peers" in release delete',
      'a.jsonl:4: "to" must be a relationId (1 to 64 of A-Z a-z 0-9 _ -), got undefined',
    ]);
  });

  it("applies records about one edge in load order: the last upsert or delete wins", async () => {
    await loads({ "a.jsonl": [u1, u2, u3, friend("u1", "u2"), friend("u1", "u3"), { type: "follow", from: "u1", to: "u2" }] });
    await loads({
      "b.jsonl": [
        { op: "delete", type: "friend", a: "u2", b: "u1", description: "ignored" },
        { op: "delete", type: "friend", a: "u3", b: "u1" },
        friend("u3", "u1", { description: "again" }),
        { op: "delete", type: "follow", from: "u1", to: "u2" },
        { type: "follow", from: "u2", to: "u1" },
        { op: "delete", type: "follow", from: "u2", to: "u1" },
        { op: "delete", type: "friend", a: "u9", b: "u1" },
      ],
    });
    const state = await dump(store, ["u1"]);
    expect(state.u1).toMatchObject({ friends: ["u3"], descriptions: { u3: "again" }, following: [], followers: [] });
  });

  it("marks the friend deletes that cancel an upsert of the same load, a hint for the store", async () => {
    await loads({ "a.jsonl": ["u1", "u2", "u3", "u4", "u5"].map((id, k) => userLine(id, [addr(`d${k}`)])) });
    const validator = createLoadValidator({ sources: ["b.jsonl"] });
    const records = [
      friend("u1", "u2"),
      { op: "delete", type: "friend", a: "u2", b: "u1" },
      { op: "delete", type: "friend", a: "u1", b: "u3" },
      { op: "delete", type: "friend", a: "u1", b: "u3" },
      friend("u1", "u4"),
      { op: "delete", type: "friend", a: "u1", b: "u4" },
      friend("u4", "u1"),
      friend("u2", "u5"),
      { op: "delete", type: "friend", a: "u2", b: "u5" },
      { op: "delete", type: "friend", a: "u5", b: "u2" },
    ];
    // Half of them through the byte path, which most change lines take, half as parsed records.
    records.forEach((record, i) => {
      if (i % 2 === 0) validator.addRecord(record, 0, i + 1);
      else validator.addLineBytes(Buffer.from(JSON.stringify(record)), 0, JSON.stringify(record).length, 0, i + 1);
    });
    const batch = await validator.finish(store);
    const deletes = [...FriendColumns.of(batch.deletes!.friends)].map(({ a, b }) => `${a}-${b}`);
    const hints = [...batch.deletes!.friendsCancellingUpserts!];
    // u1-u2: upserted then deleted; u1-u3: deleted twice, never upserted; u1-u4: upserted last, no
    // delete; u2-u5: upserted, then deleted twice.
    expect(Object.fromEntries(deletes.map((pair, i) => [pair, hints[i]]))).toEqual({ "u2-u1": 1, "u1-u3": 0, "u5-u2": 1 });
  });

  it("marks the follow deletes that cancel an upsert of the same load, as it does friends", async () => {
    await loads({ "a.jsonl": ["u1", "u2", "u3", "u4"].map((id, k) => userLine(id, [addr(`e${k}`)])) });
    const validator = createLoadValidator({ sources: ["b.jsonl"] });
    const unfollow = (from: string, to: string) => ({ op: "delete", type: "follow", from, to });
    const records = [
      { type: "follow", from: "u1", to: "u2" },
      unfollow("u1", "u2"),
      // The other direction is another edge: never followed in this load.
      unfollow("u2", "u1"),
      { type: "follow", from: "u3", to: "u4" },
      unfollow("u3", "u4"),
      { type: "follow", from: "u3", to: "u4" },
      unfollow("u4", "u3"),
      unfollow("u4", "u3"),
    ];
    records.forEach((record, i) => {
      if (i % 2 === 0) validator.addRecord(record, 0, i + 1);
      else validator.addLineBytes(Buffer.from(JSON.stringify(record)), 0, JSON.stringify(record).length, 0, i + 1);
    });
    const batch = await validator.finish(store);
    const deletes = [...FollowColumns.of(batch.deletes!.follows)].map(({ from, to }) => `${from}>${to}`);
    const hints = [...batch.deletes!.followsCancellingUpserts!];
    expect(Object.fromEntries(deletes.map((edge, i) => [edge, hints[i]]))).toEqual({ "u1>u2": 1, "u2>u1": 0, "u4>u3": 0 });
  });

  it("deletes interactions and nfts, the last record of a pair winning", async () => {
    await loads({ "a.jsonl": [u1, { type: "interaction", address: A, contract: K }, { type: "nft", address: A, contract: C }] });
    await loads({
      "b.jsonl": [
        { op: "delete", type: "interaction", address: A, contract: K },
        { type: "nft", address: A, contract: B },
        { op: "delete", type: "nft", address: A, contract: C },
      ],
    });
    expect((await dump(store, ["u1"])).u1).toMatchObject({ contracts: [], nfts: [B] });
  });

  it("a user delete voids the load's earlier records about them, and erases what is stored", async () => {
    await loads({ "a.jsonl": [u1, u2, u3, friend("u1", "u2"), { type: "release", relationId: "u2", peers: ["u1", "u3"] }] });
    await loads({
      "b.jsonl": [
        friend("u1", "u3"),
        { type: "follow", from: "u3", to: "u1" },
        { type: "interaction", address: A, contract: K },
        { type: "release", relationId: "u3", peers: ["u1", "u2"] },
        { op: "delete", type: "user", relationId: "u1" },
      ],
    });
    const state = await dump(store, ["u1", "u2", "u3"]);
    expect(state.u1).toBeNull();
    expect(state.u2).toMatchObject({ friends: [], release: ["u3"] });
    expect(state.u3).toMatchObject({ friends: [], following: [], release: ["u2"] });
    expect(await store.resolve([{ kind: "address", value: A }])).toEqual([null]);
    expect(await store.addressesKnown([A])).toEqual([false]);
  });

  it("a user deleted and defined again starts afresh; later references name the new user", async () => {
    await loads({ "a.jsonl": [u1, u2, friend("u1", "u2", { description: "old" })] });
    await loads({ "b.jsonl": [{ op: "delete", type: "user", relationId: "u1" }, friend("u1", "u2", { description: "new" }), { ...u1, name: "Again" }] });
    const state = await dump(store, ["u1", "u2"]);
    expect(state.u1).toMatchObject({ user: { name: "Again", addresses: [A] }, friends: ["u2"], descriptions: { u2: "new" } });
  });

  it("rejects references to a user the load deletes and does not define again", async () => {
    await loads({ "a.jsonl": [u1, u2] });
    expect(
      await rejects({ "b.jsonl": [{ op: "delete", type: "user", relationId: "u1" }, friend("u1", "u2"), { type: "release", relationId: "u2", peers: ["u1"] }] }),
    ).toEqual([
      'b.jsonl:2: relationId "u1" is deleted at b.jsonl:1 and not defined again after it',
      'b.jsonl:3: relationId "u1" is deleted at b.jsonl:1 and not defined again after it',
    ]);
    // Deleting a user nobody has heard of is no error.
    await loads({ "c.jsonl": [{ op: "delete", type: "user", relationId: "nobody" }] });
  });

  it("frees the identities of a user the load deletes or redefines without them", async () => {
    await loads({ "a.jsonl": [userLine("u1", [A], { social: { username: "Alice" } })] });
    await loads({ "b.jsonl": [{ op: "delete", type: "user", relationId: "u1" }, userLine("u2", [A], { social: { username: "ALICE" } })] });
    const [owner] = await store.resolve([{ kind: "social", value: foldSocialUsername("alice") }]);
    expect(await store.relationIds([owner!])).toEqual(["u2"]);
  });

  it("withdraws a release with peers [] or a release delete", async () => {
    await loads({ "a.jsonl": [u1, u2, u3, { type: "release", relationId: "u1", peers: "*" }, { type: "release", relationId: "u2", peers: ["u1"] }] });
    await loads({ "b.jsonl": [{ type: "release", relationId: "u1", peers: [] }, { op: "delete", type: "release", relationId: "u2" }] });
    const state = await dump(store, ["u1", "u2"]);
    expect([state.u1, state.u2].map((s) => (s as { release: unknown }).release)).toEqual([[], []]);
  });
});

describe("a load is all or nothing", () => {
  it("writes nothing when any line is bad", async () => {
    const good = Array.from({ length: 200 }, (_, i) => userLine(`v${i}`, [addr(`f${i}`)]));
    const errors = await rejects({ "a.jsonl": [...good, { type: "follow", from: "v1", to: "v1" }], "b.jsonl": [u1] });
    expect(errors).toEqual(["a.jsonl:201: a user cannot follow themselves"]);
    expect(await store.resolveRelationIds(["v0", "v199", "u1"])).toEqual([null, null, null]);
  });

  it("lists errors in file and line order up to the limit, then counts the rest", async () => {
    const bad = Array.from({ length: 150 }, () => "{");
    const errors = await rejects({ "a.jsonl": [...bad.slice(0, 50)], "b.jsonl": [u1, ...bad.slice(50)] });
    expect(errors).toHaveLength(101);
    expect(errors[0]).toMatch(/^a\.jsonl:1: invalid JSON/);
    expect(errors[50]).toMatch(/^b\.jsonl:2: invalid JSON/);
    expect(errors[100]).toBe("… and 50 more errors");
    const few = await rejects({ "c.jsonl": bad.slice(0, 4) }, { maxErrors: 3 });
    expect(few.at(-1)).toBe("… and 1 more error");
  });

  it("reports files that cannot be read", async () => {
    const error: unknown = await ingestFiles(store, [`${box.dir}/missing.jsonl`, box.dir]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IngestValidationError);
    expect(box.relative((error as IngestValidationError).errors)).toEqual([
      "missing.jsonl: cannot read: ENOENT",
      `${box.dir}: cannot read: not a regular file`,
    ]);
  });

  it("leaves the same state when the same files are loaded twice", async () => {
    const files: Files = {
      "a.jsonl": [
        { type: "friend", a: "u1", b: "u2", description: "x" },
        userLine("u1", [A, C], { social: { username: "Alice" } }),
        u2,
        { type: "follow", from: "u1", to: "u2" },
        { type: "interaction", address: C, contract: K },
        { type: "nft", address: B, contract: K },
        { type: "release", relationId: "u2", peers: ["u1"] },
        { type: "friend", a: "u1", b: "u2", description: "x" },
      ],
    };
    await loads(files);
    const first = await dump(store, ["u1", "u2"]);
    expect(first.u1).toMatchObject({ friends: ["u2"], following: ["u2"], contracts: [K] });
    await loads(files);
    expect(await dump(store, ["u1", "u2"])).toEqual(first);
  });

  it("validates without writing on a dry run", async () => {
    const result = await loads({ "a.jsonl": [u1] }, { dryRun: true });
    expect(result.users).toBe(1);
    expect(await store.resolveRelationIds(["u1"])).toEqual([null]);
  });

  it("reports parse progress every 100,000 records and write progress from the store", async () => {
    const lines = Array.from({ length: 100_001 }, (_, i) => JSON.stringify({ type: "interaction", address: addr(`a${i}`), contract: K }));
    const seen: string[] = [];
    await loads({ "a.jsonl": lines }, { onProgress: (progress) => seen.push(progress.phase) });
    expect(seen.filter((phase) => phase === "parse")).toHaveLength(1);
    expect(seen.at(-1)).toBe("write");
  });
});
