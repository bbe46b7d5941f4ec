import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { shake128 } from "@noble/hashes/sha3.js";
import { bytesToHex, concatBytes, randomBytes } from "@noble/hashes/utils.js";
import { Fr, G1_BASE, decodeG1, decodeG2, hashIdentity, pairingBytes, type G2Point } from "./bls.js";

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

/** Encrypts `msg` to `identity` under the network public key `pk` (48-byte compressed G1, or hex). */
export function encryptKey(pk: Uint8Array | string, identity: Uint8Array | string, msg: Uint8Array): Uint8Array {
  const publicKey = decodeG1(pk, "public key");
  const alpha = scalarLE(hashToScalar(randomBytes(32)));
  const r = hashToScalar(concatBytes(alpha, sha256(msg)));
  const v = xor(alpha, sha256(pairingBytes(publicKey.multiply(r), hashIdentity(identity))));
  const payload = concatBytes(leb128(msg.length), msg);
  const padded = payload.length >= MIN_PAYLOAD ? payload : concatBytes(payload, new Uint8Array(MIN_PAYLOAD - payload.length));
  const w = xor(padded, shake128(alpha, { dkLen: padded.length }));
  return concatBytes(G1_BASE.multiply(r).toBytes(true), v, leb128(w.length), w, Uint8Array.of(SCHEME_POP));
}

/** Decrypts with the decryption key σ = s·H₂(identity) (96-byte compressed G2, hex, or a point). */
export function decryptKey(ciphertext: Uint8Array, sigma: Uint8Array | string | G2Point): Uint8Array {
  const key = sigma instanceof Uint8Array || typeof sigma === "string" ? decodeG2(sigma, "decryption key") : sigma;
  if (key.is0()) throw new IbeDecryptionError("the decryption key is the identity point");
  const { u, v, w } = parseCiphertext(ciphertext);
  const alpha = xor(v, sha256(pairingBytes(u, key)));
  const plain = xor(w, shake128(alpha, { dkLen: w.length }));
  const prefix = readLeb128(plain, 0);
  if (prefix === null || prefix.value > plain.length - prefix.next) {
    throw new IbeDecryptionError("the ciphertext does not decrypt under this key");
  }
  const msg = plain.slice(prefix.next, prefix.next + prefix.value);
  const padding = plain.subarray(prefix.next + prefix.value);
  const r = hashToScalar(concatBytes(alpha, sha256(msg)));
  // The Fujisaki–Okamoto check: only a ciphertext made honestly for this message re-encrypts to U.
  if (!padding.every((byte) => byte === 0) || !G1_BASE.multiply(r).equals(u)) {
    throw new IbeDecryptionError("the ciphertext does not decrypt under this key");
  }
  return msg;
}

function parseCiphertext(ciphertext: Uint8Array) {
  const fail = (why: string) => new IbeDecryptionError(`malformed ciphertext: ${why}`);
  if (ciphertext.length < U_BYTES + V_BYTES + 2) throw fail("too short");
  let u;
  try {
    u = decodeG1(ciphertext.subarray(0, U_BYTES), "U");
  } catch (error) {
    throw fail((error as Error).message);
  }
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
