import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { shake128 } from "@noble/hashes/sha3.js";
import { bytesToHex, concatBytes, hexToBytes, randomBytes } from "@noble/hashes/utils.js";
import { EncodingError, Fr, G1_BASE, decodeG1, decodeG2, hashIdentity, pairingBytes, type G1Point, type G2Point } from "./bls.js";
import {
  decodeG1Wasm,
  decodeG2Wasm,
  decodeTrustedUncompressedG2Wasm,
  g1BaseWasm,
  hashIdentityWasm,
  mulG1Wasm,
  pairingBytesWasm,
  type WasmG1,
  type WasmG2,
} from "./bls-wasm.js";

/**
 * Identity-based encryption as blsful's "TimeCrypt" on BLS12-381 (Lit SDK v3 to v7): a Boneh–Franklin
 * style scheme with the Fujisaki–Okamoto re-encryption check. Anyone holding the network key PK (G1)
 * encrypts to an identity; only σ = s·H₂(identity) (G2), which the key nodes release jointly,
 * decrypts. Byte layouts follow blsful exactly so that Lit's own code reads what this writes.
 */

/** HKDF salt of blsful's hash-to-scalar for TimeCrypt. */
const SALT = new TextEncoder().encode("TIMELOCK_BLS12381_XOF:HKDF-SHA2-256_");
/** HKDF info: I2OSP(48, 2), the output length, as in the IETF BLS KeyGen blsful borrows from. */
const INFO = Uint8Array.of(0, 48);
/** blsful pads the length-prefixed message to at least one 32-byte block. */
const MIN_PAYLOAD = 32;
/** Trailing byte of the serialised ciphertext: blsful's SignatureSchemes::ProofOfPossession. */
const SCHEME_POP = 0x02;
const U_BYTES = 48;
const V_BYTES = 32;

/** Thrown when a ciphertext is malformed, was tampered with, or does not decrypt under the given key. */
export class IbeDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "IbeDecryptionError";
  }
}

/**
 * The curve work of the scheme, done by one library: @noble/curves (NOBLE_IBE, the reference) or mcl's
 * WebAssembly (WASM_IBE, after loadWasmBls()). Everything else, every byte layout included, is this
 * file's, shared by both.
 */
export interface IbeCurve<PublicKey, Key> {
  /** Decodes the network key (48-byte compressed G1), refusing what decodeG1 refuses. */
  publicKey(bytes: Uint8Array): PublicKey;
  /** Decodes a decryption key σ (96-byte compressed G2), refusing what decodeG2 refuses. */
  decryptionKey(bytes: Uint8Array): Key;
  /** r·g1, compressed. */
  baseMultiple(r: bigint): Uint8Array;
  /** e(r·PK, H₂(identity)), serialised. */
  senderMask(publicKey: PublicKey, r: bigint, identity: Uint8Array | string): Uint8Array;
  /** e(U, σ), serialised; U is 48 bytes and refused as decodeG1 refuses. */
  receiverMask(u: Uint8Array, key: Key): Uint8Array;
}

/** The reference implementation, in pure JavaScript. */
export const NOBLE_IBE: IbeCurve<G1Point, G2Point> = {
  publicKey: (bytes) => decodeG1(bytes, "public key"),
  decryptionKey: (bytes) => decodeG2(bytes, "decryption key"),
  baseMultiple: (r) => G1_BASE.multiply(r).toBytes(true),
  senderMask: (publicKey, r, identity) => pairingBytes(publicKey.multiply(r), hashIdentity(identity)),
  receiverMask: (u, key) => pairingBytes(decodeG1(u, "U"), key),
};

/** mcl in WebAssembly, tens of times faster; only after `await loadWasmBls()`. */
export const WASM_IBE: IbeCurve<WasmG1, WasmG2> = {
  publicKey: (bytes) => decodeG1Wasm(bytes, "public key"),
  decryptionKey: (bytes) => decodeG2Wasm(bytes, "decryption key"),
  baseMultiple: (r) => mulG1Wasm(g1BaseWasm(), r).serialize(),
  senderMask: (publicKey, r, identity) => pairingBytesWasm(mulG1Wasm(publicKey, r), hashIdentityWasm(identity)),
  receiverMask: (u, key) => pairingBytesWasm(decodeG1Wasm(u, "U"), key),
};

