import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import Fastify, { type FastifyInstance } from "fastify";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashIdentity } from "../../src/crypto/bls.js";
import { decryptResult } from "../../src/client/decrypt.js";
import { encodeDecryptionShare } from "../../src/crypto/decryption-share.js";
import { createThresholdEncryptor, type EncryptedPayload } from "../../src/crypto/encryptor.js";
import type { PublicKeyNetwork } from "../../src/crypto/key-network.js";
import { randomScalar } from "../../src/crypto/shamir.js";
import { RELGRAPH_CLI, signAuthorization, startKeyNodes, type KeyNodeProcesses } from "../support/keynodes.js";

/**
 * The deployment shape: `relgraph keygen`, then one `relgraph keynode` process per node, real SIWE
 * authorizations from ethers wallets, and `relgraph decrypt` as a process.
 */
const alice = Wallet.createRandom();
const bob = Wallet.createRandom();
const profile = { relationId: "u1", name: "Alice", avatar: "https://a.example/1.png", followingCount: 2, followerCount: 5 };
const plaintext = new TextEncoder().encode(JSON.stringify(profile));

let nodes: KeyNodeProcesses;
let publisher: FastifyInstance;
let serverUrl: string;
let payload: EncryptedPayload;
let auth: { sig: string; message: string };

beforeAll(async () => {
  nodes = await startKeyNodes({ threshold: 2, nodes: 3 });
  // Stands in for relgraph's GET /key-network.
  publisher = Fastify({ forceCloseConnections: true });
  publisher.get("/key-network", async () => nodes.network);
  publisher.post("/liar/v1/decryption-share", async () => ({
    index: 2,
    signatureShare: encodeDecryptionShare({ index: 2, point: hashIdentity("x").multiply(randomScalar()) }),
  }));
  serverUrl = await publisher.listen({ port: 0, host: "127.0.0.1" });
  const encryptor = createThresholdEncryptor(nodes.network, { workers: 0 });
  payload = await encryptor.encryptFor(alice.address, plaintext);
  auth = await signAuthorization(alice);
}, 30_000);
afterAll(async () => {
  await nodes?.close();
  await publisher?.close();
});

function decrypt(network: PublicKeyNetwork, authorization = auth) {
  return decryptResult(payload, { network, ...authorization });
}

/** Runs `relgraph decrypt` with `input` on stdin. */
async function relgraphDecrypt(input: string, authorization = auth) {
  const messageFile = join(nodes.dir, `message-${Math.random().toString(36).slice(2)}.txt`);
  await writeFile(messageFile, `${authorization.message}\n`);
  const child = spawn(
    process.execPath,
    [RELGRAPH_CLI, "decrypt", "--server", serverUrl, "--sig", authorization.sig, "--message-file", messageFile],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(input);
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, stdout, stderr };
}

describe("key nodes as separate processes", () => {
  it("decrypts through every node process", async () => {
    expect(await decrypt(nodes.network)).toEqual(plaintext);
  });

  it("relgraph decrypt prints the JSON from a whole response envelope or a bare EncryptedData", async () => {
    const envelope = await relgraphDecrypt(JSON.stringify({ code: "0", desc: "success", data: payload }));
    expect(envelope.stderr).toBe("");
    expect(envelope.code).toBe(0);
    expect(JSON.parse(envelope.stdout)).toEqual(profile);
    const bare = await relgraphDecrypt(JSON.stringify(payload));
    expect(JSON.parse(bare.stdout)).toEqual(profile);
  });

  it("relgraph decrypt reads several answers, one a line, and prints each", async () => {
    const encryptor = createThresholdEncryptor(nodes.network, { workers: 0 });
    const authorization = { address: alice.address, id: "c".repeat(64), validUntil: new Date(Date.now() + 3600_000) };
    const pages = [[{ n: 1 }], [{ n: 2 }], []];
    const answers = await Promise.all(pages.map((page) => encryptor.encryptForAuthorization(authorization, new TextEncoder().encode(JSON.stringify(page)))));
    await encryptor.close();
    const input = answers.map((data) => JSON.stringify({ code: "0", desc: "success", data, cursor: "" })).join("\n");
    const result = await relgraphDecrypt(`${input}\n`);
    expect(result.stderr).toBe("");
    expect(result.stdout.trim().split("\n").map((line) => JSON.parse(line) as unknown)).toEqual(pages);
  });

  it("relgraph decrypt fails with exit 1 and a clear reason for another wallet or an error response", async () => {
    const refused = await relgraphDecrypt(JSON.stringify(payload), await signAuthorization(bob));
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toMatch(/got 0 valid decryption share\(s\) from 3 key node\(s\); 2 are needed/);
    expect(refused.stderr).toMatch(/HTTP 403/);
    const error = await relgraphDecrypt(JSON.stringify({ code: "10101", desc: "sig is required", data: null }));
    expect(error.code).toBe(1);
    expect(error.stderr).toMatch(/10101 sig is required/);
  });

  it("another wallet's authorization cannot decrypt: every node refuses", async () => {
    await expect(decrypt(nodes.network, await signAuthorization(bob))).rejects.toThrow(
      /node 1: refused with HTTP 403.*node 2: refused with HTTP 403.*node 3: refused with HTTP 403/,
    );
  });

  it("rejects a tampered ciphertext", async () => {
    const key = Buffer.from(payload.encryptedSymmetricKey, "base64");
    key[100] = (key[100] as number) ^ 0x40;
    await expect(
      decryptResult({ ...payload, encryptedSymmetricKey: key.toString("base64") }, { network: nodes.network, ...auth }),
    ).rejects.toThrow(/does not decrypt/);
  });

  it("decrypts with one lying node", async () => {
    const network = {
      ...nodes.network,
      nodes: nodes.network.nodes.map((n) => (n.index === 2 ? { ...n, url: `${serverUrl}/liar` } : n)),
    };
    expect(await decrypt(network)).toEqual(plaintext);
  });

  it("decrypts with one node process down, and fails clearly with two down", async () => {
    await nodes.stop(2);
    expect(await decrypt(nodes.network)).toEqual(plaintext);
    await nodes.stop(3);
    await expect(decrypt(nodes.network)).rejects.toThrow(
      /got 1 valid decryption share\(s\) from 3 key node\(s\); 2 are needed\. node 2: .*; node 3: /,
    );
  });
});
