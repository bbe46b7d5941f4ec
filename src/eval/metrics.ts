import type { Prng } from "../synthetic/prng.js";

/** The per-user ranking metrics the evaluation reports, in report order. */
export const METRICS = ["precision", "recall", "ndcg", "mrr", "hits50", "auc"] as const;

/** One ranking metric. */
export type Metric = (typeof METRICS)[number];

/** How deep Hits@N looks. */
export const HITS_DEPTH = 50;

/**
 * The metrics of one user's ranked list. `ranked` is best first and may be shorter than the number
 * of candidates: everything it leaves out ties below it. `positives` are the user's hidden edges,
 * `candidates` how many users could have been recommended (everyone but the user and whom the user
 * is already linked to in training), hidden ones included.
 */
export function scoreRanking(ranked: readonly number[], positives: ReadonlySet<number>, candidates: number, k: number): Record<Metric, number> {
  let hitsAtK = 0;
  let dcg = 0;
  let firstHit = 0;
  let hitsAt50 = 0;
  let hitsSoFar = 0;
  // AUC: the chance that a random positive ranks above a random negative, ties counting half.
  const negatives = candidates - positives.size;
  let above = 0;
  ranked.forEach((node, position) => {
    if (!positives.has(node)) return;
    if (position < k) {
      hitsAtK++;
      dcg += 1 / Math.log2(position + 2);
    }
    if (position < HITS_DEPTH) hitsAt50++;
    if (firstHit === 0) firstHit = position + 1;
    const negativesAbove = position - hitsSoFar;
    above += negatives - negativesAbove;
    hitsSoFar++;
  });
  const unrankedNegatives = negatives - (ranked.length - hitsSoFar);
  above += (positives.size - hitsSoFar) * 0.5 * unrankedNegatives;
  let ideal = 0;
  for (let i = 0; i < Math.min(k, positives.size); i++) ideal += 1 / Math.log2(i + 2);
  return {
    precision: hitsAtK / k,
    recall: hitsAtK / positives.size,
    ndcg: ideal > 0 ? dcg / ideal : 0,
    mrr: firstHit > 0 ? 1 / firstHit : 0,
    hits50: hitsAt50 > 0 ? 1 : 0,
    auc: negatives > 0 ? above / (positives.size * negatives) : 0.5,
  };
}

/** A mean and its 95% bootstrap interval. */
export interface Estimate {
  mean: number;
  low: number;
  high: number;
}

/** Percentile bootstrap of the mean of `values` (users resampled with replacement). */
export function bootstrapMean(values: Float64Array, resamples: number, prng: Prng): Estimate {
  return bootstrap(values.length, resamples, prng, (pick) => {
    let sum = 0;
    for (let i = 0; i < values.length; i++) sum += values[pick[i]!]!;
    return values.length > 0 ? sum / values.length : 0;
  }, mean(values));
}

/**
 * Percentile bootstrap of mean(a) / mean(b) where a[i] and b[i] belong to the same user: users are
 * resampled jointly, so the interval reflects the paired difference, not two independent noises.
 */
export function bootstrapRatio(a: Float64Array, b: Float64Array, resamples: number, prng: Prng): Estimate {
  const ratio = (sa: number, sb: number) => (sb > 0 ? sa / sb : 0);
  return bootstrap(a.length, resamples, prng, (pick) => {
    let sa = 0;
    let sb = 0;
    for (let i = 0; i < a.length; i++) {
      sa += a[pick[i]!]!;
      sb += b[pick[i]!]!;
    }
    return ratio(sa, sb);
  }, ratio(mean(a), mean(b)));
}

function bootstrap(n: number, resamples: number, prng: Prng, statistic: (pick: Uint32Array) => number, point: number): Estimate {
  if (n === 0 || resamples === 0) return { mean: point, low: point, high: point };
  const pick = new Uint32Array(n);
  const stats = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    for (let i = 0; i < n; i++) pick[i] = prng.int(n);
    stats[r] = statistic(pick);
  }
  stats.sort();
  return { mean: point, low: stats[Math.floor(0.025 * (resamples - 1))]!, high: stats[Math.ceil(0.975 * (resamples - 1))]! };
}

function mean(values: Float64Array): number {
  let sum = 0;
  for (const value of values) sum += value;
  return values.length > 0 ? sum / values.length : 0;
}
