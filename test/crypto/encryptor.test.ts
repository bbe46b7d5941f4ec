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

  describe("one payload key per authorization", () => {
    const HOUR = 3600_000;
    const authorization = (id: string, validUntil: number, address = signer) => ({ address, id, validUntil: new Date(validUntil) });

    it("shares one key among an authorization's answers, with a fresh IV each, and never across authorizations", async () => {
      let clock = 1_000_000;
      const encryptor = sourceEncryptor.createThresholdEncryptor(dealt.network, { workers: 0, now: () => clock });
      const first = new TextEncoder().encode('["page 1"]');
      const second = new TextEncoder().encode('["page 2"]');
      const a = authorization("a".repeat(64), clock + HOUR);
      const [a1, a2] = await Promise.all([encryptor.encryptForAuthorization(a, first), encryptor.encryptForAuthorization(a, second)]);
      expect(a2.encryptedSymmetricKey).toBe(a1.encryptedSymmetricKey);
      expect(a2.dataToEncryptHash).toBe(a1.dataToEncryptHash);
      // Same key, different IVs: the sealed payloads' first 12 bytes differ.
      const iv = (payload: EncryptedPayload) => Buffer.from(payload.encryptedString, "base64").subarray(0, 12).toString("hex");
      expect(iv(a2)).not.toBe(iv(a1));
      expect(open(a1)).toEqual(first);
      expect(open(a2)).toEqual(second);

      const b = await encryptor.encryptForAuthorization(authorization("b".repeat(64), clock + HOUR), first);
      expect(b.dataToEncryptHash).not.toBe(a1.dataToEncryptHash);
      // The same id presented for another signer (it cannot be, but the cache must not tell) gets its own key.
      const other = "0x" + "cd".repeat(20);
      const c = await encryptor.encryptForAuthorization(authorization("a".repeat(64), clock + HOUR, other), first);
      expect(c.dataToEncryptHash).not.toBe(a1.dataToEncryptHash);
      expect(c.accessControlConditions).toEqual(onlySignerConditions(other));

      // Past the authorization's lifetime its key is gone and it is refused.
      clock += HOUR;
      await expect(encryptor.encryptForAuthorization(a, first)).rejects.toThrow(/expired/);
      await encryptor.close();
    });

    it("never seals with a wiped key: an answer in flight when the encryptor closes either fails or decrypts", async () => {
      for (let i = 0; i < 5; i++) {
        const encryptor = sourceEncryptor.createThresholdEncryptor(dealt.network, { workers: 0 });
        const plaintext = new TextEncoder().encode(`answer ${i}`);
        const inFlight = encryptor.encryptForAuthorization(authorization(`${i}`.repeat(64), Date.now() + HOUR), plaintext);
        await encryptor.close();
        const outcome = await inFlight.then(
          (payload) => payload,
          (error: Error) => error,
        );
        if (outcome instanceof Error) expect(outcome.message).toMatch(/closed/);
        else expect(open(outcome)).toEqual(plaintext);
      }
    });

    it("keeps a bounded number of keys: the oldest authorization's makes room", async () => {
      const encryptor = sourceEncryptor.createThresholdEncryptor(dealt.network, { workers: 0, keyCacheSize: 2 });
      const plaintext = new Uint8Array(1);
      const until = Date.now() + HOUR;
      const hash = async (id: string) => (await encryptor.encryptForAuthorization(authorization(id, until), plaintext)).dataToEncryptHash;
      const first = await hash("1");
      expect(await hash("1")).toBe(first);
      await hash("2");
      await hash("3");
      expect(await hash("1")).not.toBe(first);
      await encryptor.close();
    });
  });
});
