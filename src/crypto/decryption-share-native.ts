import { SecretKey } from "@chainsafe/blst";
import { bytesToHex, concatBytes } from "@noble/hashes/utils.js";
import { encodeScalar } from "./bls.js";

/**
 * A key node's share at native speed, in Node only (the browser client never signs): σᵢ = sᵢ·H₂(id)
 * is exactly the Ethereum BLS signature (blst, the same hash-to-G2 and `_POP_` tag as H₂) of the
 * identity's bytes under the secret key sᵢ. test/crypto/fast-paths.test.ts holds it to noble's
 * signDecryptionShare byte for byte.
 */

/** Signs identities with node `index`'s secret share, in Lit's wire format (decryption-share.ts). */
export function nativeShareSigner(index: number, secretShare: bigint): (identity: string) => string {
  const key = SecretKey.fromBytes(encodeScalar(secretShare));
  return (identity) => bytesToHex(concatBytes(Uint8Array.of(index), key.sign(new TextEncoder().encode(identity)).toBytes(true)));
}

/** The secret key 1, whose signature of a message is H₂(message) itself. */
const ONE = (() => {
  const bytes = new Uint8Array(32);
  bytes[31] = 1;
  return SecretKey.fromBytes(bytes);
})();

/**
 * H₂(identity), compressed, natively: blst's signature under the secret key 1. About ten times faster
 * than hashing in WebAssembly, which is most of an encryption's cost after its pairing.
 */
export function hashIdentityNative(identity: string | Uint8Array): Uint8Array {
  return ONE.sign(identityBytes(identity)).toBytes(true);
}

/**
 * The two scalar multiples an encryption needs, natively: r·H₂(identity) is blst's signature of the
 * identity under the secret key r, and r·g1 its public key. With them the sender's mask is the
 * pairing e(PK, r·H₂(identity)), equal to e(r·PK, H₂(identity)), and only the pairing is left to
 * WebAssembly.
 */
export const NATIVE_MULTIPLES = {
  /** r·H₂(identity), uncompressed (192 bytes, as blst and ZCash write it): decoding it needs no square root. */
  hashMultiple(r: bigint, identity: string | Uint8Array): Uint8Array {
    return SecretKey.fromBytes(encodeScalar(r)).sign(identityBytes(identity)).toBytes(false);
  },
  /** r·g1, compressed. */
  baseMultiple(r: bigint): Uint8Array {
    return SecretKey.fromBytes(encodeScalar(r)).toPublicKey().toBytes(true);
  },
};

function identityBytes(identity: string | Uint8Array): Uint8Array {
  return typeof identity === "string" ? new TextEncoder().encode(identity) : identity;
}
