import { describe, expect, it } from "vitest";
import { parseCommonRecord } from "../../src/ingest/common-records.js";
import { createPrng } from "../../src/ingest/prng.js";

const friend = (a: string, b: string, description: string) => JSON.stringify({ type: "friend", a, b, description });
const follow = (from: string, to: string) => JSON.stringify({ type: "follow", from, to });

describe("the fast reading of friend and follow lines", () => {
  it.each([
    friend("u1", "u2", "Same guild"),
    friend("alice_1", "bob-2", ""),
    friend("a", "b", "Gefährten 🛡️ in 'raids' / co-signers: 2-of-3"),
    follow("u1", "u1530"),
    follow("x", "y"),
  ])("reads the compact line %s as JSON.parse does", (line) => {
    const record = parseCommonRecord(line);
    expect(record).toBeDefined();
    expect(record).toEqual(JSON.parse(line));
    expect(Object.keys(record!)).toEqual(Object.keys(JSON.parse(line) as object));
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
    ["an extra field", '{"type":"follow","from":"a","to":"b","since":"2024"}'],
    ["a number for a relationId", '{"type":"follow","from":1,"to":"b"}'],
    ["trailing text", `${follow("a", "b")}x`],
    ["another type", '{"type":"user","relationId":"a"}'],
    ["broken JSON", '{"type":"follow","from":"a","to":"b"'],
  ])("leaves a line with %s to JSON.parse", (_, line) => {
    expect(parseCommonRecord(line)).toBeUndefined();
  });

  it("never reads a line differently from JSON.parse (random lines near the compact form)", () => {
    const rng = createPrng("common-records");
    const alphabet = ['"', "\\", "\n", "\t", "\u0000", "\u001f", " ", "a", "Z", "0", "_", "-", ":", ",", "{", "}", "é", "🛡️", "\ud800", "u"];
    const text = () => Array.from({ length: rng.int(4) }, () => alphabet[rng.int(alphabet.length)]).join("");
    const templates = [
      () => `{"type":"friend","a":"${text()}","b":"${text()}","description":"${text()}"}`,
      () => `{"type":"follow","from":"${text()}","to":"${text()}"}`,
      () => `{"type":"follow","from":"${text()}","to":"${text()}"}${text()}`,
    ];
    let fast = 0;
    for (let i = 0; i < 20_000; i++) {
      const line = templates[rng.int(templates.length)]!();
      const record = parseCommonRecord(line);
      if (record === undefined) continue;
      fast++;
      expect(record).toEqual(JSON.parse(line));
    }
    // The property must have been exercised, not only the fallback.
    expect(fast).toBeGreaterThan(1_000);
  });
});
