import { bls12_381 } from "@noble/curves/bls12-381.js";
import type { Fp2 } from "@noble/curves/abstract/tower.js";
import type { WeierstrassPoint } from "@noble/curves/abstract/weierstrass.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";

/**
 * The BLS12-381 pieces every part of the threshold scheme shares: the groups, the scalar field, the
 * identity hash H₂ and strict decoders. Keys live in G1 (48 bytes), decryption keys and their shares
 * in G2 (96 bytes), as in Lit's "Bls12381G2" variant.
 */

/** A point of G1 (public keys). */
export type G1Point = WeierstrassPoint<bigint>;
/** A point of G2 (identity hashes, decryption keys and their shares). */
export type G2Point = WeierstrassPoint<Fp2>;

/** The scalar field Fr (order r). */
export const Fr = bls12_381.fields.Fr;
/** The G1 generator. */
export const G1_BASE: G1Point = bls12_381.G1.Point.BASE;

/**
 * H₂'s domain separation tag. Lit's nodes sign with blsful's proof-of-possession scheme, so this is the
 * `_POP_` tag; the `_NUL_` tag yields keys that do not decrypt Lit ciphertexts.
 */
export const IDENTITY_DST = "BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_";

/** Thrown when bytes or hex do not encode what they should (a point, a scalar, a share). */
export class EncodingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EncodingError";
  }
}

/** H₂: RFC 9380 hash-to-G2 of an identity. */
export function hashIdentity(identity: Uint8Array | string): G2Point {
  const bytes = typeof identity === "string" ? new TextEncoder().encode(identity) : identity;
  return bls12_381.G2.hashToCurve(bytes, { DST: IDENTITY_DST });
}

/** Decodes a compressed G1 point, refusing bad encodings, points outside the subgroup and the identity. */
export function decodeG1(bytes: Uint8Array | string, what: string): G1Point {
  const point = decode(() => bls12_381.G1.Point.fromBytes(toBytes(bytes, what)), what);
  if (point.is0()) throw new EncodingError(`${what} is the identity point`);
  return point;
}

/** Decodes a compressed G2 point, refusing bad encodings, points outside the subgroup and the identity. */
export function decodeG2(bytes: Uint8Array | string, what: string): G2Point {
  const point = decode(() => bls12_381.G2.Point.fromBytes(toBytes(bytes, what)), what);
  if (point.is0()) throw new EncodingError(`${what} is the identity point`);
  return point;
}

/** Decodes a 32-byte big-endian scalar in [1, r). */
export function decodeScalar(bytes: Uint8Array | string, what: string): bigint {
  const raw = toBytes(bytes, what);
  if (raw.length !== Fr.BYTES) throw new EncodingError(`${what} must be ${Fr.BYTES} bytes`);
  const value = BigInt(`0x${bytesToHex(raw)}`);
  if (value === 0n || value >= Fr.ORDER) throw new EncodingError(`${what} is not a non-zero scalar below r`);
  return value;
}

/** Encodes a scalar as 32 big-endian bytes. */
export function encodeScalar(value: bigint): Uint8Array {
  return Fr.toBytes(value);
}

/** Whether e(a1, b1) = e(a2, b2), computed as one batch with a single final exponentiation. */
export function pairingsEqual(a1: G1Point, b1: G2Point, a2: G1Point, b2: G2Point): boolean {
  const product = bls12_381.pairingBatch([
    { g1: a1, g2: b1 },
    { g1: a2.negate(), g2: b2 },
  ]);
  return bls12_381.fields.Fp12.eql(product, bls12_381.fields.Fp12.ONE);
}

/** e(P, Q) in GT, serialised as blsful does (576 bytes, coefficients big-endian, c0 first). */
export function pairingBytes(p: G1Point, q: G2Point): Uint8Array {
  return bls12_381.fields.Fp12.toBytes(bls12_381.pairing(p, q));
}

function toBytes(value: Uint8Array | string, what: string): Uint8Array {
  if (typeof value !== "string") return value;
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(value)) throw new EncodingError(`${what} is not hex`);
  return hexToBytes(value);
}

function decode<T>(fn: () => T, what: string): T {
  try {
    return fn();
  } catch {
    throw new EncodingError(`${what} is not a valid compressed point of its group`);
  }
}
