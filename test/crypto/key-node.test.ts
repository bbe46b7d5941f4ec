import Fastify, { type FastifyInstance } from "fastify";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSiweVerifier } from "../../src/auth/siwe.js";
import { decodeG1, hashIdentity } from "../../src/crypto/bls.js";
import { decodeDecryptionShare, verifyDecryptionShare } from "../../src/crypto/decryption-share.js";
import { createDevKeyNetwork, type DevKeyNetwork } from "../../src/crypto/dev-network.js";
import { encryptionIdentity, onlySignerConditions } from "../../src/crypto/identity.js";
import { keyNodeRoutes } from "../../src/crypto/key-node.js";
import { signAuthorization } from "../support/keynodes.js";

const verifier = createSiweVerifier({ domains: [], maxAgeSeconds: 86400 });
const alice = Wallet.createRandom();
const bob = Wallet.createRandom();
const hash = "ab".repeat(32);
/** These tests send many requests from one address; the limit itself is tested in key-node-limits.test.ts. */
const UNLIMITED = { perSecond: 1_000_000, burst: 1_000_000 };

let dev: DevKeyNetwork;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  dev = createDevKeyNetwork();
  app = Fastify();
  for (const { prefix, share } of dev.nodes) await app.register(keyNodeRoutes, { prefix, share, verifier, rateLimit: UNLIMITED });
  base = await app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(() => app.close());

