import { randomBytes } from "node:crypto";
import { blsCombine, blsDecrypt, blsEncrypt, blsVerify } from "@lit-protocol/wasm";
import { hexToBytes } from "@noble/hashes/utils.js";
import { describe, expect, it } from "vitest";
import { decodeScalar, hashIdentity } from "../../src/crypto/bls.js";
import { combineDecryptionShares, decodeDecryptionShare, signDecryptionShare } from "../../src/crypto/decryption-share.js";
import { createThresholdEncryptor } from "../../src/crypto/encryptor.js";
import { openPayload } from "../../src/crypto/envelope.js";
import { decryptKey } from "../../src/crypto/ibe.js";
import { canonicalConditionsJson, encryptionIdentity, onlySignerConditions } from "../../src/crypto/identity.js";
import { dealKeyNetwork } from "../../src/crypto/keygen.js";

/**
 * Lit's own WebAssembly build (@lit-protocol/wasm 7.4, blsful inside) is the independent check that
 * relgraph's ciphertexts, shares and identities are Lit's, both ways.
 */
const VARIANT = "Bls12381G2";
const dealt = dealKeyNetwork({ threshold: 2, nodes: 3, url: (i) => `http://127.0.0.1:${7400 + i}` });
const pk = hexToBytes(dealt.network.publicKey);
const signer = "0x" + "ab".repeat(20);

function wireShares(identity: string, indices: number[]): string[] {
  const h = hashIdentity(identity);
  return indices.map((i) => {
    const share = dealt.shares[i - 1]!;
    return signDecryptionShare(share.index, decodeScalar(share.secretShare, "s"), h);
  });
}

describe("Lit compatibility (@lit-protocol/wasm)", () => {
  it("Lit combines relgraph's shares, verifies the key and decrypts relgraph's ciphertext", async () => {
    const encryptor = createThresholdEncryptor(dealt.network, { workers: 0 });
    const plaintext = new TextEncoder().encode(JSON.stringify({ relationId: "u1", followerCount: 3 }));
    const payload = await encryptor.encryptFor(signer, plaintext);
    const identity = encryptionIdentity(payload.accessControlConditions, payload.dataToEncryptHash);

    for (const indices of [[1, 2], [1, 3], [2, 3]]) {
      const shares = wireShares(identity, indices);
      const litKey = await blsCombine(VARIANT, shares.map((s) => hexToBytes(s)));
      const ourKey = combineDecryptionShares(shares.map(decodeDecryptionShare));
      expect(litKey).toEqual(ourKey.toBytes(true));
      await blsVerify(VARIANT, pk, new TextEncoder().encode(identity), litKey);
      const key = await blsDecrypt(VARIANT, Buffer.from(payload.encryptedSymmetricKey, "base64"), litKey);
      expect(openPayload(key, payload.encryptedString)).toEqual(plaintext);
    }
  });

  it("relgraph decrypts ciphertexts made by Lit's blsEncrypt, of any length", async () => {
    const identity = encryptionIdentity(onlySignerConditions(signer), "cd".repeat(32));
    const sigma = combineDecryptionShares(wireShares(identity, [3, 1]).map(decodeDecryptionShare));
    for (const size of [32, 0, 5, 127, 128, 300]) {
      const message = new Uint8Array(randomBytes(size));
      const ciphertext = await blsEncrypt(VARIANT, pk, message, new TextEncoder().encode(identity));
      expect(decryptKey(ciphertext, sigma)).toEqual(message);
    }
  });

  it("Lit refuses a key combined for another identity", async () => {
    const identity = encryptionIdentity(onlySignerConditions(signer), "ef".repeat(32));
    const other = await blsCombine(VARIANT, wireShares(`${identity}0`, [1, 2]).map((s) => hexToBytes(s)));
    await expect(blsVerify(VARIANT, pk, new TextEncoder().encode(identity), other)).rejects.toBeDefined();
    const ciphertext = await blsEncrypt(VARIANT, pk, new Uint8Array(32), new TextEncoder().encode(identity));
    await expect(blsDecrypt(VARIANT, ciphertext, other)).rejects.toBeDefined();
  });

  it("canonicalises conditions in Lit's key order whatever the input order", () => {
    const shuffled = [
      {
        returnValueTest: { value: signer, comparator: "=" },
        parameters: [":userAddress"],
        method: "",
        chain: "ethereum",
        standardContractType: "",
        contractAddress: "",
      },
    ];
    const expected =
      '[{"contractAddress":"","chain":"ethereum","standardContractType":"","method":"","parameters":[":userAddress"],' +
      `"returnValueTest":{"comparator":"=","value":"${signer}"}}]`;
    expect(canonicalConditionsJson(shuffled)).toBe(expected);
    expect(canonicalConditionsJson(onlySignerConditions(signer.toUpperCase().replace("0X", "0x")))).toBe(expected);
    expect(encryptionIdentity(shuffled, "00".repeat(32))).toMatch(/^lit-accesscontrolcondition:\/\/[0-9a-f]{64}\/0{64}$/);
  });
});
