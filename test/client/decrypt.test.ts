import Fastify, { type FastifyInstance } from "fastify";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSiweVerifier } from "../../src/auth/siwe.js";
import { hashIdentity } from "../../src/crypto/bls.js";
import { DecryptionError, createPayloadKeyCache, decryptResult, fetchKeyNetwork } from "../../src/client/decrypt.js";
import { decodeDecryptionShare, encodeDecryptionShare } from "../../src/crypto/decryption-share.js";
import { createDevKeyNetwork, type DevKeyNetwork } from "../../src/crypto/dev-network.js";
import { createThresholdEncryptor, type EncryptedPayload } from "../../src/crypto/encryptor.js";
import type { PublicKeyNetwork } from "../../src/crypto/key-network.js";
import { keyNodeRoutes } from "../../src/crypto/key-node.js";
import { randomScalar } from "../../src/crypto/shamir.js";
import { signAuthorization } from "../support/keynodes.js";

/**
 * The client against real key nodes on a real socket: the development network mounted in one Fastify
 * server (as `relgraph serve` does), plus lying nodes that answer with bad shares.
 */
const verifier = createSiweVerifier({ domains: [], maxAgeSeconds: 86400 });
const alice = Wallet.createRandom();
const bob = Wallet.createRandom();
const plaintext = new TextEncoder().encode(JSON.stringify([{ relation: { relationId: "u2" }, description: "friends" }]));

type Lie = "random" | "doubled" | "index0" | "identity" | "garbage" | "borrowed" | "hang" | "stall";

/** Requests the "stall" node holds unanswered until the test lets them go. */
const stalled: (() => void)[] = [];

let dev: DevKeyNetwork;
let server: FastifyInstance;
let liar: FastifyInstance;
let serverUrl: string;
let liarUrl: string;
let closedUrl: string;
let payload: EncryptedPayload;
let auth: { sig: string; message: string };

beforeAll(async () => {
  dev = createDevKeyNetwork();
  // The client aborts requests it no longer needs; fetch may keep a connected but unused socket,
  // which a graceful close would wait out (headersTimeout). Tests close at once.
  server = Fastify({ forceCloseConnections: true });
  for (const { prefix, share } of dev.nodes) await server.register(keyNodeRoutes, { prefix, share, verifier });
  server.get("/key-network", async () => dev.network);
  serverUrl = await server.listen({ port: 0, host: "127.0.0.1" });

  // A node that lies in the way its path says.
  liar = Fastify({ forceCloseConnections: true });
  liar.post<{ Params: { lie: Lie }; Body: Record<string, unknown> }>("/:lie/v1/decryption-share", async (request, reply) => {
    const point = hashIdentity("anything").multiply(randomScalar());
    switch (request.params.lie) {
      case "random":
        return { index: 3, signatureShare: encodeDecryptionShare({ index: 3, point }) };
      case "index0":
        return { index: 0, signatureShare: `00${point.toHex(true)}` };
      case "identity":
        return { index: 3, signatureShare: `03c0${"0".repeat(190)}` };
      case "garbage":
        return { index: 3, signatureShare: "03zz" };
      case "doubled": {
        // Node 3's genuine share times two: a well-formed point for the right identity, the wrong value.
        const genuine = (await (await askNode(3, request.body)).json()) as { signatureShare: string };
        const share = decodeDecryptionShare(genuine.signatureShare);
        return { index: 3, signatureShare: encodeDecryptionShare({ index: 3, point: share.point.multiply(2n) }) };
      }
      case "borrowed": {
        // Node 1's genuine share, passed off as node 3's.
        const answer = await fetch(`${serverUrl}/dev-key-nodes/1/v1/decryption-share`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(request.body),
        });
        return answer.json();
      }
      case "hang":
        await new Promise((resolve) => setTimeout(resolve, 2000));
        return reply.code(500).send();
      case "stall":
        await new Promise<void>((resolve) => stalled.push(resolve));
        return reply.code(500).send();
    }
  });
  liarUrl = await liar.listen({ port: 0, host: "127.0.0.1" });

  // A port that refuses connections: listen, note the port, close.
  const gone = Fastify();
  closedUrl = await gone.listen({ port: 0, host: "127.0.0.1" });
  await gone.close();

  const encryptor = createThresholdEncryptor(dev.network, { workers: 0 });
  payload = await encryptor.encryptFor(alice.address, plaintext);
  await encryptor.close();
  auth = await signAuthorization(alice, "Access to Relationship Graph.");
});
afterAll(async () => {
  for (const release of stalled.splice(0)) release();
  await server.close();
  await liar.close();
});

