import { describe, expect, it } from "vitest";
import { applyEntries, compareIds, type FeedEntry } from "../../src/feed/apply-entries.js";
import { countLines, decodeEntry } from "../../src/feed/entries.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { addr } from "../ingest/helpers.js";

const A = addr("a1");

function entry(id: string, ...records: object[]): FeedEntry {
  return { id, bytes: Buffer.from(records.map((value) => JSON.stringify(value)).join("\n")) };
}

function user(relationId: string, addresses: string[] = [], name = ""): object {
  return { type: "user", relationId, addresses, name };
}

async function names(store: GraphStore, kind: "friends" | "following", relationId: string): Promise<string[] | null> {
  const [id] = await store.resolveRelationIds([relationId]);
  if (id == null) return null;
  return (await store.relationIds(await store.userSet(kind, id))).sort();
}

describe("applyEntries, the feed's apply step", () => {
  it("applies valid entries as one unit, referencing each other in any order", async () => {
    const store = createMemoryStore();
    const { rejected } = await applyEntries(store, [
      entry("1-0", { type: "friend", a: "u1", b: "u2" }),
      entry("1-1", user("u1"), user("u2")),
    ]);
    expect(rejected).toEqual([]);
    expect(await names(store, "friends", "u1")).toEqual(["u2"]);
  });

  it("rejects an invalid entry whole, with every error of it, and the entries that depended on it", async () => {
    const store = createMemoryStore();
    const { rejected } = await applyEntries(store, [
      entry("1-0", user("u1", [A])),
      entry("2-0", user("u2"), { type: "follow", from: "u2", to: "u2" }, { type: "nft" }),
      entry("3-0", { type: "follow", from: "u2", to: "u1" }),
      entry("4-0", { type: "follow", from: "u1", to: "u1" }),
      { id: "5-0", bytes: Buffer.from("{") },
      entry("6-0", user("u3"), { type: "follow", from: "u3", to: "u1" }),
    ]);
    expect(rejected.map((item) => item.id)).toEqual(["2-0", "3-0", "4-0", "5-0"]);
    expect(rejected[0]!.reason).toMatch(/^line 2: a user cannot follow themselves; line 3: "address" must be an address string, got undefined$/);
    expect(rejected[1]!.reason).toBe('unknown relationId "u2": not in this load and not stored');
    expect(rejected[2]!.reason).toBe("a user cannot follow themselves");
    expect(rejected[3]!.reason).toMatch(/^invalid JSON: /);
    expect(await names(store, "following", "u3")).toEqual(["u1"]);
    expect(await names(store, "following", "u2")).toBeNull();
  });

  it("applies a later entry that records a user differently after the earlier one, as an update", async () => {
    const store = createMemoryStore();
    const { rejected } = await applyEntries(store, [
      entry("1-0", user("u1", [], "first")),
      entry("2-0", user("u2")),
      entry("3-0", user("u1", [], "second")),
      entry("4-0", { type: "friend", a: "u1", b: "u2", description: "met" }),
      entry("5-0", { type: "friend", a: "u2", b: "u1", description: "met again" }),
      entry("6-0", { type: "release", relationId: "u1", peers: "*" }),
      entry("7-0", { type: "release", relationId: "u1", peers: ["u2"] }),
    ]);
    expect(rejected).toEqual([]);
    const [id, id2] = await store.resolveRelationIds(["u1", "u2"]);
    expect((await store.users([id!]))[0]?.name).toBe("second");
    expect(await names(store, "friends", "u2")).toEqual(["u1"]);
    expect(await store.friendDescriptions(id!, [id2!])).toEqual(["met again"]);
  });

  it("applies many redefinitions of the same users in one unit in order, the last one winning", async () => {
    const store = createMemoryStore();
    const entries = [entry("1-0", user("u2"))];
    for (let i = 0; i < 200; i++) entries.push(entry(`2-${i}`, user(`u${1 + (i % 2) * 2}`, [], `name ${i}`)));
    entries.push(entry("3-0", { type: "friend", a: "u1", b: "u3" }));
    expect((await applyEntries(store, entries)).rejected).toEqual([]);
    const ids = await store.resolveRelationIds(["u1", "u3"]);
    expect((await store.users(ids.map((id) => id!))).map((record) => record?.name)).toEqual(["name 198", "name 199"]);
    expect(await names(store, "friends", "u1")).toEqual(["u3"]);
  });

  it("fails, applying nothing, when the store fails", async () => {
    const store = createMemoryStore();
    const failing = { ...store, write: () => Promise.reject(new Error("store down")) } as GraphStore;
    await expect(applyEntries(failing, [entry("1-0", user("u1"))])).rejects.toThrow("store down");
  });

  it("orders stream ids numerically", () => {
    expect(["10-0", "9-1", "9-0", "9-10"].sort(compareIds)).toEqual(["9-0", "9-1", "9-10", "10-0"]);
  });
});

