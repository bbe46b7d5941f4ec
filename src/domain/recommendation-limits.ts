/**
 * Bounds that keep recommendation work flat around hubs and popular assets: a DEX router touched by
 * half the graph says nothing about who someone knows, and reading its holders would make every
 * call slow. Sets over these sizes are skipped without being read (the store checks SCARD first).
 */
export interface RecommendationLimits {
  /** Longest recommendation chain served across all pages. */
  maxResults: number;
  /**
   * Members read per signal at most. Sets are expanded smallest first, since a small shared set (a
   * niche NFT collection, a friend with few friends) says more than a big one, until the next set
   * would overrun the budget: this bounds the work of every call whatever the user's neighbourhood.
   */
  memberBudget: number;
  /** Neighbour sets larger than this (hubs) are never expanded. */
  maxNeighbourSet: number;
  /** Assets held by more users than this (a DEX router) are never expanded. */
  maxAssetHolders: number;
  /**
   * Neighbours (or assets) of the queried user considered per signal at most: a user with more is
   * answered from a fixed sample of this many (firstHop), so that the sizing and choosing behind
   * memberBudget cost no more for a hub user than for anyone. The budget then expands the smallest
   * sets of the sample, which under rarity weighting carry most of the score.
   */
  firstHopCap: number;
  /** How long a recommendation snapshot (and so its cursor chain) lives, in seconds. */
  snapshotTtlSeconds: number;
  /**
   * Snapshots one user may have at once. A user has more than one only when their ranking changed
   * between first pages (the same ranking shares one), so this bounds what a hot user, asked again
   * and again under changes, holds.
   */
  snapshotsPerUser: number;
  /**
   * Snapshots one ApiKey may hold at once: those its first pages stored, or stored again, within the
   * snapshot TTL. At most snapshotLimit; below it, one key flooding new chains leaves the rest of the
   * pool to the others.
   */
  snapshotsPerKey: number;
  /** Snapshots in the whole store at once: with each at most 18 bytes × 2 × maxResults (base64: × 4/3), a bound on their memory. */
  snapshotLimit: number;
}

/**
 * The share of the snapshot pool one ApiKey holds unless configured otherwise: a tenth of it, so that
 * it takes ten keys flooding at once, not one, to fill the pool.
 */
export function defaultSnapshotsPerKey(snapshotLimit: number): number {
  return Math.max(1, Math.floor(snapshotLimit / 10));
}

/** Defaults for RecommendationLimits; the snapshot TTL keeps cursors valid for the contract's 10 minutes. */
export const DEFAULT_RECOMMENDATION_LIMITS: Readonly<RecommendationLimits> = {
  maxResults: 500,
  memberBudget: 1500,
  maxNeighbourSet: 1000,
  maxAssetHolders: 1000,
  firstHopCap: 2000,
  snapshotTtlSeconds: 15 * 60,
  snapshotsPerUser: 16,
  snapshotsPerKey: defaultSnapshotsPerKey(50_000),
  snapshotLimit: 50_000,
};