async function ask(body: unknown, node = 1, raw?: string) {
  const response = await fetch(`${base}/dev-key-nodes/${node}/v1/decryption-share`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: raw ?? JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function request(wallet: Wallet | ReturnType<typeof Wallet.createRandom>, conditionsFor: string, statement?: string) {
  const { sig, message } = await signAuthorization(wallet, statement);
  return {
    accessControlConditions: onlySignerConditions(conditionsFor),
    dataToEncryptHash: hash,
    authSig: { sig, signedMessage: message, address: wallet.address },
  };
}

describe("key node", () => {
  it("serves a 2-of-3 dev network with relative URLs, one node per prefix", () => {
    expect(dev.network.threshold).toBe(2);
    expect(dev.network.nodes.map((n) => n.url)).toEqual(["/dev-key-nodes/1", "/dev-key-nodes/2", "/dev-key-nodes/3"]);
  });

  it("gives the signer a share for the identity it rebuilt itself, under either relgraph statement", async () => {
    const identity = hashIdentity(encryptionIdentity(onlySignerConditions(alice.address), hash));
    for (const [node, statement] of [
      [1, "Access to User Profile."],
      [3, "Access to Relationship Graph."],
    ] as const) {
      const answer = await ask({ ...(await request(alice, alice.address, statement)), identity: "forged" }, node);
      expect(answer.status).toBe(200);
      expect(answer.body.index).toBe(node);
      const share = decodeDecryptionShare(answer.body.signatureShare);
      expect(share.index).toBe(node);
      const publicShare = decodeG1(dev.network.nodes[node - 1]!.publicShare, "pk");
      expect(verifyDecryptionShare(share, publicShare, identity)).toBe(true);
    }
  });

  it("accepts conditions in another key order, with the address in another case", async () => {
    const body = await request(alice, alice.address.toUpperCase().replace("0X", "0x"));
    const [c] = body.accessControlConditions;
    const reordered = [{ returnValueTest: c!.returnValueTest, parameters: c!.parameters, method: "", chain: "ethereum", standardContractType: "", contractAddress: "" }];
    const answer = await ask({ ...body, accessControlConditions: reordered });
    expect(answer.status).toBe(200);
  });

  it("refuses (403) when the conditions name another address than the signer", async () => {
    const answer = await ask(await request(bob, alice.address));
    expect(answer).toMatchObject({ status: 403, body: { error: "forbidden" } });
    expect(answer.body.message).toMatch(/another address/);
  });

  it("refuses (403) any condition shape other than exactly one only-the-signer condition", async () => {
    const body = await request(alice, alice.address);
    const [c] = body.accessControlConditions;
    const shapes = [
      [c, c],
      [],
      [{ ...c, method: "eth_getBalance" }],
      [{ ...c, chain: "polygon" }],
      [{ ...c, parameters: [":userAddress", "latest"] }],
      [{ ...c, returnValueTest: { comparator: ">=", value: alice.address } }],
      [{ ...c, contractAddress: "0x" + "11".repeat(20) }],
      [{ ...c, returnValueTest: { comparator: "=", value: "true" } }],
    ];
    for (const accessControlConditions of shapes) {
      const answer = await ask({ ...body, accessControlConditions });
      expect(answer.status, JSON.stringify(accessControlConditions)).toBe(403);
    }
  });

  it("refuses (401) a bad signature, an expired message and a mismatched authSig.address, with relgraph's codes", async () => {
    const body = await request(alice, alice.address);
    const badSig = await ask({ ...body, authSig: { ...body.authSig, sig: (await request(bob, bob.address)).authSig.sig } });
    expect(badSig).toMatchObject({ status: 401, body: { error: "unauthorized", code: "10101" } });

    const { SiweMessage } = await import("siwe");
    const expired = new SiweMessage({
      domain: "relgraph.test",
      address: alice.address,
      statement: "Access to User Profile.",
      uri: "https://relgraph.test",
      version: "1",
      chainId: 1,
      nonce: "abcdefgh12",
      issuedAt: new Date(Date.now() - 7200_000).toISOString(),
      expirationTime: new Date(Date.now() - 3600_000).toISOString(),
    }).prepareMessage();
    const old = await ask({ ...body, authSig: { sig: await alice.signMessage(expired), signedMessage: expired } });
    expect(old).toMatchObject({ status: 401, body: { code: "10100" } });

    const mismatch = await ask({ ...body, authSig: { ...body.authSig, address: bob.address } });
    expect(mismatch.status).toBe(401);
  });

  it("refuses (401, 10101) a sign-in with another statement, or another domain when SIWE_DOMAINS is set", async () => {
    const otherSite = await ask(await request(alice, alice.address, "Sign in to Some Other Site."));
    expect(otherSite).toMatchObject({ status: 401, body: { error: "unauthorized", code: "10101" } });
    expect(String(otherSite.body.message)).toMatch(/statement must be "Access to User Profile." or "Access to Relationship Graph."/);

    const strict = Fastify();
    const domainVerifier = createSiweVerifier({ domains: ["app.relgraph.example"], maxAgeSeconds: 86400 });
    await strict.register(keyNodeRoutes, { share: dev.nodes[0]!.share, verifier: domainVerifier });
    try {
      const url = await strict.listen({ port: 0, host: "127.0.0.1" });
      // signAuthorization signs for the domain relgraph.test.
      const response = await fetch(`${url}/v1/decryption-share`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(await request(alice, alice.address)),
      });
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ code: "10101" });
    } finally {
      await strict.close();
    }
  });

  it("refuses (400) malformed requests with a JSON error", async () => {
    const body = await request(alice, alice.address);
    const cases: [unknown, RegExp][] = [
      [null, /object/],
      [{ ...body, dataToEncryptHash: "AB".repeat(32) }, /dataToEncryptHash/],
      [{ ...body, dataToEncryptHash: undefined }, /dataToEncryptHash/],
      [{ ...body, authSig: undefined }, /authSig/],
      [{ ...body, authSig: { sig: body.authSig.sig } }, /signedMessage/],
      [{ ...body, accessControlConditions: "x" }, /accessControlConditions/],
      [{ ...body, accessControlConditions: [{ ...body.accessControlConditions[0], extra: 1 }] }, /accessControlConditions/],
    ];
    for (const [payload, message] of cases) {
      const answer = await ask(payload);
      expect(answer.status, JSON.stringify(payload)).toBe(400);
      expect(answer.body.message).toMatch(message);
    }
    const notJson = await ask(undefined, 1, "{nope");
    expect(notJson).toMatchObject({ status: 400, body: { error: "bad_request" } });
    const huge = await ask(undefined, 1, JSON.stringify({ pad: "x".repeat(100_000) }));
    expect(huge.status).toBe(413);
  });

  it("refuses to mount with a share that does not match its network", async () => {
    const other = Fastify();
    const share = { ...dev.nodes[0]!.share, secretShare: dev.nodes[1]!.share.secretShare };
    await expect(other.register(keyNodeRoutes, { share, verifier }).ready()).rejects.toThrow(/does not match/);
    await other.close();
  });
});
