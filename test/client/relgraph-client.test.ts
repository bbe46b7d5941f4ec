import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { Wallet } from "ethers";
import { SiweMessage } from "siwe";
import type { RelgraphClient as ExportedClient } from "relgraph/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createRelgraphClient,
  createSiweMessage,
  RelgraphClientError,
  STATEMENTS,
  toChecksumAddress,
  type RelationshipGraphEntry,
} from "../../src/client/index.js";
import { PROFILE_STATEMENT, RELATIONSHIP_GRAPH_STATEMENT } from "../../src/auth/siwe.js";
import { DEMO_DATASET } from "../../src/synthetic/demo.js";
import { demoWallet } from "../../src/synthetic/demo-wallet.js";
import { generateRecords } from "../../src/synthetic/generate.js";
import { demoExpectation } from "../support/demo-expectations.js";
import { startRelgraph, TEST_API_KEY, type RunningRelgraph } from "../support/relgraph-server.js";

/**
 * Relgraph/client against a real server holding the demo dataset, over REST, Connect and
 * gRPC-Web: every operation answers the same data whatever the protocol, the encrypted two decrypt
 * through the development key nodes to what the dataset holds, errors carry the contract's codes,
 * and its SIWE messages are what the siwe package (the server's parser) reads.
 */

const PROTOCOLS = ["rest", "connect", "grpc-web"] as const;
const alice = new Wallet(demoWallet(1).privateKey);
const bob = new Wallet(demoWallet(2).privateKey);
let server: RunningRelgraph;

beforeAll(async () => {
  server = await startRelgraph({ records: generateRecords(DEMO_DATASET) });
});
afterAll(() => server?.close());

const clientFor = (protocol: (typeof PROTOCOLS)[number], apiKey = TEST_API_KEY) =>
  createRelgraphClient({ baseUrl: server.url, apiKey, protocol });