/** Scalar multiples computed outside WebAssembly (natively, in Node: decryption-share-native.ts). */
export interface ScalarMultiples {
  /** r·H₂(identity), uncompressed (192 bytes). */
  hashMultiple(r: bigint, identity: Uint8Array | string): Uint8Array;
  /** r·g1, compressed. */
  baseMultiple(r: bigint): Uint8Array;
}

/**
 * WASM_IBE for encryption with the scalar multiples done elsewhere: the sender's mask is
 * e(PK, r·H₂(identity)), which bilinearity makes equal to e(r·PK, H₂(identity)), so the pairing is
 * the only work left to WebAssembly.
 */
export function wasmIbeWithMultiples(multiples: ScalarMultiples): IbeCurve<WasmG1, WasmG2> {
  return {
    ...WASM_IBE,
    baseMultiple: (r) => multiples.baseMultiple(r),
    senderMask: (publicKey, r, identity) => pairingBytesWasm(publicKey, decodeTrustedUncompressedG2Wasm(multiples.hashMultiple(r, identity))),
  };
}

/**
 * Encrypts `msg` to `identity` under the network public key `pk` (48-byte compressed G1, hex, or a key
 * `curve` decoded), with the reference curve unless told otherwise.
 */
export function encryptKey(pk: Uint8Array | string, identity: Uint8Array | string, msg: Uint8Array): Uint8Array;
export function encryptKey<P, K>(pk: Uint8Array | string | NoInfer<P>, identity: Uint8Array | string, msg: Uint8Array, curve: IbeCurve<P, K>): Uint8Array;
export function encryptKey<P, K>(
  pk: Uint8Array | string | P,
  identity: Uint8Array | string,
  msg: Uint8Array,
  curve: IbeCurve<P, K> = NOBLE_IBE as unknown as IbeCurve<P, K>,
): Uint8Array {
  const publicKey = pk instanceof Uint8Array || typeof pk === "string" ? curve.publicKey(hexOrBytes(pk, "public key")) : pk;
  const alpha = scalarLE(hashToScalar(randomBytes(32)));
  const r = hashToScalar(concatBytes(alpha, sha256(msg)));
  const v = xor(alpha, sha256(curve.senderMask(publicKey, r, identity)));
  const payload = concatBytes(leb128(msg.length), msg);
  const padded = payload.length >= MIN_PAYLOAD ? payload : concatBytes(payload, new Uint8Array(MIN_PAYLOAD - payload.length));
  const w = xor(padded, shake128(alpha, { dkLen: padded.length }));
  return concatBytes(curve.baseMultiple(r), v, leb128(w.length), w, Uint8Array.of(SCHEME_POP));
}

/**
 * Decrypts with the decryption key σ = s·H₂(identity) (96-byte compressed G2, hex, or a point of
 * `curve`), with the reference curve unless told otherwise.
 */
