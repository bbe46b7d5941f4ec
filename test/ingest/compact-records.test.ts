import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CompactEdge, CompactRelease } from "../../src/ingest/compact-records.js";
import { ingestRecords, IngestValidationError } from "../../src/ingest/ingest.js";
import { createPrng } from "../../src/synthetic/prng.js";
import { createLoadValidator } from "../../src/ingest/validate.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { addr, userLine } from "./helpers.js";

const friend = (a: string, b: string, description: string) => JSON.stringify({ type: "friend", a, b, description });
const follow = (from: string, to: string) => JSON.stringify({ type: "follow", from, to });
const friendDelete = (a: string, b: string) => JSON.stringify({ op: "delete", type: "friend", a, b });
const followDelete = (from: string, to: string) => JSON.stringify({ op: "delete", type: "follow", from, to });

/** What CompactEdge reads of a line, as text; null when it leaves the line to JSON. */
function read(line: string): Record<string, string | boolean> | null {
  const bytes = Buffer.from(line);
  const edge = new CompactEdge();
  if (!edge.read(bytes, 0, bytes.length)) return null;
  const text = (start: number, end: number) => bytes.toString("utf8", start, end);
  return {
    kind: edge.kind,
    remove: edge.remove,
    first: text(edge.firstStart, edge.firstEnd),
    second: text(edge.secondStart, edge.secondEnd),
    description: text(edge.descriptionStart, edge.descriptionEnd),
  };
}

describe("the byte reading of compact friend and follow lines", () => {
  it.each([
    [friend("u1", "u2", "Same guild"), { kind: "friend", remove: false, first: "u1", second: "u2", description: "Same guild" }],
    [friend("alice_1", "bob-2", ""), { kind: "friend", remove: false, first: "alice_1", second: "bob-2", description: "" }],
    [friend("a", "b", "Gefährten 🛡️ in 'raids' / co-signers: 2-of-3"), { kind: "friend", remove: false, first: "a", second: "b", description: "Gefährten 🛡️ in 'raids' / co-signers: 2-of-3" }],
    [friendDelete("u9", "u10"), { kind: "friend", remove: true, first: "u9", second: "u10", description: "" }],
    [follow("u1", "u1530"), { kind: "follow", remove: false, first: "u1", second: "u1530", description: "" }],
    [followDelete("x", "Y"), { kind: "follow", remove: true, first: "x", second: "Y", description: "" }],
    [follow("a".repeat(64), "b"), { kind: "follow", remove: false, first: "a".repeat(64), second: "b", description: "" }],
  ])("reads %s", (line, expected) => {
    expect(read(line)).toEqual(expected);
  });

  it.each([
    ["an escaped quote", friend("a", "b", 'the "guild"')],
    ["an escaped backslash", friend("a", "b", "back\\slash")],
    ["an escaped newline", friend("a", "b", "two\nlines")],
    ["a \\u escape", '{"type":"friend","a":"\\u0061","b":"b","description":""}'],
    ["a raw tab, which JSON forbids in strings", '{"type":"friend","a":"a","b":"b","description":"x\ty"}'],
    ["spaces between tokens", '{"type": "friend", "a": "a", "b": "b", "description": ""}'],
    ["a trailing space", `${follow("a", "b")} `],
    ["a carriage return", `${follow("a", "b")}\r`],
    ["fields in another order", '{"a":"a","type":"friend","b":"b","description":""}'],
    ["a missing description", '{"type":"friend","a":"a","b":"b"}'],
    ["a description on a delete", '{"op":"delete","type":"friend","a":"a","b":"b","description":"x"}'],
    ['"op":"upsert" spelled out', '{"op":"upsert","type":"follow","from":"a","to":"b"}'],
    ["an extra field", '{"type":"follow","from":"a","to":"b","since":"2024"}'],
    ["a number for a relationId", '{"type":"follow","from":1,"to":"b"}'],
    ["an empty relationId", follow("", "b")],
    ["a relationId of 65 characters", follow("a".repeat(65), "b")],
    ["a relationId with a dot", follow("a.b", "c")],
    ["a relationId with a non-ASCII letter", follow("é", "c")],
    ["trailing text", `${follow("a", "b")}x`],
    ["another type", '{"type":"user","relationId":"a"}'],
    ["broken JSON", '{"type":"follow","from":"a","to":"b"'],
    ["a cut line", '{"type":"fol'],
  ])("leaves a line with %s to JSON", (_, line) => {
    expect(read(line)).toBeNull();
  });
});

