import type { UserId } from "./model.js";
import { radixSort, RadixScratch } from "./radix-sort.js";

/** The five recommendation signals of the spec, in the order descriptions name them. */
export const SIGNALS = ["mutualFriends", "sharedContracts", "sharedNfts", "sharedFollowings", "sharedFollowers"] as const;

/** One of the recommendation signals. */
export type Signal = (typeof SIGNALS)[number];

/**
 * How much each signal weighs before rarity. A mutual friend is the strongest evidence of a
 * real-world tie; holding the same NFT collection says more than touching the same contract, since
 * contract interactions are dominated by shared infrastructure. Following the same accounts says
 * little of whom one follows, being followed by the same people much more: on validation splits of
 * a real follow graph, the weight of an account both follow was best near 0 (bench/README.md).
 */
export const SIGNAL_WEIGHTS: Readonly<Record<Signal, number>> = {
  mutualFriends: 3,
  sharedNfts: 2,
  sharedContracts: 1,
  sharedFollowings: 0.1,
  sharedFollowers: 1,
};

/**
 * How fast an occurrence loses weight with the size of the set it comes from: a friend of
 * everyone, an account everyone follows or a contract everyone touches says little about who two
 * users are to each other (Adamic-Adar and resource allocation discount the same way; 0 would be a
 * plain count, 1 resource allocation). Chosen on validation splits of real graphs, never on their
 * test edges (bench/README.md, "Recommendation quality"). A follower in common discounts less: on
 * the follow graph 0.25 and 0.5 did as well as each other and better than 0.75, and below 0.5 a
 * follower who follows hundreds would outweigh a mutual friend.
 */
export const RARITY_EXPONENTS: Readonly<Record<Signal, number>> = {
  mutualFriends: 0.75,
  sharedNfts: 0.75,
  sharedContracts: 0.75,
  sharedFollowings: 0.75,
  sharedFollowers: 0.5,
};

/** Integer weights keep every score exact, so equal evidence ties exactly whatever the order of summing. */
const WEIGHT_SCALE = 2 ** 14;

/**
 * What one occurrence of `signal` adds to a score, when it comes from a set of `setSize` members
 * (the shared friend's friends, the shared asset's holders, …): the signal's weight, discounted by
 * rarity. At least 1, so that every occurrence counts.
 */
export function occurrenceWeight(signal: Signal, setSize: number): number {
  return Math.max(1, Math.round(WEIGHT_SCALE * SIGNAL_WEIGHTS[signal] * Math.max(2, setSize) ** -RARITY_EXPONENTS[signal]));
}

/** A ranked candidate: its score and its counts per signal, in SIGNALS order. */
export interface Candidate {
  id: UserId;
  score: number;
  counts: number[];
}

/** The sets one recommendation counts, per signal: each member of each set is one occurrence. */
export type SignalSets = { readonly [S in Signal]: readonly ArrayLike<UserId>[] };

/**
 * Tallies every occurrence of every signal per candidate, skipping `excluded` (the user and their
 * friends), and ranks the contenders for the top `max`: everyone scoring at least the max-th best
 * score, so that ties at the cutoff are all kept for the relationId tie-break. Each occurrence
 * weighs occurrenceWeight of its set's size. The cutoff comes from a selection in linear time, and
 * only the contenders are sorted.
 *
 * Its working arrays are kept from call to call (TallyScratch): allocated per call, their zeroing
 * and their collection cost a recommendation more than the counting itself. The call never awaits,
 * so one set of them serves every call of the thread. Only the Ranking returned is new.
 */
