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
 * The candidates that can still make the top `max` once ties are broken: everyone scoring at least
 * the max-th best score. Only these need their relationIds fetched for the tie-break. Parallel
 * typed arrays rather than an object per candidate: a call sees thousands of candidates, and
 * per-candidate objects were a large share of this path's garbage.
 */
export interface Contenders {
  /** Float64, like SlotTable's keys: any safe-integer UserId is kept exactly. */
  readonly ids: Float64Array;
  readonly scores: Int32Array;
  /** SIGNALS.length counts per contender, in SIGNALS order. */
  readonly counts: Int32Array;
}

/**
 * Tallies every occurrence of every signal per candidate, skipping `excluded` (the user and their
 * friends), and keeps the contenders for the top `max`. The cutoff comes from a histogram of
 * scores, in linear time, without sorting every candidate.
 */
export function tallyContenders(excluded: ArrayLike<UserId>, sets: SignalSets, max: number): Contenders {
  let occurrences = excluded.length;
  for (const signal of SIGNALS) for (const set of sets[signal]) occurrences += set.length;
  const slots = new SlotTable(occurrences);
  for (let i = 0; i < excluded.length; i++) slots.exclude(excluded[i]!);

  // At most one candidate per occurrence, so these never grow.
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
  for (let slot = 0; slot < candidates; slot++) {
    let score = 0;
    for (let i = 0; i < SIGNALS.length; i++) score += counts[slot * SIGNALS.length + i]! * WEIGHTS[i]!;
    scores[slot] = score;
    if (score > best) best = score;
  }
  let cutoff = 0;
  if (candidates > max) {
    const histogram = new Int32Array(best + 1);
    for (let slot = 0; slot < candidates; slot++) histogram[scores[slot]!]! += 1;
    let seen = 0;
    for (cutoff = best; cutoff > 0; cutoff--) {
      seen += histogram[cutoff]!;
      if (seen >= max) break;
    }
  }

  let kept = 0;
  for (let slot = 0; slot < candidates; slot++) {
    if (scores[slot]! < cutoff) continue;
    ids[kept] = ids[slot]!;
    scores[kept] = scores[slot]!;
    counts.copyWithin(kept * SIGNALS.length, slot * SIGNALS.length, (slot + 1) * SIGNALS.length);
    kept++;
  }
  return { ids: ids.subarray(0, kept), scores: scores.subarray(0, kept), counts: counts.subarray(0, kept * SIGNALS.length) };
}

/** SIGNAL_WEIGHTS in SIGNALS order. */
const WEIGHTS = SIGNALS.map((signal) => SIGNAL_WEIGHTS[signal]);

/** Orders contenders by descending score, ties by ascending relationId, and keeps the first `max`. */
export function rankCandidates(contenders: Contenders, relationIds: readonly string[], max: number): Candidate[] {
  const { ids, scores, counts } = contenders;
  // Plain loops rather than Array.from: this runs for hundreds of contenders on every first page.
  const order: number[] = [];
  for (let i = 0; i < ids.length; i++) order.push(i);
  order.sort((a, b) => {
    const ra = relationIds[a] ?? "";
    const rb = relationIds[b] ?? "";
    return scores[b]! - scores[a]! || (ra < rb ? -1 : ra > rb ? 1 : 0);
  });
  const ranked: Candidate[] = [];
  for (const i of order.slice(0, max)) {
    const row: number[] = [];
    for (let s = i * SIGNALS.length; s < (i + 1) * SIGNALS.length; s++) row.push(counts[s]!);
    ranked.push({ id: ids[i]!, score: scores[i]!, counts: row });
  }
  return ranked;
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