const release = (relationId: string, peers: string[] | "*") => JSON.stringify({ type: "release", relationId, peers });
const releaseDelete = (relationId: string) => JSON.stringify({ op: "delete", type: "release", relationId });

/** What CompactRelease reads of a line, as text; null when it leaves the line to JSON. */
function readRelease(line: string): Record<string, unknown> | null {
  const bytes = Buffer.from(line);
  const compact = new CompactRelease();
  if (!compact.read(bytes, 0, bytes.length)) return null;
  const text = (start: number, end: number) => bytes.toString("utf8", start, end);
  const peers = Array.from({ length: compact.peers }, (_, k) => text(compact.peerStarts[k]!, compact.peerEnds[k]!));
  return { remove: compact.remove, relationId: text(compact.relationIdStart, compact.relationIdEnd), peers: compact.all ? "*" : peers };
}

describe("the byte reading of compact release lines", () => {
  const many = Array.from({ length: 40 }, (_, k) => `p${k}`);
  it.each([
    [release("u1", ["u2", "u3"]), { remove: false, relationId: "u1", peers: ["u2", "u3"] }],
    [release("u1", []), { remove: false, relationId: "u1", peers: [] }],
    [release("u1", "*"), { remove: false, relationId: "u1", peers: "*" }],
    [release("a-b_C", ["x", "x"]), { remove: false, relationId: "a-b_C", peers: ["x", "x"] }],
    [release("u1", many), { remove: false, relationId: "u1", peers: many }],
    [releaseDelete("u7"), { remove: true, relationId: "u7", peers: [] }],
  ])("reads %s", (line, expected) => {
    expect(readRelease(line)).toEqual(expected);
  });

  it.each([
    ["spaces between tokens", '{"type": "release", "relationId": "u1", "peers": ["u2"]}'],
    ["a space in the list", '{"type":"release","relationId":"u1","peers":["u2", "u3"]}'],
    ["a trailing comma", '{"type":"release","relationId":"u1","peers":["u2",]}'],
    ["a number for a peer", '{"type":"release","relationId":"u1","peers":[2]}'],
    ["peers of another string", '{"type":"release","relationId":"u1","peers":"all"}'],
    ["an unclosed list", '{"type":"release","relationId":"u1","peers":["u2"}'],
    ["an empty peer", release("u1", [""])],
    ["a peer with a dot", release("u1", ["a.b"])],
    ["a peer of 65 characters", release("u1", ["a".repeat(65)])],
    ["an escaped peer", '{"type":"release","relationId":"u1","peers":["\\u0061"]}'],
    ["peers on a delete", '{"op":"delete","type":"release","relationId":"u1","peers":[]}'],
    ["a missing peers field", '{"type":"release","relationId":"u1"}'],
    ['"op":"upsert" spelled out', '{"op":"upsert","type":"release","relationId":"u1","peers":"*"}'],
    ["trailing text", `${release("u1", ["u2"])}x`],
    ["a cut line", '{"type":"release","relationId":"u1","peers":["u2"'],
  ])("leaves a line with %s to JSON", (_, line) => {
    expect(readRelease(line)).toBeNull();
  });

  it("reads no further than the line's end, whatever the buffer holds after it", () => {
    const line = '{"type":"release","relationId":"u1","peers":[';
    const bytes = Buffer.from(`${line}"u2"]}`);
    expect(new CompactRelease().read(bytes, 0, line.length)).toBe(false);
    const cut = '{"type":"release","relationId":"u1","peers":["u2"';
    expect(new CompactRelease().read(Buffer.from(`${cut}]}`), 0, cut.length)).toBe(false);
  });
});