export function tallyContenders(excluded: ArrayLike<UserId>, sets: SignalSets, max: number): Ranking {
  let occurrences = excluded.length;
  for (const signal of SIGNALS) for (const set of sets[signal]) occurrences += set.length;
  const scratch = TallyScratch.forOccurrences(occurrences);
  const { slots, ids, counts, scores } = scratch;
  for (let i = 0; i < excluded.length; i++) slots.exclude(excluded[i]!);

  // At most one candidate per occurrence, so the scratch arrays, sized for the occurrences, never
  // overflow. Counts and scores are zeroed at once (a memset), not candidate by candidate in the loop.
  counts.fill(0, 0, occurrences * SIGNALS.length);
  scores.fill(0, 0, occurrences);
  let candidates = 0;
  for (let offset = 0; offset < SIGNALS.length; offset++) {
    const signal = SIGNALS[offset]!;
    for (const set of sets[signal]) {
      // The weight depends only on the set, so it costs one power per set, not per member.
      const weight = occurrenceWeight(signal, set.length);
      for (let i = 0; i < set.length; i++) {
        const id = set[i]!;
        const slot = slots.claim(id, candidates);
        if (slot === EXCLUDED) continue;
        if (slot === candidates) {
          candidates++;
          ids[slot] = id;
        }
        counts[slot * SIGNALS.length + offset]! += 1;
        scores[slot]! += weight;
      }
    }
  }

  let best = 0;
  for (let slot = 0; slot < candidates; slot++) {
    scores[slot] = Math.min(scores[slot]!, MAX_SCORE);
    if (scores[slot]! > best) best = scores[slot]!;
  }
  let cutoff = 0;
  if (candidates > max) {
    const values = scratch.keys.subarray(0, candidates);
    values.set(scores.subarray(0, candidates));
    cutoff = kthLargest(values, max);
  }
  let kept = 0;
  for (let slot = 0; slot < candidates; slot++) if (scores[slot]! >= cutoff) kept++;

  // Contenders by descending score, in slot order within a score: a radix sort of (best - score),
  // which is below 2^31, a byte at a time and stable. A native sort of the keys cost several times
  // as much (it compares, and every call pays its setup).
  const sorter = scratch.sorter;
  sorter.reserve(kept);
  for (let slot = 0, at = 0; slot < candidates; slot++) {
    if (scores[slot]! < cutoff) continue;
    sorter.order[at] = slot;
    sorter.keys[at++] = best - scores[slot]!;
  }
  radixSort(sorter, kept);
  const order = sorter.order;
  // Each run of equal score in ascending id order, a canonical order. Most runs are one or a few
  // candidates: their slots are put in order of their ids where they are. A long run (around a
  // popular set) sorts its ids natively, and finds their slots again through the table.
  const ranking = new Uint32Array(kept * RANKED_WORDS);
  for (let start = 0; start < kept; ) {
    const score = scores[order[start]!]!;
    let end = start + 1;
    while (end < kept && scores[order[end]!] === score) end++;
    if (end - start > SHORT_RUN) {
      const run = scratch.ordered.subarray(0, end - start);
      for (let i = start; i < end; i++) run[i - start] = ids[order[i]!]!;
      run.sort();
      for (let i = start; i < end; i++) order[i] = slots.slotOf(run[i - start]!);
    } else {
      for (let i = start + 1; i < end; i++) {
        const slot = order[i]!;
        const id = ids[slot]!;
        let j = i - 1;
        for (; j >= start && ids[order[j]!]! > id; j--) order[j + 1] = order[j]!;
        order[j + 1] = slot;
      }
    }
    for (let i = start; i < end; i++) {
      const slot = order[i]!;
      const id = ids[slot]!;
      const at = i * RANKED_WORDS;
      ranking[at] = Math.floor(id / 2 ** 32);
      ranking[at + 1] = id % 2 ** 32;
      ranking[at + 2] = score;
      for (let s = 0; s < SIGNALS.length; s++) ranking[at + 3 + s] = counts[slot * SIGNALS.length + s]!;
    }
    start = end;
  }
  return new Ranking(ranking);
}

/**
 * tallyContenders' working arrays, kept for the next call and grown (to a power of two) when a call
 * has more occurrences than any before: the slot table, per candidate its id, counts and score, and
 * the arrays of the selection and the sorts. Nothing in them is read before the call writes it.
 * Past KEPT_OCCURRENCES (only with the bounds lifted, as the evaluation does) they are made for the
 * one call and not kept.
 */
class TallyScratch {
  private static current: TallyScratch | null = null;

  readonly slots: SlotTable;
  readonly ids: Float64Array;
  readonly counts: Int32Array;
  readonly scores: Float64Array;
  /** The selection's copy of the scores. */
  readonly keys: Float64Array;
  /** Sorts the contenders' slots, best first. */
  readonly sorter = new RadixScratch();
  /** The ids of a long run of ties, to sort. */
  readonly ordered: Float64Array;