export function decryptKey(ciphertext: Uint8Array, sigma: Uint8Array | string | G2Point): Uint8Array;
export function decryptKey<P, K>(ciphertext: Uint8Array, sigma: Uint8Array | string | NoInfer<K>, curve: IbeCurve<P, K>): Uint8Array;
export function decryptKey<P, K>(
  ciphertext: Uint8Array,
  sigma: Uint8Array | string | K,
  curve: IbeCurve<P, K> = NOBLE_IBE as unknown as IbeCurve<P, K>,
): Uint8Array {
  const key = sigma instanceof Uint8Array || typeof sigma === "string" ? curve.decryptionKey(hexOrBytes(sigma, "decryption key")) : sigma;
  if (isZeroPoint(key)) throw new IbeDecryptionError("the decryption key is the identity point");
  const { u, v, w } = parseCiphertext(ciphertext);
  let mask: Uint8Array;
  try {
    mask = curve.receiverMask(u, key);
  } catch (error) {
    throw new IbeDecryptionError(`malformed ciphertext: ${(error as Error).message}`);
  }
  const alpha = xor(v, sha256(mask));
  const plain = xor(w, shake128(alpha, { dkLen: w.length }));
  const prefix = readLeb128(plain, 0);
  if (prefix === null || prefix.value > plain.length - prefix.next) {
    throw new IbeDecryptionError("the ciphertext does not decrypt under this key");
  }
  const msg = plain.slice(prefix.next, prefix.next + prefix.value);
  const padding = plain.subarray(prefix.next + prefix.value);
  const r = hashToScalar(concatBytes(alpha, sha256(msg)));
  // The Fujisaki–Okamoto check: only a ciphertext made honestly for this message re-encrypts to U.
  // U decoded above, so its bytes are canonical and comparing encodings compares points.
  if (!padding.every((byte) => byte === 0) || !equalBytes(curve.baseMultiple(r), u)) {
    throw new IbeDecryptionError("the ciphertext does not decrypt under this key");
  }
  return msg;
}

function parseCiphertext(ciphertext: Uint8Array) {
  const fail = (why: string) => new IbeDecryptionError(`malformed ciphertext: ${why}`);
  if (ciphertext.length < U_BYTES + V_BYTES + 2) throw fail("too short");
  const u = ciphertext.subarray(0, U_BYTES);
  const v = ciphertext.subarray(U_BYTES, U_BYTES + V_BYTES);
  const length = readLeb128(ciphertext, U_BYTES + V_BYTES);
  if (length === null || length.next + length.value + 1 !== ciphertext.length) throw fail("bad length of W");
  if (ciphertext[ciphertext.length - 1] !== SCHEME_POP) throw fail("unknown signature scheme byte");
  return { u, v, w: ciphertext.subarray(length.next, length.next + length.value) };
}

/** blsful's hash-to-scalar: HKDF-SHA256(IKM ‖ 0x00, salt, I2OSP(48, 2)) → 48 bytes, big-endian, mod r. */
function hashToScalar(ikm: Uint8Array): bigint {
  const okm = hkdf(sha256, concatBytes(ikm, Uint8Array.of(0)), SALT, INFO, 48);
  const scalar = Fr.create(BigInt(`0x${bytesToHex(okm)}`));
  // blsful retries on zero; with probability 2⁻²⁵⁵ that is better treated as a broken RNG.
  if (scalar === 0n) throw new Error("hash to scalar produced zero");
  return scalar;
}

/** A scalar as blsful's `to_repr()`: 32 bytes, little-endian. */
function scalarLE(value: bigint): Uint8Array {
  return Fr.toBytes(value).reverse();
}

function hexOrBytes(value: Uint8Array | string, what: string): Uint8Array {
  if (typeof value !== "string") return value;
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(value)) throw new EncodingError(`${what} is not hex`);
  return hexToBytes(value);
}

function isZeroPoint(key: unknown): boolean {
  const point = key as { is0?: () => boolean; isZero?: () => boolean };
  return point.is0?.() ?? point.isZero?.() ?? false;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

function xor(a: Uint8Array, b: Uint8Array): Uint8Array {
  return a.map((byte, i) => byte ^ (b[i] ?? 0));
}

/** Unsigned LEB128, the length prefix blsful and serde_bare use. */
function leb128(value: number): Uint8Array {
  const out: number[] = [];
  do {
    let byte = value & 0x7f;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return Uint8Array.from(out);
}

/** Reads an unsigned LEB128 of at most 32 bits at `offset`; null when truncated or too long. */
function readLeb128(bytes: Uint8Array, offset: number): { value: number; next: number } | null {
  let value = 0;
  for (let i = 0; i < 5; i++) {
    const byte = bytes[offset + i];
    if (byte === undefined) return null;
    value += (byte & 0x7f) * 2 ** (7 * i);
    if ((byte & 0x80) === 0) return { value, next: offset + i + 1 };
  }
  return null;
}
