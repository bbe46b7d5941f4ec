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
  /** Snapshots in the whole store at once: with each at most 18 bytes × 2 × maxResults (base64: × 4/3), a bound on their memory. */
  snapshotLimit: number;
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
  snapshotLimit: 50_000,
};