  private constructor(readonly capacity: number) {
    this.slots = new SlotTable(capacity);
    this.ids = new Float64Array(capacity);
    this.counts = new Int32Array(capacity * SIGNALS.length);
    this.scores = new Float64Array(capacity);
    this.keys = new Float64Array(capacity);
    this.ordered = new Float64Array(capacity);
  }

  /** Scratch for a call of `occurrences`, its slot table emptied. */
  static forOccurrences(occurrences: number): TallyScratch {
    let scratch = TallyScratch.current;
    if (scratch === null || scratch.capacity < occurrences) {
      scratch = new TallyScratch(2 ** Math.max(10, Math.ceil(Math.log2(occurrences + 1))));
      if (occurrences <= KEPT_OCCURRENCES) TallyScratch.current = scratch;
    }
    scratch.slots.reset(occurrences);
    return scratch;
  }
}

/**
 * The most occurrences whose scratch arrays are kept between calls: more than a served
 * call reads (5 signals × the member budget, and the user's own friends).
 */
const KEPT_OCCURRENCES = 2 ** 17;

/** Scores are capped here, far above any real one, so that the sort keys of tallyContenders fit 32 bits. */
const MAX_SCORE = 2 ** 31 - 1;

/** Runs of tied contenders up to this long are put in id order in place; longer ones are sorted natively. */
const SHORT_RUN = 16;

/**
 * The k-th largest of `values` (1-based), by quickselect: linear on average, and it reorders
 * `values`, which is a scratch copy.
 */
export function kthLargest(values: Float64Array, k: number): number {
  let low = 0;
  let high = values.length - 1;
  const target = k - 1;
  while (low < high) {
    const pivot = values[(low + high) >>> 1]!;
    let i = low;
    let j = high;
    while (i <= j) {
      while (values[i]! > pivot) i++;
      while (values[j]! < pivot) j--;
      if (i <= j) {
        const swap = values[i]!;
        values[i++] = values[j]!;
        values[j--] = swap;
      }
    }
    if (target <= j) high = j;
    else if (target >= i) low = i;
    else return values[target]!;
  }
  return values[target]!;
}

/** Uint32 words per ranked candidate: the id (high and low word, so any safe integer), the score, one count per signal. */
const RANKED_WORDS = 3 + SIGNALS.length;

/** Snapshot layouts (Ranking.snapshot), named by the first byte of a 4-byte header: 18 bytes a candidate in columns, or the packed words. */
const NARROW = 1;
const WIDE = 2;
const SNAPSHOT_HEADER = 4;
const NARROW_BYTES = 8 + 2 * SIGNALS.length;

/** The columns of a narrow snapshot of `length` candidates in `buffer`: ids, scores, counts. */
function narrowColumns(buffer: ArrayBuffer, length: number): [Uint32Array, Uint32Array, Uint16Array] {
  return [
    new Uint32Array(buffer, SNAPSHOT_HEADER, length),
    new Uint32Array(buffer, SNAPSHOT_HEADER + 4 * length, length),
    new Uint16Array(buffer, SNAPSHOT_HEADER + 8 * length, length * SIGNALS.length),
  ];
}

/**
 * Contenders best first, packed: by descending score, and within a score by ascending id. The order
 * served breaks score ties by relationId instead, but a page only needs the runs of equal score it
 * overlaps sorted that way (tieSpan, window), so a first page looks up a few dozen relationIds, not
 * every contender's. The packed words are also what a snapshot stores and a fingerprint hashes.
 */
export class Ranking {
  constructor(private readonly words: Uint32Array) {}

  /** The ranking a snapshot holds (Ranking.snapshot); null when the bytes cannot be one. */
  static fromSnapshot(bytes: Uint8Array): Ranking | null {
    if (bytes.length < SNAPSHOT_HEADER) return null;
    // Copied into an aligned buffer: bytes decoded from base64 may start at any offset.
    const buffer = new Uint8Array(bytes).buffer;
    const body = bytes.length - SNAPSHOT_HEADER;
    if (bytes[0] === WIDE) {
      return body % (RANKED_WORDS * 4) === 0 ? new Ranking(new Uint32Array(buffer, SNAPSHOT_HEADER)) : null;
    }
    if (bytes[0] !== NARROW || body % NARROW_BYTES !== 0) return null;
    const length = body / NARROW_BYTES;
    const [ids, scores, counts] = narrowColumns(buffer, length);
    const words = new Uint32Array(length * RANKED_WORDS);
    for (let position = 0; position < length; position++) {
      const at = position * RANKED_WORDS;
      words[at + 1] = ids[position]!;
      words[at + 2] = scores[position]!;
      for (let s = 0; s < SIGNALS.length; s++) words[at + 3 + s] = counts[position * SIGNALS.length + s]!;
    }
    return new Ranking(words);
  }

