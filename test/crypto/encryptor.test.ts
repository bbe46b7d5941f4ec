import { existsSync } from "node:fs";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { describe, expect, it } from "vitest";
import { decodeScalar, hashIdentity } from "../../src/crypto/bls.js";
import { combineDecryptionShares, decodeDecryptionShare, signDecryptionShare } from "../../src/crypto/decryption-share.js";
import * as sourceEncryptor from "../../src/crypto/encryptor.js";
import type { EncryptedPayload } from "../../src/crypto/encryptor.js";
import { openPayload } from "../../src/crypto/envelope.js";
import { decryptKey } from "../../src/crypto/ibe.js";
import { encryptionIdentity, onlySignerConditions } from "../../src/crypto/identity.js";
import { dealKeyNetwork } from "../../src/crypto/keygen.js";

const dealt = dealKeyNetwork({ threshold: 2, nodes: 3, url: (i) => `http://127.0.0.1:${7400 + i}` });
const signer = "0x" + "aB".repeat(20);

/** Decrypts as two nodes and a client would, without the network. */
function open(payload: EncryptedPayload): Uint8Array {
  const h = hashIdentity(encryptionIdentity(payload.accessControlConditions, payload.dataToEncryptHash));
  const shares = dealt.shares
    .slice(1)
    .map((s) => decodeDecryptionShare(signDecryptionShare(s.index, decodeScalar(s.secretShare, "s"), h)));
  const key = decryptKey(Buffer.from(payload.encryptedSymmetricKey, "base64"), combineDecryptionShares(shares));
  expect(bytesToHex(sha256(key))).toBe(payload.dataToEncryptHash);
  return openPayload(key, payload.encryptedString);
}

describe("threshold encryptor", () => {
  it("produces EncryptedData for the signer only, with a fresh key each time", async () => {
    const encryptor = sourceEncryptor.createThresholdEncryptor(dealt.network, { workers: 0 });
    const plaintext = new TextEncoder().encode('{"relationId":"u1"}');
    const first = await encryptor.encryptFor(signer, plaintext);
    const second = await encryptor.encryptFor(signer, plaintext);
    expect(first).toMatchObject({
      accessControlConditions: onlySignerConditions(signer.toLowerCase()),
      chain: "ethereum",
      backend: "relgraph",
    });
    expect(first.dataToEncryptHash).toMatch(/^[0-9a-f]{64}$/);
    expect(Buffer.from(first.encryptedSymmetricKey, "base64")).toHaveLength(115);
    expect(second.dataToEncryptHash).not.toBe(first.dataToEncryptHash);
    expect(open(first)).toEqual(plaintext);
    expect(open(second)).toEqual(plaintext);
    await encryptor.close();
  });

  it("refuses a signer that is not an address, and an invalid network", async () => {
    const encryptor = sourceEncryptor.createThresholdEncryptor(dealt.network, { workers: 0 });
    await expect(encryptor.encryptFor("0x1234", new Uint8Array(1))).rejects.toThrow(TypeError);
    expect(() => sourceEncryptor.createThresholdEncryptor({ ...dealt.network, threshold: 9 })).toThrow(/threshold/);
  });

  it("encrypts in worker threads, leaving the event loop free", async () => {
    // The pool needs the compiled worker, so this runs the build's encryptor (npm test builds first).
    const built = new URL("../../dist/src/crypto/encryptor.js", import.meta.url);
    expect(existsSync(built), "run npm run build first").toBe(true);
    const { createThresholdEncryptor } = (await import(built.href)) as typeof sourceEncryptor;
    const encryptor = createThresholdEncryptor(dealt.network, { workers: 2 });
    let turns = 0;
    let spinning = true;
    const spin = () => {
      turns++;
      if (spinning) setImmediate(spin);
    };
    setImmediate(spin);
    const plaintexts = Array.from({ length: 6 }, (_, i) => new TextEncoder().encode(`payload ${i}`));
    const payloads = await Promise.all(plaintexts.map((p) => encryptor.encryptFor(signer, p)));
    spinning = false;
    // Inline encryption would finish all six before the event loop turned once.
    expect(turns).toBeGreaterThan(1);
    payloads.forEach((payload, i) => expect(open(payload)).toEqual(plaintexts[i]));
    await encryptor.close();
    await expect(encryptor.encryptFor(signer, new Uint8Array(1))).rejects.toThrow(/closed/);
  });
});
