import { Wallet } from "ethers";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSiweVerifier } from "../../src/auth/siwe.js";
import { createDevKeyNetwork } from "../../src/crypto/dev-network.js";
import { onlySignerConditions } from "../../src/crypto/identity.js";
import { keyNodeRoutes } from "../../src/crypto/key-node.js";
import { startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { signAuthorization, startKeyNodes, type KeyNodeProcesses } from "../support/keynodes.js";

/*
 * Every key node, in-process (the development network) or standalone
 * (`relgraph keynode`), limits decryption-share requests per client address and caps their size.
 * Each request here is refused cheaply (its body is no valid request), so only the limit decides.
 */

interface Answer {
  status: number;
  retryAfter: string | null;
  body: Record<string, unknown>;
}

async function ask(url: string, body = "{}"): Promise<Answer> {
  const response = await fetch(`${url}/v1/decryption-share`, { method: "POST", headers: { "content-type": "application/json" }, body });
  return { status: response.status, retryAfter: response.headers.get("retry-after"), body: (await response.json()) as Record<string, unknown> };
}

/** Sends `count` requests one after another and returns their answers. */
async function burst(url: string, count: number): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let i = 0; i < count; i++) answers.push(await ask(url));
  return answers;
}

function expectLimitedAfter(answers: Answer[], allowed: number): void {
  expect(answers.slice(0, allowed).map((a) => a.status)).toEqual(Array(allowed).fill(400));
  const refused = answers[allowed]!;
  expect(refused.status).toBe(429);
  expect(refused.body).toMatchObject({ error: "rate_limited", code: "10110" });
  expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
}

describe("key node limits", () => {
  let app: FastifyInstance;
  let base: string;
  beforeAll(async () => {
    const dev = createDevKeyNetwork();
    app = Fastify();
    const verifier = createSiweVerifier({ domains: [], maxAgeSeconds: 86400 });
    await app.register(keyNodeRoutes, { prefix: "/n1", share: dev.nodes[0]!.share, verifier, rateLimit: { perSecond: 1, burst: 3 } });
    base = await app.listen({ port: 0, host: "127.0.0.1" });
  });
  afterAll(() => app.close());

  it("refuses a client over its rate with 429, code 10110 and Retry-After", async () => {
    expectLimitedAfter(await burst(`${base}/n1`, 4), 3);
  });

  it("refuses a body over 64 KiB with 413", async () => {
    const answer = await ask(`${base}/n1`, JSON.stringify({ padding: "x".repeat(70 * 1024) }));
    expect([413, 429]).toContain(answer.status);
  });
});

describe("the development network inside relgraph", () => {
  let server: RunningRelgraph;
  beforeAll(async () => {
    server = await startRelgraph({ env: { KEY_NODE_RATE_LIMIT_PER_SECOND: "1", KEY_NODE_RATE_LIMIT_BURST: "2" } });
  });
  afterAll(() => server?.close());

  it("is rate-limited per client address", async () => {
    expectLimitedAfter(await burst(`${server.url}/dev-key-nodes/2`, 3), 2);
  });
});

describe("a long SIWE message", () => {
  let server: RunningRelgraph;
  beforeAll(async () => {
    server = await startRelgraph();
  });
  afterAll(() => server?.close());

  it("is refused (10101) before it is parsed, even correctly signed: a key node's parse of one cost many requests' worth", async () => {
    const wallet = Wallet.createRandom();
    const request = async (resources: number) => {
      const { message } = await signAuthorization(wallet);
      // Resources are the one part of a message a client may make as long as it likes.
      const long = `${message}\nResources:${"\n- https://relgraph.test/r".repeat(resources)}`;
      const body = {
        accessControlConditions: onlySignerConditions(wallet.address),
        dataToEncryptHash: "ab".repeat(32),
        authSig: { sig: await wallet.signMessage(long), signedMessage: long, address: wallet.address },
      };
      return { length: long.length, answer: await ask(`${server.url}/dev-key-nodes/1`, JSON.stringify(body)) };
    };
    // Some resources are fine: a share.
    const short = await request(40);
    expect(short.length).toBeLessThan(4 * 1024);
    expect(short.answer.status).toBe(200);
    const long = await request(300);
    expect(long.length).toBeGreaterThan(4 * 1024);
    expect(long.answer).toMatchObject({ status: 401, body: { code: "10101", message: "message is longer than 4096 characters" } });
  });
});

describe("a standalone key node (relgraph keynode)", () => {
  let nodes: KeyNodeProcesses;
  beforeAll(async () => {
    nodes = await startKeyNodes({ threshold: 1, nodes: 1, env: { KEY_NODE_RATE_LIMIT_PER_SECOND: "1", KEY_NODE_RATE_LIMIT_BURST: "2" } });
  });
  afterAll(() => nodes?.close());

  it("is rate-limited per client address", async () => {
    expectLimitedAfter(await burst(nodes.network.nodes[0]!.url, 3), 2);
  });

  it("refuses a body over 64 KiB with 413", async () => {
    const big = await fetch(`${nodes.network.nodes[0]!.url}/v1/decryption-share`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ padding: "x".repeat(70 * 1024) }),
    });
    expect([413, 429]).toContain(big.status);
  });
});
