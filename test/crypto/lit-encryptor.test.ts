import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/config.js";
import { UpstreamUnavailableError } from "../../src/domain/errors.js";
import { openPayload } from "../../src/crypto/envelope.js";
import { onlySignerConditions } from "../../src/crypto/identity.js";
import { createLitEncryptor, type LitClient } from "../../src/crypto/lit-encryptor.js";

/**
 * The Lit network cannot run here, so these tests inject a fake LitNodeClient (the one allowed mock)
 * and check what relgraph does around it: field mapping, bounded connection attempts, 50300.
 */
const signer = "0x" + "Ab".repeat(20);

class FakeLit implements LitClient {
  connects = 0;
  disconnected = false;
  lastKey: Uint8Array | null = null;
  lastConditions: unknown = null;
  constructor(
    private readonly behaviour: { connect?: (attempt: number) => Promise<unknown>; encrypt?: () => Promise<never> } = {},
  ) {}
  connect() {
    this.connects++;
    return this.behaviour.connect?.(this.connects) ?? Promise.resolve();
  }
  async encrypt(params: { accessControlConditions: unknown; dataToEncrypt: Uint8Array }) {
    if (this.behaviour.encrypt) return this.behaviour.encrypt();
    this.lastKey = params.dataToEncrypt.slice();
    this.lastConditions = params.accessControlConditions;
    return { ciphertext: "bGl0LWNpcGhlcnRleHQ=", dataToEncryptHash: bytesToHex(sha256(params.dataToEncrypt)) };
  }
  async disconnect() {
    this.disconnected = true;
  }
}

const never = () => new Promise<never>(() => undefined);

describe("Lit backend", () => {
  it("maps Lit's encrypt result into EncryptedData, with the only-signer conditions and the AES key", async () => {
    const fake = new FakeLit();
    const networks: string[] = [];
    const encryptor = await createLitEncryptor({
      network: "datil-dev",
      createClient: (network) => {
        networks.push(network);
        return fake;
      },
    });
    const plaintext = new TextEncoder().encode('{"relationId":"u1"}');
    const payload = await encryptor.encryptFor(signer, plaintext);
    expect(networks).toEqual(["datil-dev"]);
    expect(fake.lastConditions).toEqual(onlySignerConditions(signer));
    expect(payload).toMatchObject({
      encryptedSymmetricKey: "bGl0LWNpcGhlcnRleHQ=",
      accessControlConditions: onlySignerConditions(signer),
      dataToEncryptHash: bytesToHex(sha256(fake.lastKey!)),
      chain: "ethereum",
      backend: "lit",
    });
    expect(fake.lastKey).toHaveLength(32);
    expect(openPayload(fake.lastKey!, payload.encryptedString)).toEqual(plaintext);
    await encryptor.close();
    expect(fake.disconnected).toBe(true);
  });

  it("turns a failed connection into 50300 and retries on the next request", async () => {
    const fake = new FakeLit({ connect: (attempt) => (attempt === 1 ? Promise.reject(new Error("ECONNREFUSED")) : Promise.resolve()) });
    const encryptor = await createLitEncryptor({ network: "datil-dev", createClient: () => fake });
    const failed = encryptor.encryptFor(signer, new Uint8Array(1));
    await expect(failed).rejects.toBeInstanceOf(UpstreamUnavailableError);
    await expect(failed).rejects.toMatchObject({ code: "50300", message: 'the Lit network "datil-dev" is unavailable' });
    await expect(encryptor.encryptFor(signer, new Uint8Array(1))).resolves.toMatchObject({ backend: "lit" });
    // The startup warm-up and the first request shared the failed attempt.
    expect(fake.connects).toBe(2);
  });

  it("bounds a connection or an encryption that never answers with the timeout", async () => {
    const hanging = await createLitEncryptor({ network: "datil", timeoutMs: 50, createClient: () => new FakeLit({ connect: never }) });
    await expect(hanging.encryptFor(signer, new Uint8Array(1))).rejects.toMatchObject({ code: "50300" });
    const stuck = await createLitEncryptor({ network: "datil", timeoutMs: 50, createClient: () => new FakeLit({ encrypt: never }) });
    await expect(stuck.encryptFor(signer, new Uint8Array(1))).rejects.toMatchObject({ code: "50300" });
  });

  it("fails at startup with install instructions when the Lit SDK is not installed", async () => {
    const attempt = createLitEncryptor({ network: "datil-dev" });
    await expect(attempt).rejects.toBeInstanceOf(ConfigError);
    await expect(attempt).rejects.toThrow(/npm install @lit-protocol\/lit-node-client@7/);
  });

  it("refuses a signer that is not an address", async () => {
    const encryptor = await createLitEncryptor({ network: "datil-dev", createClient: () => new FakeLit() });
    await expect(encryptor.encryptFor("alice", new Uint8Array(1))).rejects.toThrow(TypeError);
  });
});