describe.each(PROTOCOLS)("relgraph/client over %s", (protocol) => {
  it("decrypts the signer's Profile to what the dataset holds", async () => {
    const client = clientFor(protocol);
    const auth = await client.authorize("profile", alice);
    expect(await client.decryptedProfile({ address: alice.address }, auth)).toEqual(demoExpectation("u1").profile);
  });

  it("pages through the Relationship graph with one authorization and decrypts every page", async () => {
    const client = clientFor(protocol);
    const auth = await client.authorize("relationshipGraph", alice);
    const entries: RelationshipGraphEntry[] = [];
    let cursor = "";
    do {
      const page = await client.decryptedRelationshipGraph({ socialUsername: "alice" }, auth, { limit: 17, cursor });
      entries.push(...page.data);
      cursor = page.cursor;
    } while (cursor !== "");
    const expected = demoExpectation("u1").graph;
    expect(entries.map((e) => [e.relation.relationId, e.relation.name, e.address, e.description, e.game?.name ?? ""])).toEqual(
      expected.map((e) => [e.relationId, e.name, e.address, e.description, e.game]),
    );
  });

  it("answers the three plain operations exactly as REST does", async () => {
    const client = clientFor(protocol);
    const rest = clientFor("rest");
    const users = { address: [alice.address], socialUsername: ["bob"] };
    expect(await client.mutualFriend(users, { limit: 5 })).toEqual(await rest.mutualFriend(users, { limit: 5 }));
    const recommendations = await client.multiDimensionalRecommendation({ gameId: "76561198000000001" }, { limit: 5 });
    expect(recommendations).toEqual(await rest.multiDimensionalRecommendation({ gameId: "76561198000000001" }, { limit: 5 }));
    expect(recommendations.data).toHaveLength(5);
    for (const user of recommendations.data) expect(user.description).toMatch(/\w/);
    const next = await client.multiDimensionalRecommendation({ gameId: "76561198000000001" }, { limit: 5, cursor: recommendations.cursor });
    expect(next.data.map((u) => u.relationId.relationId)).not.toContain(recommendations.data[0]!.relationId.relationId);
    const contracts = await client.mutualContractInteraction([alice.address, bob.address]);
    expect(contracts).toEqual(await rest.mutualContractInteraction([alice.address, bob.address]));
  });

  it("throws the contract's codes", async () => {
    const refused = clientFor(protocol, "wrong-key");
    await expect(refused.mutualContractInteraction([alice.address, bob.address])).rejects.toMatchObject({
      name: "RelgraphClientError",
      code: "10002",
    });
    const client = clientFor(protocol);
    await expect(client.multiDimensionalRecommendation({ socialUsername: "nobody-here" }, { limit: 5 })).rejects.toMatchObject({ code: "11602" });
    // A Profile authorization does not open the Relationship graph.
    const profileAuth = await client.authorize("profile", alice);
    const error = await client.relationshipGraph({ address: alice.address }, profileAuth, { limit: 5 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RelgraphClientError);
    expect((error as RelgraphClientError).code).toBe("10101");
    // Bob cannot read Alice's profile with his own signature.
    const bobAuth = await client.authorize("profile", bob);
    await expect(client.profile({ address: alice.address }, bobAuth)).rejects.toMatchObject({ code: "10102" });
  });
});

describe("the client's SIWE messages", () => {
  it("carry the statement the server requires, in the form the siwe package parses", () => {
    expect(STATEMENTS).toEqual({ profile: PROFILE_STATEMENT, relationshipGraph: RELATIONSHIP_GRAPH_STATEMENT });
    const issuedAt = new Date("2026-01-02T03:04:05.000Z");
    const text = createSiweMessage({
      operation: "relationshipGraph",
      address: alice.address.toLowerCase(),
      domain: "dapp.example:8443",
      uri: "https://dapp.example:8443",
      issuedAt,
      validForSeconds: 600,
      nonce: "abcdefgh1234",
    });
    const parsed = new SiweMessage(text);
    expect(parsed).toMatchObject({
      domain: "dapp.example:8443",
      address: alice.address,
      statement: "Access to Relationship Graph.",
      uri: "https://dapp.example:8443",
      version: "1",
      chainId: 1,
      nonce: "abcdefgh1234",
      issuedAt: "2026-01-02T03:04:05.000Z",
      expirationTime: "2026-01-02T03:14:05.000Z",
    });
    expect(parsed.prepareMessage()).toBe(text);
  });

  it("checksum addresses as EIP-55 does", () => {
    for (const wallet of [alice, bob, Wallet.createRandom()]) expect(toChecksumAddress(wallet.address.toLowerCase())).toBe(wallet.address);
    expect(() => toChecksumAddress("0x1234")).toThrow(/not an Ethereum address/);
  });
});

describe("the package export and the example that uses it", () => {
  it("runs src/examples/dapp-flow.ts (compiled) against the server over Connect", async () => {
    // Asynchronously: the server answering it runs in this process.
    const { stdout: out } = await promisify(execFile)(process.execPath, [
      `${import.meta.dirname}/../../dist/src/examples/dapp-flow.js`,
      server.url,
      TEST_API_KEY,
      "connect",
    ]);
    expect(out).toContain("relationId: 'u1'");
    expect(out).toMatch(/relationship graph page 1: 25 entries/);
    expect(out).toMatch(/recommended: .+: .*mutual/);
  });

  it("serves relgraph/client from dist to Node, as package.json's exports say", () => {
    const out = execFileSync(
      process.execPath,
      ["--input-type=module", "-e", 'const c = await import("relgraph/client"); console.log(typeof c.createRelgraphClient, typeof c.decryptResult)'],
      { cwd: `${import.meta.dirname}/../..`, encoding: "utf8" },
    );
    expect(out.trim()).toBe("function function");
    // And its declarations (dist/src/client/index.d.ts) type the same client; `npm run typecheck` checks this line.
    const typed: ExportedClient = clientFor("rest");
    expect(typed.protocol).toBe("rest");
  });
});
