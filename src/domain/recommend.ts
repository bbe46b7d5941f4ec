import type { UserId } from "./model.js";

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
 */
export function tallyContenders(excluded: ArrayLike<UserId>, sets: SignalSets, max: number): Ranking {
  let occurrences = excluded.length;
  for (const signal of SIGNALS) for (const set of sets[signal]) occurrences += set.length;
  const slots = new SlotTable(occurrences);
  for (let i = 0; i < excluded.length; i++) slots.exclude(excluded[i]!);

  // At most one candidate per occurrence, so these never grow. Typed arrays rather than an object
  // per candidate: a call sees thousands of candidates.
  const ids = new Float64Array(occurrences);
  const counts = new Int32Array(occurrences * SIGNALS.length);
  const scores = new Float64Array(occurrences);
  let candidates = 0;
  SIGNALS.forEach((signal, offset) => {
    for (const set of sets[signal]) {
      // The weight depends only on the set, so it costs one power per set, not per member.
      const weight = occurrenceWeight(signal, set.length);
      for (let i = 0; i < set.length; i++) {
        const id = set[i]!;
        let slot = slots.slotOf(id);
        if (slot === EXCLUDED) continue;
        if (slot === ABSENT) {
          slot = candidates++;
          slots.assign(id, slot);
          ids[slot] = id;
        }
        counts[slot * SIGNALS.length + offset]! += 1;
        scores[slot]! += weight;
      }
    }
  });

  let best = 0;
  for (let slot = 0; slot < candidates; slot++) {
    scores[slot] = Math.min(scores[slot]!, MAX_SCORE);
    if (scores[slot]! > best) best = scores[slot]!;
  }
  const cutoff = candidates <= max ? 0 : kthLargest(scores.slice(0, candidates), max);
  let kept = 0;
  for (let slot = 0; slot < candidates; slot++) if (scores[slot]! >= cutoff) kept++;

  // Contenders by descending score: one native sort of keys that pack (best - score, slot), since
  // scores stay below 2^31 and slots below 2^22, exactly within a double.
  const bySlot = new Float64Array(kept);
  for (let slot = 0, at = 0; slot < candidates; slot++) if (scores[slot]! >= cutoff) bySlot[at++] = slot;
  if (candidates - 1 <= MAX_KEYED_SLOT) {
    for (let i = 0; i < kept; i++) bySlot[i] = (best - scores[bySlot[i]!]!) * (MAX_KEYED_SLOT + 1) + bySlot[i]!;
    bySlot.sort();
    for (let i = 0; i < kept; i++) bySlot[i] = bySlot[i]! % (MAX_KEYED_SLOT + 1);
  } else {
    bySlot.sort((a, b) => scores[b]! - scores[a]!);
  }
  // Each run of equal score in ascending id order, a canonical order that needs no lookup: the ids
  // are sorted natively, and their slots found again through the table.
  const ordered = new Float64Array(kept);
  for (let i = 0; i < kept; i++) ordered[i] = ids[bySlot[i]!]!;
  const ranking = new Uint32Array(kept * RANKED_WORDS);
  for (let start = 0; start < kept; ) {
    const score = scores[bySlot[start]!]!;
    let end = start + 1;
    while (end < kept && scores[bySlot[end]!] === score) end++;
    const run = ordered.subarray(start, end).sort();
    for (let i = 0; i < run.length; i++) {
      const id = run[i]!;
      const slot = slots.slotOf(id);
      const at = (start + i) * RANKED_WORDS;
      ranking[at] = Math.floor(id / 2 ** 32);
      ranking[at + 1] = id % 2 ** 32;
      ranking[at + 2] = score;
      for (let s = 0; s < SIGNALS.length; s++) ranking[at + 3 + s] = counts[slot * SIGNALS.length + s]!;
    }
    start = end;
  }
  return new Ranking(ranking);
}

/** Scores are capped here, far above any real one, so that the sort keys of tallyContenders stay exact. */
const MAX_SCORE = 2 ** 31 - 1;

/** The largest slot a sort key of tallyContenders can pack. */
const MAX_KEYED_SLOT = 2 ** 22 - 1;

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
 * UserId → candidate slot, by open addressing over typed arrays sized once per call: a Map here cost
 * a hash-table entry per candidate and was the hottest line of a recommendation.
 */
class SlotTable {
  /** Float64, not Int32: any safe-integer UserId (Redis INCR allocates them) is kept exactly. */
  private readonly keys: Float64Array;
  /** 0 marks an empty entry; a stored value v is kept as v + 3, so EXCLUDED and every slot are non-zero. */
  private readonly values: Int32Array;
  private readonly shift: number;
  private readonly mask: number;

  constructor(entries: number) {
    // Load factor at most ½, so probes stay short.
    const bits = Math.max(4, Math.ceil(Math.log2(entries * 2 + 1)));
    this.keys = new Float64Array(1 << bits);
    this.values = new Int32Array(1 << bits);
    this.shift = 32 - bits;
    this.mask = (1 << bits) - 1;
  }

  /** The id's slot, ABSENT or EXCLUDED. */
  slotOf(id: UserId): number {
    for (let at = this.home(id); ; at = (at + 1) & this.mask) {
      const value = this.values[at]!;
      if (value === 0) return ABSENT;
      if (this.keys[at] === id) return value - 3;
    }
  }

  assign(id: UserId, slot: number): void {
    this.put(id, slot + 3);
  }

  exclude(id: UserId): void {
    this.put(id, EXCLUDED + 3);
  }

  private put(id: UserId, value: number): void {
    let at = this.home(id);
    while (this.values[at] !== 0 && this.keys[at] !== id) at = (at + 1) & this.mask;
    this.keys[at] = id;
    this.values[at] = value;
  }

  /** Fibonacci hashing: sequential ids spread over the whole table. */
  private home(id: UserId): number {
    return Math.imul(id, 0x9e3779b1) >>> this.shift;
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