  /** The packed words: what a fingerprint hashes. */
  get bytes(): Buffer {
    return Buffer.from(this.words.buffer, this.words.byteOffset, this.words.byteLength);
  }

  /**
   * The ranking as a snapshot stores it: 18 bytes a candidate (id, score, a 16-bit count per signal,
   * in columns) when every id and count fits, which they do unless ids pass 2^32 or bounds are
   * lifted far; else the packed words. A header says which.
   */
  snapshot(): Buffer {
    const words = this.words;
    let narrow = true;
    for (let at = 0; at < words.length && narrow; at += RANKED_WORDS) {
      if (words[at] !== 0) narrow = false;
      for (let s = 0; s < SIGNALS.length; s++) if (words[at + 3 + s]! > 0xffff) narrow = false;
    }
    if (!narrow) return Buffer.concat([Buffer.of(WIDE, 0, 0, 0), this.bytes]);
    const length = this.length;
    const buffer = new ArrayBuffer(SNAPSHOT_HEADER + length * NARROW_BYTES);
    new Uint8Array(buffer)[0] = NARROW;
    const [ids, scores, counts] = narrowColumns(buffer, length);
    for (let position = 0; position < length; position++) {
      const at = position * RANKED_WORDS;
      ids[position] = words[at + 1]!;
      scores[position] = words[at + 2]!;
      for (let s = 0; s < SIGNALS.length; s++) counts[position * SIGNALS.length + s] = words[at + 3 + s]!;
    }
    return Buffer.from(buffer);
  }

  /** The ranking of the given positions only, in the order given. */
  select(positions: readonly number[]): Ranking {
    const words = new Uint32Array(positions.length * RANKED_WORDS);
    positions.forEach((position, i) => words.set(this.words.subarray(position * RANKED_WORDS, (position + 1) * RANKED_WORDS), i * RANKED_WORDS));
    return new Ranking(words);
  }

  get length(): number {
    return this.words.length / RANKED_WORDS;
  }

  id(position: number): UserId {
    const at = position * RANKED_WORDS;
    return this.words[at]! * 2 ** 32 + this.words[at + 1]!;
  }

  score(position: number): number {
    return this.words[position * RANKED_WORDS + 2]!;
  }

  /** The count of each signal, in SIGNALS order, at `position`. */
  counts(position: number): number[] {
    const at = position * RANKED_WORDS + 3;
    return Array.from(this.words.subarray(at, at + SIGNALS.length));
  }

  /** The ids of positions [from, to). */
  ids(from: number, to: number): UserId[] {
    const ids: UserId[] = [];
    for (let position = from; position < to; position++) ids.push(this.id(position));
    return ids;
  }

  /** Positions [start, end): the whole runs of equal score that positions [from, to) overlap. */
  tieSpan(from: number, to: number): [start: number, end: number] {
    if (from >= to) return [from, from];
    let start = from;
    while (start > 0 && this.score(start - 1) === this.score(from)) start--;
    let end = to;
    while (end < this.length && this.score(end) === this.score(to - 1)) end++;
    return [start, end];
  }

  /**
   * Positions [from, to) of the served order, ties by ascending relationId: `relationIds` are those
   * of the positions tieSpan(from, to) gives, in order.
   */
  window(from: number, to: number, relationIds: readonly string[]): Candidate[] {
    const [start, end] = this.tieSpan(from, to);
    const positions: number[] = [];
    for (let position = start; position < end; position++) positions.push(position);
    const relationIdOf = (position: number) => relationIds[position - start] ?? "";
    positions.sort((a, b) => {
      const ra = relationIdOf(a);
      const rb = relationIdOf(b);
      return this.score(b) - this.score(a) || (ra < rb ? -1 : ra > rb ? 1 : 0);
    });
    return positions
      .slice(from - start, to - start)
      .map((position) => ({ id: this.id(position), score: this.score(position), counts: this.counts(position) }));
  }
}

