import type { UserId } from "./model.js";
import { radixSort, RadixScratch } from "./radix-sort.js";
import { kthLargest } from "./recommend.js";

/*
 * Which sets a recommendation expands: pure choices over sizes and hashes, with no I/O, so that a
 * ranking recomputed for a cursor chooses the same sets whatever order a store lists them in.
 */

/**
 * The items whose sets to expand: smallest first, ties by the item itself (so that the choice does
 * not depend on the order a store lists a set in), skipping empty sets and sets over `maxSet`, for as
 * long as the running total stays within the member budget.
 */
export function withinBudget<T extends string | number>(items: readonly T[], sizes: readonly number[], maxSet: number, budget: number): T[] {
  const chosen: T[] = [];
  let total = 0;
  const take = (item: T, size: number) => {
    if (total + size > budget) return false;
    total += size;
    chosen.push(item);
    return true;
  };
  const expandable: number[] = [];
  for (let i = 0; i < items.length; i++) if (sizes[i]! > 0 && sizes[i]! <= maxSet) expandable.push(i);
  // UserIds and set sizes below 2^32 are sorted by a radix sort, by id and then, stably, by size: a
  // comparator over a hub's thousands of neighbours cost more than the rest of the choice, and a
  // native sort of packed (size, id) numbers still most of it. The sort needs no await, so one set
  // of working arrays serves every call.
  const sorter = BUDGET_SORTER;
  sorter.reserve(expandable.length);
  let radix = 0;
  for (; radix < expandable.length; radix++) {
    const item = items[expandable[radix]!]!;
    if (typeof item !== "number" || item >= 2 ** 32 || sizes[expandable[radix]!]! >= 2 ** 32) break;
    sorter.order[radix] = expandable[radix]!;
    sorter.keys[radix] = item;
  }
  if (radix === expandable.length) {
    radixSort(sorter, expandable.length);
    for (let i = 0; i < expandable.length; i++) sorter.keys[i] = sizes[sorter.order[i]!]!;
    radixSort(sorter, expandable.length);
    for (let i = 0; i < expandable.length; i++) if (!take(items[sorter.order[i]!]!, sizes[sorter.order[i]!]!)) break;
    return chosen;
  }
  expandable.sort((a, b) => sizes[a]! - sizes[b]! || (items[a]! < items[b]! ? -1 : items[a]! > items[b]! ? 1 : 0));
  for (const i of expandable) if (!take(items[i]!, sizes[i]!)) break;
  return chosen;
}

/** withinBudget's working arrays. */
const BUDGET_SORTER = new RadixScratch();

/**
 * At most `cap` of `items`: all of them when they fit, else the `cap` with the smallest hash. The
 * sample is a fixed function of the set, whatever order a store lists it in, so that a ranking
 * recomputed for a cursor is the same one; and a hash is blind to degree, so the sample keeps the
 * mix of rare and common neighbours the whole set has. Sizing every neighbour to keep the rarest
 * would be the very work the cap bounds.
 */
export function firstHop<T extends string | number>(items: readonly T[], cap: number, hash: (item: T) => number): readonly T[] {
  if (items.length <= cap) return items;
  // Keys pack (hash, index) exactly, so one linear selection finds the cut and no objects are made.
  const stride = 2 ** Math.ceil(Math.log2(items.length + 1));
  const keys = new Float64Array(items.length);
  for (let i = 0; i < items.length; i++) keys[i] = -(hash(items[i]!) * stride + i);
  const cut = -kthLargest(keys.slice(), cap);
  const kept: T[] = [];
  for (let i = 0; i < items.length; i++) if (-keys[i]! <= cut) kept.push(items[i]!);
  return kept;
}

/** A UserId's place in the first-hop sample: Fibonacci hashing spreads sequential ids. */
export function hashOfId(id: UserId): number {
  return Math.imul(id % 2 ** 32, 0x9e3779b1) >>> 0;
}

/** An asset's place in the first-hop sample: FNV-1a of its address. */
export function hashOfText(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}
