import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { radixSort, RadixScratch } from "../../src/domain/radix-sort.js";

describe("radixSort", () => {
  it("orders positions by ascending 32-bit key, ties in their first order, short and long, one scratch for every call", () => {
    // One scratch across all runs, as its owners keep it: nothing may carry over from a sort to the next.
    const scratch = new RadixScratch();
    // Keys of one width per array: few distinct (many ties), 16-bit, any 32-bit, and ones whose low
    // bytes are all the same (so passes are skipped, and the ones after them must still run).
    const keys = [
      fc.integer({ min: 0, max: 3 }),
      fc.integer({ min: 0, max: 2 ** 16 }),
      fc.integer({ min: 0, max: 2 ** 32 - 1 }),
      fc.integer({ min: 0, max: 255 }).map((high) => high * 2 ** 24 + 7),
    ];
    fc.assert(
      fc.property(fc.oneof(...keys.map((key) => fc.array(key, { maxLength: 700, size: "max" }))), (values) => {
        scratch.reserve(values.length);
        values.forEach((key, i) => {
          scratch.order[i] = i;
          scratch.keys[i] = key;
        });
        radixSort(scratch, values.length);
        // The reference: a stable sort of the positions by key.
        const expected = values.map((key, i) => ({ key, i })).sort((a, b) => a.key - b.key);
        expect(Array.from(scratch.order.subarray(0, values.length))).toEqual(expected.map(({ i }) => i));
        expect(Array.from(scratch.keys.subarray(0, values.length))).toEqual(expected.map(({ key }) => key));
      }),
      { seed: 20261126, numRuns: 300 },
    );
  });
});
