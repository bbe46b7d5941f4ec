import { bytesToHex, randomBytes } from "@noble/hashes/utils.js";
import { Fr } from "./bls.js";

/**
 * Shamir secret sharing over Fr, and Lagrange interpolation "in the exponent" (on curve points), which
 * is how t signature shares σᵢ = f(i)·H combine into σ = f(0)·H without anyone learning f(0).
 */

/** Most nodes a network may have: Lit's share wire format carries the index in one byte. */
export const MAX_NODES = 255;

/** One dealt share: node `index` (1-based) holds f(index). */
export interface ScalarShare {
  index: number;
  value: bigint;
}

/** A curve point tagged with the x at which it was evaluated. */
export interface IndexedPoint<P> {
  index: number;
  point: P;
}

/** Group operations interpolation needs; both G1 and G2 points provide them. */
interface GroupPoint<P> {
  multiply(scalar: bigint): P;
  add(other: P): P;
}

/** A uniformly random non-zero scalar. */
export function randomScalar(): bigint {
  for (;;) {
    // 48 bytes reduced mod r: the bias is below 2⁻¹²⁸.
    const value = Fr.create(BigInt(`0x${bytesToHex(randomBytes(48))}`));
    if (value !== 0n) return value;
  }
}

/**
 * Deals a fresh random secret with a random polynomial of degree threshold−1. Returns the secret so
 * that the caller can derive PK from it; the caller must drop it afterwards.
 */
export function dealSecret(threshold: number, count: number): { secret: bigint; shares: ScalarShare[] } {
  if (!Number.isInteger(count) || count < 1 || count > MAX_NODES) {
    throw new RangeError(`the number of nodes must be an integer from 1 to ${MAX_NODES}`);
  }
  if (!Number.isInteger(threshold) || threshold < 1 || threshold > count) {
    throw new RangeError(`the threshold must be an integer from 1 to the number of nodes (${count})`);
  }
  for (;;) {
    const coefficients = Array.from({ length: threshold }, randomScalar);
    const shares = Array.from({ length: count }, (_, i) => ({ index: i + 1, value: evaluate(coefficients, BigInt(i + 1)) }));
    // A zero share would make its public share the identity point, which verifiers refuse.
    if (shares.every((share) => share.value !== 0n)) return { secret: coefficients[0] as bigint, shares };
  }
}

/** Lagrange coefficients for evaluating at `x` the polynomial through the given distinct indices. */
export function lagrangeCoefficients(indices: readonly number[], x = 0): bigint[] {
  if (new Set(indices).size !== indices.length) throw new RangeError("indices must be distinct");
  const at = Fr.create(BigInt(x));
  return indices.map((i) => {
    let numerator = 1n;
    let denominator = 1n;
    for (const j of indices) {
      if (j === i) continue;
      numerator = Fr.mul(numerator, Fr.sub(at, BigInt(j)));
      denominator = Fr.mul(denominator, Fr.sub(BigInt(i), BigInt(j)));
    }
    return Fr.div(numerator, denominator);
  });
}

/** Σ λᵢ·Pᵢ: the point at `x` of the polynomial whose values at the given indices are the points. */
export function interpolatePoints<P extends GroupPoint<P>>(points: readonly IndexedPoint<P>[], x = 0): P {
  const lambdas = lagrangeCoefficients(points.map((p) => p.index), x);
  let sum: P | null = null;
  for (const [k, { point }] of points.entries()) {
    const lambda = lambdas[k] as bigint;
    // λ is zero exactly when x is one of the other indices; that term then vanishes.
    if (lambda === 0n) continue;
    const term = point.multiply(lambda);
    sum = sum === null ? term : sum.add(term);
  }
  if (sum === null) throw new RangeError("nothing to interpolate");
  return sum;
}

function evaluate(coefficients: readonly bigint[], x: bigint): bigint {
  // Horner's rule from the highest coefficient down.
  return coefficients.reduceRight((acc, c) => Fr.add(Fr.mul(acc, x), c), 0n);
}
