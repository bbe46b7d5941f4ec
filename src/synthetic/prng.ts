import { createHash } from "node:crypto";

/** A seeded pseudo-random source: the same seed always gives the same sequence. */
export interface Prng {
  /** A uniform 32-bit unsigned integer. */
  uint32(): number;
  /** A uniform float in [0, 1). */
  next(): number;
  /** A uniform integer in [0, n). */
  int(n: number): number;
}

/**
 * Creates a xoshiro128** generator whose 128-bit state is the SHA-256 of the seed text. Hashing
 * makes any seed usable (text or number, "1" and 1 alike) and keeps nearby seeds uncorrelated.
 * Math.random is never used: generated datasets must be reproducible from their seed.
 */
export function createPrng(seed: string | number): Prng {
  const digest = createHash("sha256").update(String(seed)).digest();
  const s = new Uint32Array([digest.readUInt32LE(0), digest.readUInt32LE(4), digest.readUInt32LE(8), digest.readUInt32LE(12)]);
  // An all-zero state would stay zero forever.
  if ((s[0]! | s[1]! | s[2]! | s[3]!) === 0) s[0] = 1;
  const uint32 = (): number => {
    const result = Math.imul(rotl(Math.imul(s[1]!, 5), 7), 9) >>> 0;
    const t = s[1]! << 9;
    s[2]! ^= s[0]!;
    s[3]! ^= s[1]!;
    s[1]! ^= s[2]!;
    s[0]! ^= s[3]!;
    s[2]! ^= t;
    s[3] = rotl(s[3]!, 11);
    return result;
  };
  return {
    uint32,
    next: () => uint32() / 2 ** 32,
    int: (n) => Math.floor((uint32() / 2 ** 32) * n),
  };
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