describe("decodeEntry", () => {
  /** The entry of these fields decoded, its bytes shown as text. */
  const decode = (fields: [string, string | Buffer][]) => {
    const decoded = decodeEntry({ id: "1-0", fields: fields.map(([name, value]) => [name, Buffer.from(value)]) });
    if (decoded.records === undefined) return decoded;
    const { bytes, ...rest } = decoded;
    return { ...rest, text: bytes.toString() };
  };

  it("takes one record from `record` and JSON Lines from `records`, ignoring other fields", () => {
    expect(decode([["record", '{"type":"user"}\n'], ["source", "crm"]])).toEqual({ id: "1-0", text: '{"type":"user"}', records: 1 });
    expect(decode([["records", "{}\n\n  \n{}\n"]])).toEqual({ id: "1-0", text: "{}\n\n  \n{}\n", records: 2 });
  });

  it("names what is wrong with a malformed entry", () => {
    expect(decode([["other", "x"]])).toEqual({ id: "1-0", reason: 'the entry has neither a "record" nor a "records" field' });
    expect(decode([["record", "{}"], ["records", "{}"]])).toEqual({ id: "1-0", reason: 'the entry has both a "record" and a "records" field; send one' });
    expect(decode([["records", "{}"], ["records", "{}"]])).toEqual({ id: "1-0", reason: 'the entry has the field "records" more than once' });
    expect(decode([["record", " "]])).toEqual({ id: "1-0", reason: '"record" is empty' });
    expect(decode([["record", "{}\n{}"]])).toEqual({ id: "1-0", reason: '"record" holds more than one line; send JSON Lines in "records"' });
  });

  it("takes JSON Lines of no record as valid (an empty file loads as nothing), and a leading byte-order mark as a file's", () => {
    expect(decode([["records", "\n \n"]])).toEqual({ id: "1-0", text: "\n \n", records: 0 });
    expect(decode([["records", ""]])).toEqual({ id: "1-0", text: "", records: 0 });
    expect(decode([["records", "\uFEFF{}\r\n{}"]])).toEqual({ id: "1-0", text: "{}\r\n{}", records: 2 });
    expect(decode([["record", "\uFEFF{}"]])).toEqual({ id: "1-0", text: "{}", records: 1 });
    expect(decode([["record", "\uFEFF"]])).toEqual({ id: "1-0", reason: '"record" is empty' });
    // A mark anywhere else is the record's, and a lone first byte of one is not a mark.
    expect(decode([["records", "{}\n\uFEFF{}"]])).toEqual({ id: "1-0", text: "{}\n\uFEFF{}", records: 2 });
    expect(decode([["records", Buffer.from([0xef, 0x7b, 0x7d])]])).toEqual({ id: "1-0", text: "\uFFFD{}", records: 1 });
  });

  it("keeps the bytes of a `records` entry as Redis holds them, invalid UTF-8 too, for the validator to read", () => {
    const bytes = Buffer.from([0x7b, 0xff, 0x7d]);
    const decoded = decodeEntry({ id: "1-0", fields: [["records", bytes]] });
    expect(decoded).toEqual({ id: "1-0", bytes, records: 1 });
  });

  it("counts non-blank lines", () => {
    const count = (text: string) => countLines(Buffer.from(text));
    expect([count(""), count("a"), count("a\n"), count("a\r\n\t\nb"), count("\n\n"), count("\u00A0")]).toEqual([0, 1, 1, 2, 0, 1]);
  });
});
