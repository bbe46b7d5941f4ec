import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { G1_BASE, hashIdentity } from "../../src/crypto/bls.js";
import { IbeDecryptionError, decryptKey, encryptKey } from "../../src/crypto/ibe.js";
import { randomScalar } from "../../src/crypto/shamir.js";

const secret = randomScalar();
const pk = G1_BASE.multiply(secret).toBytes(true);
const identity = "lit-accesscontrolcondition://aa/bb";
const sigma = hashIdentity(identity).multiply(secret);

describe("TimeCrypt IBE", () => {
  it("round-trips a 32-byte key in a 115-byte ciphertext", () => {
    const key = new Uint8Array(randomBytes(32));
    const ciphertext = encryptKey(pk, identity, key);
    expect(ciphertext.length).toBe(115);
    expect(ciphertext[114]).toBe(0x02);
    expect(decryptKey(ciphertext, sigma.toBytes(true))).toEqual(key);
  });

  it("round-trips empty, short and multi-byte-length messages", () => {
    for (const size of [0, 1, 31, 200, 1000]) {
      const msg = new Uint8Array(randomBytes(size));
      expect(decryptKey(encryptKey(pk, identity, msg), sigma)).toEqual(msg);
    }
  });

  it("is randomised", () => {
    const key = new Uint8Array(32);
    expect(encryptKey(pk, identity, key)).not.toEqual(encryptKey(pk, identity, key));
  });

  it("refuses the key of another identity or another secret", () => {
    const ciphertext = encryptKey(pk, identity, new Uint8Array(32));
    expect(() => decryptKey(ciphertext, hashIdentity(`${identity}x`).multiply(secret))).toThrow(IbeDecryptionError);
    expect(() => decryptKey(ciphertext, hashIdentity(identity).multiply(randomScalar()))).toThrow(IbeDecryptionError);
  });

  it("rejects every single-bit flip and any truncation or extension", () => {
    const ciphertext = encryptKey(pk, identity, new Uint8Array(randomBytes(32)));
    for (let byte = 0; byte < ciphertext.length; byte++) {
      const tampered = ciphertext.slice();
      tampered[byte] = (tampered[byte] as number) ^ (1 << byte % 8);
      expect(() => decryptKey(tampered, sigma), `byte ${byte}`).toThrow(IbeDecryptionError);
    }
    expect(() => decryptKey(ciphertext.subarray(0, 114), sigma)).toThrow(IbeDecryptionError);
    expect(() => decryptKey(Uint8Array.of(...ciphertext, 0), sigma)).toThrow(IbeDecryptionError);
  });

  it("refuses an identity-point decryption key and an identity-point public key", () => {
    const ciphertext = encryptKey(pk, identity, new Uint8Array(32));
    expect(() => decryptKey(ciphertext, "c" + "0".repeat(191))).toThrow(/identity/);
    expect(() => encryptKey("c" + "0".repeat(95), identity, new Uint8Array(32))).toThrow(/identity/);
  });
});
