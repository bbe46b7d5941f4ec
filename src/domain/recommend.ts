import type { UserId } from "./model.js";

/** The five recommendation signals of the spec, in the order descriptions name them. */
export const SIGNALS = ["mutualFriends", "sharedContracts", "sharedNfts", "sharedFollowings", "sharedFollowers"] as const;

/** One of the recommendation signals. */
export type Signal = (typeof SIGNALS)[number];

/**
 * How much one occurrence of each signal adds to a score. A mutual friend is the strongest evidence
 * of a real-world tie; holding the same NFT collection says more than touching the same contract,
 * since contract interactions are dominated by shared infrastructure.
 */
export const SIGNAL_WEIGHTS: Readonly<Record<Signal, number>> = {
  mutualFriends: 3,
  sharedNfts: 2,
  sharedContracts: 1,
  sharedFollowings: 1,
  sharedFollowers: 1,
};

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
 * score, so that ties at the cutoff are all kept for the relationId tie-break. The cutoff comes from
 * a histogram of scores, in linear time, without sorting every candidate.
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
  let candidates = 0;
  SIGNALS.forEach((signal, offset) => {
    for (const set of sets[signal]) {
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
      }
    }
  });

  const scores = new Int32Array(candidates);
  let best = 0;
  const width = SIGNALS.length;
  const weights = WEIGHTS;
  for (let slot = 0, at = 0; slot < candidates; slot++, at += width) {
    let score = 0;
    for (let i = 0; i < width; i++) score += counts[at + i]! * weights[i]!;
    scores[slot] = score;
    if (score > best) best = score;
  }
  // runStart[best - score]: where that score's run begins, best first; the last entry is the total.
  const runStart = new Int32Array(best + 2);
  for (let slot = 0; slot < candidates; slot++) runStart[best - scores[slot]! + 1]! += 1;
  for (let run = 1; run < runStart.length; run++) runStart[run]! += runStart[run - 1]!;
  let kept = candidates;
  for (let run = 1; run < runStart.length; run++) {
    if (runStart[run]! >= max) {
      kept = runStart[run]!;
      break;
    }
  }

  // Each run in ascending id order, a canonical order that needs no lookup: the ids are sorted
  // natively, and their slots found again through the table.
  const ordered = new Float64Array(kept);
  const next = runStart.slice();
  for (let slot = 0; slot < candidates; slot++) {
    const at = next[best - scores[slot]!]!++;
    if (at < kept) ordered[at] = ids[slot]!;
  }
  const ranking = new Uint32Array(kept * RANKED_WORDS);
  for (let run = 0; run + 1 < runStart.length && runStart[run]! < kept; run++) {
    const ranked = ordered.subarray(runStart[run]!, Math.min(runStart[run + 1]!, kept)).sort();
    for (let i = 0; i < ranked.length; i++) {
      const id = ranked[i]!;
      const slot = slots.slotOf(id);
      const at = (runStart[run]! + i) * RANKED_WORDS;
      ranking[at] = Math.floor(id / 2 ** 32);
      ranking[at + 1] = id % 2 ** 32;
      ranking[at + 2] = scores[slot]!;
      for (let s = 0; s < SIGNALS.length; s++) ranking[at + 3 + s] = counts[slot * SIGNALS.length + s]!;
    }
  }
  return new Ranking(ranking);
}

/** SIGNAL_WEIGHTS in SIGNALS order. */
const WEIGHTS = Int32Array.from(SIGNALS, (signal) => SIGNAL_WEIGHTS[signal]);

/** Uint32 words per ranked candidate: the id (high and low word, so any safe integer), the score, one count per signal. */
const RANKED_WORDS = 3 + SIGNALS.length;

/**
 * Contenders best first, packed: by descending score, and within a score by ascending id. The order
 * served breaks score ties by relationId instead, but a page only needs the runs of equal score it
 * overlaps sorted that way (tieSpan, window), so a first page looks up a few dozen relationIds, not
 * every contender's. The packed words are also what a snapshot stores and a fingerprint hashes.
 */
export class Ranking {
  constructor(private readonly words: Uint32Array) {}

  /** The ranking packed by `bytes`; null when they cannot be one. */
  static fromBytes(bytes: Uint8Array): Ranking | null {
    if (bytes.length % (RANKED_WORDS * 4) !== 0) return null;
    // Copied into an aligned buffer: bytes decoded from base64 may start at any offset.
    return new Ranking(new Uint32Array(new Uint8Array(bytes).buffer));
  }

  get bytes(): Buffer {
    return Buffer.from(this.words.buffer, this.words.byteOffset, this.words.byteLength);
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
