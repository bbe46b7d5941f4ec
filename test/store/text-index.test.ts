import { describe, expect, it } from "vitest";
import { createPrng } from "../../src/synthetic/prng.js";
import { TextIndex } from "../../src/store/text-index.js";

describe("TextIndex", () => {
  it("numbers distinct texts in order of first appearance, by text or by bytes alike", () => {
    const index = new TextIndex();
    const line = Buffer.from('{"a":"u1","b":"u2"}');
    expect(index.indexOf("u2")).toBe(0);
    expect(index.indexOfBytes(line, 6, 8)).toBe(1); // u1
    expect(index.indexOfBytes(line, 15, 17)).toBe(0); // u2
    expect(index.indexOf("u1")).toBe(1);
    expect(index.indexOfBytes(line, 0, 0)).toBe(2); // ""
    expect(index.indexOf("")).toBe(2);
    expect(index.texts).toEqual(["u2", "u1", ""]);
    expect(index.find("u1")).toBe(1);
    expect(index.find("u3")).toBeUndefined();
  });

  it("keeps every number as it grows, and agrees with a Map on many texts", () => {
    const rng = createPrng("text-index");
    const index = new TextIndex();
    const reference = new Map<string, number>();
    for (let i = 0; i < 50_000; i++) {
      const text = `u${rng.int(20_000)}${rng.int(7) === 0 ? "é" : ""}`;
      if (!reference.has(text)) reference.set(text, reference.size);
      if (!text.endsWith("é") && rng.int(2) === 0) {
        const bytes = Buffer.from(`"${text}"`);
        expect(index.indexOfBytes(bytes, 1, bytes.length - 1)).toBe(reference.get(text));
      } else {
        expect(index.indexOf(text)).toBe(reference.get(text));
      }
    }
    expect(index.texts).toEqual([...reference.keys()]);
    for (const [text, number] of reference) expect(index.find(text)).toBe(number);
  });

  it("takes only ASCII bytes, where a byte is a character code", () => {
    const index = new TextIndex();
    const bytes = Buffer.from("é");
    expect(() => index.indexOfBytes(bytes, 0, bytes.length)).toThrow(RangeError);
    expect(index.texts).toEqual([]);
  });
});
