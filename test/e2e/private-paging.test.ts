import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRelgraphClient, type RelationshipGraphEntry } from "../../src/client/index.js";
import { loadConfig } from "../../src/config/config.js";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { createRelgraph, type Relgraph } from "../../src/relgraph.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";

/**
 * Issue 35: one user reads their profile and a 1,000-friend relationship graph page by page through
 * relgraph/client, over real HTTP, with the key nodes on real sockets (the development network mounted
 * in the server, as `relgraph serve` runs it) under the default key-node rate limit: not one 10110,
 * and one threshold decryption per authorization, whatever the number of pages.
 */

const API_KEY = "paging-key";
const FRIENDS = 1000;
const PAGE = 20;
const owner = Wallet.createRandom();

let relgraph: Relgraph;
let baseUrl: string;

beforeAll(async () => {
  const store = createMemoryStore();
  await ingestRecords(store, [
    { type: "user", relationId: "owner", name: "Owner", avatar: "", addresses: [owner.address] },
    ...Array.from({ length: FRIENDS }, (_, i) => ({
      type: "user",
      relationId: `f${String(i).padStart(4, "0")}`,
      name: `Friend ${i}`,
      avatar: "",
      addresses: [`0x${(i + 1).toString(16).padStart(40, "0")}`],
    })),
    ...Array.from({ length: FRIENDS }, (_, i) => ({ type: "friend", a: "owner", b: `f${String(i).padStart(4, "0")}` })),
    { type: "release", relationId: "owner", peers: "*" },
  ]);
  const config = loadConfig({ API_KEYS: API_KEY });
  expect(config.keyNodeRatePerSecond).toBe(10);
  relgraph = await createRelgraph(config, store, { logLevel: false });
  baseUrl = await relgraph.server.listen({ port: 0, host: "127.0.0.1" });
}, 60_000);

afterAll(async () => {
  await relgraph?.close();
});

describe("a dApp paging through a 1,000-friend graph", () => {
  it("reads the profile and every page under the default key-node rate limit, asking the key nodes once per authorization", async () => {
    const shareRequests: number[] = [];
    const counting: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (String(input instanceof Request ? input.url : input).includes("/v1/decryption-share")) shareRequests.push(response.status);
      return response;
    };
    const client = createRelgraphClient({ baseUrl, apiKey: API_KEY, fetch: counting });
    const signer = { address: owner.address, signMessage: (message: string) => owner.signMessage(message) };
    const me = { address: owner.address };

    const profile = await client.decryptedProfile(me, await client.authorize("profile", signer));
    expect(profile).toMatchObject({ relationId: "owner", name: "Owner" });

    const graphAuth = await client.authorize("relationshipGraph", signer);
    const entries: RelationshipGraphEntry[] = [];
    let cursor = "";
    let pages = 0;
    do {
      const page = await client.decryptedRelationshipGraph(me, graphAuth, { limit: PAGE, cursor });
      entries.push(...page.data);
      cursor = page.cursor;
      pages++;
    } while (cursor !== "");

    expect(pages).toBe(FRIENDS / PAGE);
    expect(entries).toHaveLength(FRIENDS);
    expect(new Set(entries.map((entry) => entry.relation.relationId)).size).toBe(FRIENDS);
    // Two authorizations, two threshold decryptions of 2-of-3: at most three nodes asked each, all answered.
    expect(shareRequests.length).toBeLessThanOrEqual(6);
    expect(shareRequests.every((status) => status === 200)).toBe(true);
  }, 120_000);
});
