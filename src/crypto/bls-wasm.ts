import mcl from "mcl-wasm";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { EncodingError } from "./bls.js";

/**
 * BLS12-381 at native speed in Node and in browsers alike: mcl compiled to WebAssembly (mcl-wasm), for
 * the pairing work of encryption, share checks, combination and decryption. bls.ts (@noble/curves)
 * stays the reference; test/crypto/fast-paths.test.ts holds every result here to it, byte for byte.
 *
 * mcl keeps one global configuration, set once by loadWasmBls():
 * - ETH serialisation: points compress exactly as noble and blsful do (ZCash flags, big-endian).
 * - IRTF map-to-curve: RFC 9380 hash-to-G2, whose default tag in mcl is H₂'s `_POP_` tag.
 * - Order checks on every decode: a point outside the prime-order subgroup is refused, as noble does.
 */

export type WasmG1 = mcl.G1;
export type WasmG2 = mcl.G2;

let loading: Promise<void> | undefined;
/** The G1 generator, compressed; mcl has no getter for it on pairing curves. */
const G1_GENERATOR = hexToBytes(
  "97f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb",
);
let generator: WasmG1 | undefined;

/** Loads and configures the WebAssembly module; every other function here needs it done. */
export function loadWasmBls(): Promise<void> {
  loading ??= (async () => {
    await mcl.init(mcl.BLS12_381);
    mcl.setETHserialization(true);
    mcl.setMapToMode(mcl.IRTF);
    mcl.verifyOrderG1(true);
    mcl.verifyOrderG2(true);
  })().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

/** H₂: RFC 9380 hash-to-G2 of an identity, with the `_POP_` tag. */
export function hashIdentityWasm(identity: Uint8Array | string): WasmG2 {
  return mcl.hashAndMapToG2(typeof identity === "string" ? new TextEncoder().encode(identity) : identity);
}

/** The G1 generator. */
export function g1BaseWasm(): WasmG1 {
  generator ??= decodeG1Wasm(G1_GENERATOR, "the G1 generator");
  return generator;
}

/** Decodes a compressed G1 point, refusing bad encodings, points outside the subgroup and the identity. */
export function decodeG1Wasm(bytes: Uint8Array, what: string): WasmG1 {
  const point = new mcl.G1();
  decode(() => point.deserialize(bytes), bytes.length, 48, what);
  if (point.isZero()) throw new EncodingError(`${what} is the identity point`);
  return point;
}

/** Decodes a compressed G2 point, refusing bad encodings, points outside the subgroup and the identity. */
export function decodeG2Wasm(bytes: Uint8Array, what: string): WasmG2 {
  const point = new mcl.G2();
  decode(() => point.deserialize(bytes), bytes.length, 96, what);
  if (point.isZero()) throw new EncodingError(`${what} is the identity point`);
  return point;
}

/**
 * Decodes an uncompressed G2 point (192 bytes, ZCash layout: x.c1, x.c0, y.c1, y.c0) this process
 * computed itself, without the subgroup check: mcl reads no such bytes, but its text form takes the
 * coordinates without the square root decompression costs.
 */
export function decodeTrustedUncompressedG2Wasm(bytes: Uint8Array): WasmG2 {
  if (bytes.length !== 192 || (bytes[0]! & 0xe0) !== 0) throw new EncodingError("an uncompressed G2 point is 192 bytes with no flags set");
  const hex = (at: number) => bytesToHex(bytes.subarray(at * 48, (at + 1) * 48));
  const point = new mcl.G2();
  mcl.verifyOrderG2(false);
  try {
    point.setStr(`1 ${hex(1)} ${hex(0)} ${hex(3)} ${hex(2)}`, 16);
  } finally {
    mcl.verifyOrderG2(true);
  }
  return point;
}

/** A scalar of Fr as mcl's. */
export function scalarWasm(value: bigint): mcl.Fr {
  const scalar = new mcl.Fr();
  scalar.setStr(value.toString(16), 16);
  return scalar;
}

export function mulG1Wasm(point: WasmG1, scalar: bigint): WasmG1 {
  return mcl.mul(point, scalarWasm(scalar));
}

export function mulG2Wasm(point: WasmG2, scalar: bigint): WasmG2 {
  return mcl.mul(point, scalarWasm(scalar));
}

/**
 * e(P, Q) serialised as blsful (and bls.ts's pairingBytes) does. mcl computes the same element of GT,
 * but writes each Fp2 coefficient as (c1, c0) where blsful writes (c0, c1): the 48-byte halves of
 * every pair are swapped back.
 */
export function pairingBytesWasm(p: WasmG1, q: WasmG2): Uint8Array {
  const raw = mcl.pairing(p, q).serialize();
  const out = new Uint8Array(raw.length);
  for (let at = 0; at < raw.length; at += 96) {
    out.set(raw.subarray(at + 48, at + 96), at);
    out.set(raw.subarray(at, at + 48), at + 48);
  }
  return out;
}

/** Whether e(a1, b1) = e(a2, b2): one product of two Miller loops and a single final exponentiation. */
export function pairingsEqualWasm(a1: WasmG1, b1: WasmG2, a2: WasmG1, b2: WasmG2): boolean {
  const product = mcl.mul(mcl.millerLoop(a1, b1), mcl.millerLoop(mcl.neg(a2), b2));
  return mcl.finalExp(product).isOne();
}

/** A G2 point as interpolatePoints (shamir.ts) takes it. */
export class InterpolableG2 {
  constructor(readonly point: WasmG2) {}
  multiply(scalar: bigint): InterpolableG2 {
    return new InterpolableG2(mulG2Wasm(this.point, scalar));
  }
  add(other: InterpolableG2): InterpolableG2 {
    return new InterpolableG2(mcl.add(this.point, other.point));
  }
}

function decode(fn: () => void, length: number, expected: number, what: string): void {
  if (length !== expected) throw new EncodingError(`${what} must be ${expected} bytes`);
  try {
    fn();
  } catch {
    throw new EncodingError(`${what} is not a valid compressed point of its group`);
  }
}