/** SlotTable.slotOf of an id never seen. */
const ABSENT = -1;
/** SlotTable.slotOf of an excluded id. */
const EXCLUDED = -2;

/**
 * UserId → candidate slot, by open addressing over typed arrays: a Map here cost a hash-table entry
 * per candidate and was the hottest line of a recommendation. The arrays are kept across calls
 * (TallyScratch); each call (reset) takes a new generation, and an entry of an older generation
 * reads as empty, so emptying the table costs nothing.
 */
class SlotTable {
  /** Float64, not Int32: any safe-integer UserId (Redis INCR allocates them) is kept exactly. */
  private readonly keys: Float64Array;
  private readonly values: Int32Array;
  /** The generation each entry was written in. */
  private readonly generations: Uint32Array;
  private generation = 0;
  private shift = 0;
  private mask = 0;

  /** A table for up to `capacity` entries a call. */
  constructor(capacity: number) {
    const size = 2 ** SlotTable.bitsFor(capacity);
    this.keys = new Float64Array(size);
    this.values = new Int32Array(size);
    this.generations = new Uint32Array(size);
  }

  /**
   * Empties the table for a call of up to `entries` entries, using only as much of it as keeps the
   * load factor at most ½: probes stay short, and a small call touches little memory.
   */
  reset(entries: number): void {
    const bits = SlotTable.bitsFor(entries);
    this.shift = 32 - bits;
    this.mask = (1 << bits) - 1;
    if (this.generation === 0xffffffff) {
      this.generations.fill(0);
      this.generation = 0;
    }
    this.generation++;
  }

  /** The id's slot, ABSENT or EXCLUDED. */
  slotOf(id: UserId): number {
    for (let at = this.home(id); ; at = (at + 1) & this.mask) {
      if (this.generations[at] !== this.generation) return ABSENT;
      if (this.keys[at] === id) return this.values[at]!;
    }
  }

  /**
   * The id's slot, or EXCLUDED; an id not in the table yet is given `fresh`, which is returned. One
   * probe, where a lookup and then an insertion would take two.
   */
  claim(id: UserId, fresh: number): number {
    for (let at = this.home(id); ; at = (at + 1) & this.mask) {
      if (this.generations[at] !== this.generation) {
        this.generations[at] = this.generation;
        this.keys[at] = id;
        this.values[at] = fresh;
        return fresh;
      }
      if (this.keys[at] === id) return this.values[at]!;
    }
  }

  exclude(id: UserId): void {
    this.put(id, EXCLUDED);
  }

  private put(id: UserId, value: number): void {
    let at = this.home(id);
    while (this.generations[at] === this.generation && this.keys[at] !== id) at = (at + 1) & this.mask;
    this.generations[at] = this.generation;
    this.keys[at] = id;
    this.values[at] = value;
  }

  /** Fibonacci hashing: sequential ids spread over the whole table. */
  private home(id: UserId): number {
    return Math.imul(id, 0x9e3779b1) >>> this.shift;
  }

  /** Bits of a table that holds `entries` at a load factor of at most ½. */
  private static bitsFor(entries: number): number {
    return Math.max(4, Math.ceil(Math.log2(entries * 2 + 1)));
  }
}

const PHRASES: Readonly<Record<Signal, [singular: string, plural: string]>> = {
  mutualFriends: ["mutual friend", "mutual friends"],
  sharedContracts: ["contract both interacted with", "contracts both interacted with"],
  sharedNfts: ["NFT collection both hold", "NFT collections both hold"],
  sharedFollowings: ["account both follow", "accounts both follow"],
  sharedFollowers: ["follower in common", "followers in common"],
};

/** The human reason for a recommendation, naming each signal present and its count. */
export function describeCandidate(counts: readonly number[]): string {
  const parts: string[] = [];
  SIGNALS.forEach((signal, i) => {
    const n = counts[i] ?? 0;
    if (n > 0) parts.push(`${n} ${PHRASES[signal][n === 1 ? 0 : 1]}`);
  });
  return parts.join(", ");
}
