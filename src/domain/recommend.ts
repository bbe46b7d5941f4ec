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

/** Accumulates signal occurrences per candidate, ignoring excluded users (the user and their friends). */
export class CandidateTally {
  private readonly counts = new Map<UserId, number[]>();

  constructor(private readonly excluded: ReadonlySet<UserId>) {}

  /** Records one occurrence of `signal` for each member of `ids`. */
  add(signal: Signal, ids: Iterable<UserId>): void {
    const slot = SIGNALS.indexOf(signal);
    for (const id of ids) {
      if (this.excluded.has(id)) continue;
      let counts = this.counts.get(id);
      if (!counts) {
        counts = [0, 0, 0, 0, 0];
        this.counts.set(id, counts);
      }
      counts[slot]! += 1;
    }
  }

  /** Number of distinct candidates seen. */
  get size(): number {
    return this.counts.size;
  }

  /**
   * The candidates that can still make the top `max` once ties are broken: everyone scoring at
   * least the max-th best score. Only these need their relationIds fetched for the tie-break.
   */
  contenders(max: number): Candidate[] {
    const all: Candidate[] = [];
    for (const [id, counts] of this.counts) {
      let score = 0;
      for (let i = 0; i < SIGNALS.length; i++) score += counts[i]! * SIGNAL_WEIGHTS[SIGNALS[i]!];
      all.push({ id, score, counts });
    }
    if (all.length <= max) return all;
    const scores = all.map((c) => c.score).sort((a, b) => b - a);
    const cutoff = scores[max - 1]!;
    return all.filter((c) => c.score >= cutoff);
  }
}

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
