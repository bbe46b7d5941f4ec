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

/** A scored candidate: counts per signal, in SIGNALS order. */
export interface Candidate {
  id: UserId;
  score: number;
  counts: number[];
}

/**
 * Accumulates signal occurrences per candidate, ignoring excluded users (the user and their friends).
 * Counts live in one flat typed array indexed by arrival order: a call may see tens of thousands of
 * candidates, and an array per candidate was the largest source of garbage on this path.
 */
export class CandidateTally {
  private readonly slots = new Map<UserId, number>();
  private ids: UserId[] = [];
  private counts = new Int32Array(SIGNALS.length * 1024);

  constructor(private readonly excluded: ReadonlySet<UserId>) {}

  /** Records one occurrence of `signal` for each member of `ids`. */
  add(signal: Signal, ids: Iterable<UserId>): void {
    const offset = SIGNALS.indexOf(signal);
    for (const id of ids) {
      if (this.excluded.has(id)) continue;
      let slot = this.slots.get(id);
      if (slot === undefined) {
        slot = this.ids.length;
        this.slots.set(id, slot);
        this.ids.push(id);
        if ((slot + 1) * SIGNALS.length > this.counts.length) {
          const grown = new Int32Array(this.counts.length * 2);
          grown.set(this.counts);
          this.counts = grown;
        }
      }
      this.counts[slot * SIGNALS.length + offset]! += 1;
    }
  }

  /** Number of distinct candidates seen. */
  get size(): number {
    return this.ids.length;
  }

  /**
   * The candidates that can still make the top `max` once ties are broken: everyone scoring at
   * least the max-th best score. Only these need their relationIds fetched for the tie-break. The
   * cutoff comes from a histogram of scores, in linear time, without sorting every candidate.
   */
  contenders(max: number): Candidate[] {
    const n = this.ids.length;
    const scores = new Int32Array(n);
    let best = 0;
    for (let slot = 0; slot < n; slot++) {
      let score = 0;
      for (let i = 0; i < SIGNALS.length; i++) score += this.counts[slot * SIGNALS.length + i]! * WEIGHTS[i]!;
      scores[slot] = score;
      if (score > best) best = score;
    }
    let cutoff = 0;
    if (n > max) {
      const histogram = new Int32Array(best + 1);
      for (let slot = 0; slot < n; slot++) histogram[scores[slot]!]! += 1;
      let seen = 0;
      for (cutoff = best; cutoff > 0; cutoff--) {
        seen += histogram[cutoff]!;
        if (seen >= max) break;
      }
    }
    const contenders: Candidate[] = [];
    for (let slot = 0; slot < n; slot++) {
      if (scores[slot]! < cutoff) continue;
      const from = slot * SIGNALS.length;
      contenders.push({ id: this.ids[slot]!, score: scores[slot]!, counts: Array.from(this.counts.subarray(from, from + SIGNALS.length)) });
    }
    return contenders;
  }
}

/** SIGNAL_WEIGHTS in SIGNALS order. */
const WEIGHTS = SIGNALS.map((signal) => SIGNAL_WEIGHTS[signal]);

/** Orders candidates by descending score, ties by ascending relationId, and keeps the first `max`. */
export function rankCandidates(candidates: Candidate[], relationIds: readonly string[], max: number): Candidate[] {
  const keyed = candidates.map((candidate, i) => ({ candidate, relationId: relationIds[i] ?? "" }));
  keyed.sort((a, b) =>
    b.candidate.score - a.candidate.score || (a.relationId < b.relationId ? -1 : a.relationId > b.relationId ? 1 : 0),
  );
  return keyed.slice(0, max).map((k) => k.candidate);
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