/** Asks the genuine node `index` of the development network for a share. */
function askNode(index: number, body: unknown): Promise<Response> {
  return fetch(`${serverUrl}/dev-key-nodes/${index}/v1/decryption-share`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** The dev network with node i's URL replaced. */
function withNodes(urls: Record<number, string>): PublicKeyNetwork {
  return { ...dev.network, nodes: dev.network.nodes.map((node) => ({ ...node, url: urls[node.index] ?? node.url })) };
}

function decrypt(network: PublicKeyNetwork, encrypted = payload, authorization = auth, timeoutMs?: number) {
  return decryptResult(encrypted, { network, serverUrl, ...authorization, timeoutMs });
}

describe("decryptResult", () => {
  it("decrypts with the network fetched from the server, resolving relative node URLs", async () => {
    const network = await fetchKeyNetwork(serverUrl);
    expect(network).toEqual(dev.network);
    expect(await decrypt(network)).toEqual(plaintext);
  });

  it("decrypts with one node down", async () => {
    for (const down of [1, 2, 3]) {
      expect(await decrypt(withNodes({ [down]: closedUrl }))).toEqual(plaintext);
    }
  });

  it("decrypts with one lying node, whatever its lie", async () => {
    for (const lie of ["random", "doubled", "index0", "identity", "garbage", "borrowed"]) {
      expect(await decrypt(withNodes({ 3: `${liarUrl}/${lie}` }))).toEqual(plaintext);
    }
  });

  it("decrypts when a well-formed wrong share is among the first combined: drops it and waits for the third", async () => {
    for (const lie of ["random", "doubled"]) {
      // Node 1's answer is held until nodes 2 and 3 (the liar) have answered, so the first two shares
      // combined are 2's and the lie, whose σ does not decrypt.
      let release = () => {};
      const othersAnswered = new Promise<void>((resolve) => (release = resolve));
      let answered = 0;
      const ordered: typeof fetch = (input, init) => {
        const answer = fetch(input, init);
        if (String(input).includes("/dev-key-nodes/1/")) {
          return othersAnswered.then(() => new Promise((resolve) => setTimeout(resolve, 100))).then(() => answer);
        }
        return answer.finally(() => {
          if (++answered === 2) release();
        });
      };
      const network = withNodes({ 3: `${liarUrl}/${lie}` });
      const plain = await decryptResult(payload, { network, serverUrl, ...auth, fetch: ordered });
      expect(plain).toEqual(plaintext);
    }
  });

  it("never accepts a wrong plaintext: a liar and one honest node cannot decrypt", async () => {
    for (const lie of ["random", "doubled"]) {
      const attempt = decrypt(withNodes({ 1: closedUrl, 3: `${liarUrl}/${lie}` }));
      await expect(attempt).rejects.toThrow(/got 1 valid decryption share\(s\) from 3 key node\(s\); 2 are needed/);
      await expect(attempt).rejects.toThrow(/node 3: sent a share that fails its pairing check/);
    }
  });

  it("rejects every kind of bad share: a liar plus a node down leaves too few", async () => {
    const reasons: Record<string, RegExp> = {
      random: /node 3: sent a share that fails its pairing check/,
      doubled: /node 3: sent a share that fails its pairing check/,
      index0: /node 3: .*index must not be 0/,
      identity: /node 3: .*identity point/,
      garbage: /node 3: a decryption share must be 97 bytes/,
      borrowed: /node 3: answered with the share index 1/,
    };
    for (const [lie, reason] of Object.entries(reasons)) {
      const attempt = decrypt(withNodes({ 2: closedUrl, 3: `${liarUrl}/${lie}` }));
      await expect(attempt).rejects.toThrow(DecryptionError);
      await expect(attempt).rejects.toThrow(/got 1 valid decryption share\(s\) from 3 key node\(s\); 2 are needed/);
      await expect(attempt).rejects.toThrow(reason);
    }
  });

  it("fails clearly with two nodes down", async () => {
    const attempt = decrypt(withNodes({ 1: closedUrl, 3: closedUrl }));
    await expect(attempt).rejects.toThrow(/got 1 valid decryption share\(s\) from 3 key node\(s\); 2 are needed/);
    await expect(attempt).rejects.toThrow(/node 1: .*node 3: /);
  });

  it("with one node answering slowly, decrypts with the other two without waiting for it", async () => {
    const before = stalled.length;
    // The budget is far beyond the test's own time limit: waiting for the slow node would fail the test.
    const plain = await decrypt(withNodes({ 2: `${liarUrl}/stall` }), payload, auth, 600_000);
    expect(plain).toEqual(plaintext);
    // The slow node got its request and still holds it, unanswered.
    expect(stalled.length).toBe(before + 1);
    for (const release of stalled.splice(0)) release();
  });

  it("keeps a decrypted payload key, so the authorization's later answers need no key node", async () => {
    const encryptor = createThresholdEncryptor(dev.network, { workers: 0 });
    const authorization = { address: alice.address, id: "a".repeat(64), validUntil: new Date(Date.now() + 3600_000) };
    const pages = await Promise.all(["[1]", "[2]", "[3]"].map((text) => encryptor.encryptForAuthorization(authorization, new TextEncoder().encode(text))));
    await encryptor.close();
    let asked = 0;
    const counting: typeof fetch = (input, init) => {
      asked++;
      return fetch(input, init);
    };
    const keyCache = createPayloadKeyCache();
    const opened: string[] = [];
    for (const page of pages) {
      opened.push(new TextDecoder().decode(await decryptResult(page, { network: dev.network, serverUrl, ...auth, fetch: counting, keyCache })));
    }
    expect(opened).toEqual(["[1]", "[2]", "[3]"]);
    // One threshold decryption (up to three nodes asked), then AES alone.
    expect(asked).toBeGreaterThanOrEqual(2);
    expect(asked).toBeLessThanOrEqual(3);
    // A tampered answer under the kept key is still refused.
    const tampered = { ...pages[1]!, encryptedString: pages[0]!.encryptedString.replace(/^./, (c) => (c === "A" ? "B" : "A")) };
    await expect(decryptResult(tampered, { network: dev.network, serverUrl, ...auth, keyCache })).rejects.toThrow(DecryptionError);
    // Without the cache, each answer is a threshold decryption of its own.
    asked = 0;
    await decryptResult(pages[2]!, { network: dev.network, serverUrl, ...auth, fetch: counting });
    expect(asked).toBeGreaterThanOrEqual(2);
  });

  it("drops a kept key when its authorization expires, and keeps a bounded number", () => {
    let clock = 0;
    const cache = createPayloadKeyCache({ maxEntries: 2, now: () => clock });
    const key = (byte: number) => new Uint8Array(32).fill(byte);
    cache.set("a", key(1), 100);
    cache.set("b", key(2), 1000);
    expect(cache.get("a")).toEqual(key(1));
    clock = 100;
    expect(cache.get("a")).toBeUndefined();
    cache.set("c", key(3), 1000);
    cache.set("d", key(4), 1000);
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("d")).toEqual(key(4));
  });

  it("gives up on a silent node after the timeout", async () => {
    const attempt = decrypt(withNodes({ 1: closedUrl, 2: `${liarUrl}/hang` }), payload, auth, 300);
    await expect(attempt).rejects.toThrow(/node 2: no answer within 300 ms/);
  });

  it("cannot decrypt with another wallet's authorization: the nodes refuse", async () => {
    const attempt = decrypt(dev.network, payload, await signAuthorization(bob));
    await expect(attempt).rejects.toThrow(/got 0 valid decryption share\(s\)/);
    await expect(attempt).rejects.toThrow(/refused with HTTP 403: the conditions allow another address than the signer/);
    // Rewriting the conditions to Bob makes the nodes sign another identity, under which the key does not open.
    const stolen = { ...payload, accessControlConditions: [{ ...payload.accessControlConditions[0]!, returnValueTest: { comparator: "=", value: bob.address.toLowerCase() } }] };
    await expect(decrypt(dev.network, stolen, await signAuthorization(bob))).rejects.toThrow(/does not decrypt/);
  });

  it("rejects a tampered ciphertext, payload or hash", async () => {
    const key = Buffer.from(payload.encryptedSymmetricKey, "base64");
    key[60] = (key[60] as number) ^ 1;
    await expect(decrypt(dev.network, { ...payload, encryptedSymmetricKey: key.toString("base64") })).rejects.toThrow(
      /encryptedSymmetricKey does not decrypt/,
    );
    const sealed = Buffer.from(payload.encryptedString, "base64");
    sealed[20] = (sealed[20] as number) ^ 1;
    await expect(decrypt(dev.network, { ...payload, encryptedString: sealed.toString("base64") })).rejects.toThrow(
      /failed authentication/,
    );
    await expect(decrypt(dev.network, { ...payload, dataToEncryptHash: "00".repeat(32) })).rejects.toThrow(DecryptionError);
  });

  it("accepts conditions whose empty fields were left out (proto3 JSON)", async () => {
    const [c] = payload.accessControlConditions;
    const sparse = { ...payload, accessControlConditions: [{ chain: c!.chain, parameters: c!.parameters, returnValueTest: c!.returnValueTest }] };
    expect(await decrypt(dev.network, sparse as unknown as EncryptedPayload)).toEqual(plaintext);
  });

  it("explains that data of another backend (the retired Lit one) needs that network's SDK", async () => {
    await expect(decrypt(dev.network, { ...payload, backend: "lit" } as unknown as EncryptedPayload)).rejects.toThrow(/"lit" backend/);
  });
});