describe("validation of lines as bytes and as text", () => {
  let store: GraphStore;
  const stored = ["u1", "u2", "u3", "u4"];

  beforeAll(async () => {
    store = createMemoryStore();
    await ingestRecords(
      store,
      stored.map((relationId, i) => userLine(relationId, [addr(`f${i}`)])),
    );
  });

  afterAll(() => store.close());

  /** The load's outcome through `add`: the batch handed to the store, or the error report. */
  async function outcome(lines: readonly string[], add: "text" | "bytes"): Promise<unknown> {
    const validator = createLoadValidator({ sources: ["load"] });
    lines.forEach((line, i) => {
      if (add === "text") return validator.addLine(line, 0, i + 1);
      const bytes = Buffer.from(line);
      validator.addLineBytes(bytes, 0, bytes.length, 0, i + 1);
    });
    try {
      return { records: validator.records, batch: await validator.finish(store) };
    } catch (error) {
      if (!(error instanceof IngestValidationError)) throw error;
      return { records: validator.records, errors: error.errors };
    }
  }

  it("gives the same batch, or the same errors, on random loads near the compact forms", async () => {
    const rng = createPrng("compact-records");
    const ids = [...stored, "u5", "u6", "ghost", "a".repeat(64), "a".repeat(65), "é", "u1 ", ""];
    const fragments = ['"', "\\", "\t", " ", "a", "Z", "0", "_", "-", ":", ",", "{", "}", "é", "🛡️", "\u0000", "\u001f"];
    const id = () => (rng.int(5) === 0 ? ids[rng.int(ids.length)]! : stored[rng.int(stored.length)]!);
    const text = () => Array.from({ length: rng.int(4) }, () => fragments[rng.int(fragments.length)]).join("");
    const templates = [
      () => `{"type":"friend","a":"${id()}","b":"${id()}","description":"${rng.int(3) === 0 ? text() : `since ${rng.int(5)}`}"}`,
      () => `{"op":"delete","type":"friend","a":"${id()}","b":"${id()}"}`,
      () => `{"type":"follow","from":"${id()}","to":"${id()}"}`,
      () => `{"op":"delete","type":"follow","from":"${id()}","to":"${id()}"}`,
      () => `{"type":"follow","from":"${id()}","to":"${id()}"}${text()}`,
      () => `${text()}{"type":"friend","a":"${id()}","b":"${id()}"}`,
      () => JSON.stringify(userLine(rng.int(2) === 0 ? "u5" : "u6", [addr(`e${rng.int(3)}`)])),
      () => JSON.stringify({ op: "delete", type: "user", relationId: id() }),
      () => `{"type":"release","relationId":"${id()}","peers":[${Array.from({ length: rng.int(4) }, () => `"${id()}"`).join(",")}]}`,
      () => `{"type":"release","relationId":"${id()}","peers":${rng.int(2) === 0 ? '"*"' : `["${id()}"${text()}]`}}`,
      () => `{"op":"delete","type":"release","relationId":"${id()}"}${rng.int(3) === 0 ? text() : ""}`,
      () => "",
    ];
    const edge = new CompactEdge();
    const compactRelease = new CompactRelease();
    let compact = 0;
    let compactReleases = 0;
    let valid = 0;
    for (let trial = 0; trial < 400; trial++) {
      const lines = Array.from({ length: 1 + rng.int(12) }, () => templates[rng.int(templates.length)]!());
      for (const line of lines) {
        const bytes = Buffer.from(line);
        if (edge.read(bytes, 0, bytes.length)) compact++;
        if (compactRelease.read(bytes, 0, bytes.length)) compactReleases++;
      }
      const asText = await outcome(lines, "text");
      expect(await outcome(lines, "bytes")).toEqual(asText);
      if ((asText as { batch?: unknown }).batch) valid++;
    }
    // Both ways must have been exercised: compact lines, and loads that pass as well as fail.
    expect(compact).toBeGreaterThan(500);
    expect(compactReleases).toBeGreaterThan(200);
    expect(valid).toBeGreaterThan(40);
    expect(valid).toBeLessThan(360);
  });
});
