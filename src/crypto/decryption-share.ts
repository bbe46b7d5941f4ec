import { bytesToHex, concatBytes, hexToBytes } from "@noble/hashes/utils.js";
import { EncodingError, G1_BASE, decodeG2, pairingsEqual, type G1Point, type G2Point } from "./bls.js";
import { InterpolableG2, decodeG2Wasm, g1BaseWasm, pairingsEqualWasm, type WasmG1, type WasmG2 } from "./bls-wasm.js";
import { MAX_NODES, interpolatePoints } from "./shamir.js";

/**
 * Decryption shares σᵢ = sᵢ·H₂(id) in Lit's wire format: one index byte followed by the 96-byte
 * compressed G2 point, as hex. Lit's `blsCombine` reads exactly this.
 */

/** A decoded share: node `index` and its point σᵢ. */
export interface DecryptionShare {
  index: number;
  point: G2Point;
}

const SHARE_BYTES = 1 + 96;

/** Node side: σᵢ = sᵢ·H, encoded for the wire. */
export function signDecryptionShare(index: number, secretShare: bigint, identityHash: G2Point): string {
  return encodeDecryptionShare({ index, point: identityHash.multiply(secretShare) });
}

/** Encodes a share as hex(index byte ‖ compressed σᵢ). */
export function encodeDecryptionShare(share: DecryptionShare): string {
  return bytesToHex(concatBytes(Uint8Array.of(share.index), share.point.toBytes(true)));
}

/** Decodes a share, refusing a wrong length, index 0, a bad point encoding and the identity point. */
export function decodeDecryptionShare(hex: unknown): DecryptionShare {
  const { index, point } = splitShare(hex);
  return { index, point: decodeG2(point, "decryption share") };
}

/** A share decoded by mcl (bls-wasm.ts); the same checks as decodeDecryptionShare. */
export interface WasmDecryptionShare {
  index: number;
  point: WasmG2;
}

/** decodeDecryptionShare in WebAssembly; only after `await loadWasmBls()`. */
export function decodeDecryptionShareWasm(hex: unknown): WasmDecryptionShare {
  const { index, point } = splitShare(hex);
  return { index, point: decodeG2Wasm(point, "decryption share") };
}

function splitShare(hex: unknown): { index: number; point: Uint8Array } {
  if (typeof hex !== "string" || !/^[0-9a-fA-F]*$/.test(hex) || hex.length !== SHARE_BYTES * 2) {
    throw new EncodingError(`a decryption share must be ${SHARE_BYTES} bytes of hex`);
  }
  const bytes = hexToBytes(hex);
  const index = bytes[0] as number;
  if (index < 1 || index > MAX_NODES) throw new EncodingError("a decryption share's index must not be 0");
  return { index, point: bytes.subarray(1) };
}

/** Client side: e(g1, σᵢ) = e(PKᵢ, H), i.e. σᵢ was made with the secret behind PKᵢ for this identity. */
export function verifyDecryptionShare(share: DecryptionShare, publicShare: G1Point, identityHash: G2Point): boolean {
  return pairingsEqual(G1_BASE, share.point, publicShare, identityHash);
}

/** verifyDecryptionShare in WebAssembly. */
export function verifyDecryptionShareWasm(share: WasmDecryptionShare, publicShare: WasmG1, identityHash: WasmG2): boolean {
  return pairingsEqualWasm(g1BaseWasm(), share.point, publicShare, identityHash);
}

/** σ = Σ λᵢ·σᵢ (Lagrange at 0) over shares with distinct indices. */
export function combineDecryptionShares(shares: readonly DecryptionShare[]): G2Point {
  checkDistinct(shares);
  return interpolatePoints(shares);
}

/** combineDecryptionShares in WebAssembly. */
export function combineDecryptionSharesWasm(shares: readonly WasmDecryptionShare[]): WasmG2 {
  checkDistinct(shares);
  return interpolatePoints(shares.map(({ index, point }) => ({ index, point: new InterpolableG2(point) }))).point;
}

function checkDistinct(shares: readonly { index: number }[]): void {
  if (new Set(shares.map((share) => share.index)).size !== shares.length) {
    throw new EncodingError("decryption shares must have distinct indices");
  }
}
