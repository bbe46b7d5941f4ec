import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IngestRecord } from "../../src/ingest/format.js";
import { generateRecords } from "../../src/synthetic/generate.js";
import { createStore } from "../../src/store/index.js";
import { EXPECTED, addr, fixtureRecords, userInfoJson } from "../support/fixtures.js";
import { startRedisCluster, startRedisServer, type TestRedisCluster, type TestRedisServer } from "../support/redis-servers.js";
import { startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { expectAscending, expectRecommendationOrder, relationIds, walkRestChain } from "./chains.js";
import { restGet, type Params } from "./http.js";
import { isModelable, referenceGraph, referenceMutualFriends, referenceRecommendations } from "./reference.js";

/*
 * The same REST answers from a server on a standalone redis-server and on a three-master Redis
 * Cluster as from the memory store: the hand-written fixture, and a generated graph whose lists
 * page for a while. With a shared CURSOR_KEY even the cursors are byte-identical, and each server
 * opens the other's: every chain goes on alternately on both.
 */

const MUTUAL_FRIEND = "/api/v1/mutualFriend";
const RECOMMENDATION = "/api/v1/multi-dimensional-recommendation";
const env = { CURSOR_KEY: "7265646973206261636b656420746573742072656c677261706820637572736f" };

// The generated demo users' usernames and game ids (alice, 76561198000000001, …) are the fixture's
// too, and an identity names one user; the generated graph does without them here.
const generated: IngestRecord[] = [...generateRecords({ users: 600, seed: "relgraph-redis-backed", meanDegree: 30 })].map((r) =>
  r.type === "user" ? { ...r, social: null, game: null } : r,
);
const records: IngestRecord[] = [...fixtureRecords(), ...generated];
const graph = referenceGraph(generated);

/** The generated pair of friends with the most mutual friends. */
const busiestPair = (() => {
  let best: string[] = [];
  let most = -1;
  for (const [u, friends] of graph.friends) {
    for (const v of friends) {
      const n = u < v ? referenceMutualFriends(graph, [u, v]).length : -1;
      if (n > most) [best, most] = [[u, v], n];
    }
  }
  return best;
})();

/** The first address of a generated user. */
const addressOf = (relationId: string) =>
  generated.find((r): r is Extract<IngestRecord, { type: "user" }> => r.type === "user" && r.relationId === relationId)!.addresses[0]!;

/** Requests whose answers must match the memory store's byte for byte, first pages and beyond. */
const QUERIES: [string, Params][] = [
  [MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}`, limit: 2 }],
  [MUTUAL_FRIEND, { address: busiestPair.map(addressOf).join(","), limit: 5 }],
  [RECOMMENDATION, { address: addr("alice"), limit: 3 }],
  [RECOMMENDATION, { address: addressOf("u1"), limit: 25 }],
  [RECOMMENDATION, { address: addressOf("u2"), limit: 100 }],
  ["/api/v1/mutualContractInteraction", { address: `${addr("bob")},${addr("carol")},${addr("stranger")}` }],
];

let memory: RunningRelgraph;

beforeAll(async () => {
  memory = await startRelgraph({ records, env });
});
afterAll(async () => {
  await memory?.close();
});

type Backend = { stop(): Promise<void>; config: { redisUrl: string | null; redisClusterNodes: string[]; fastPaths?: boolean } };

const standalone = async (fastPaths: boolean): Promise<Backend> => {
  const redis: TestRedisServer = await startRedisServer();
  return { stop: () => redis.stop(), config: { redisUrl: redis.url, redisClusterNodes: [], fastPaths } };
};

// A standalone server is read through node-redis (FAST_PATHS=off) or the engine's own RESP sockets.
const engines: { name: string; start: () => Promise<Backend> }[] = [
  { name: "standalone redis-server (FAST_PATHS=off)", start: () => standalone(false) },
  { name: "standalone redis-server (FAST_PATHS=on)", start: () => standalone(true) },
  {
    name: "3-master Redis Cluster",
    start: async () => {
      const cluster: TestRedisCluster = await startRedisCluster();
      return { stop: () => cluster.stop(), config: { redisUrl: null, redisClusterNodes: cluster.nodes } };
    },
  },
];

describe.each(engines)("REST over a $name store", ({ start }) => {
  let backend: Awaited<ReturnType<typeof start>>;
  let server: RunningRelgraph;

  beforeAll(async () => {
    backend = await start();
    const store = await createStore(backend.config);
    server = await startRelgraph({ store, records, env });
  });
  afterAll(async () => {
    await server?.close();
    await backend?.stop();
  });

  it("is ready", async () => {
    expect((await restGet(server.url, "/readyz", {}, { apiKey: null })).status).toBe(200);
  });

  it("pages the fixture's mutual friends and recommendations as worked out by hand", async () => {
    for (const limit of [2, 3, 100]) {
      const friends = await walkRestChain(server.url, MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}` }, limit);
      expect(friends).toEqual(EXPECTED.mutualFriends.aliceBob.map((n) => userInfoJson(n)));
      const recommended = await walkRestChain(server.url, RECOMMENDATION, { socialUsername: "alice" }, limit);
      expect(recommended).toEqual(EXPECTED.aliceRecommendations.map(([n, d]) => userInfoJson(n, d)));
    }
  });

  it("pages the generated graph's long lists as the reference model says", async () => {
    const expected = referenceMutualFriends(graph, busiestPair);
    expect(expected.length).toBeGreaterThan(10);
    for (const limit of [3, 100]) {
      const served = await walkRestChain(server.url, MUTUAL_FRIEND, { address: busiestPair.map(addressOf).join(",") }, limit);
      expectAscending(served);
      expect(relationIds(served)).toEqual(expected);
    }
    // The first users whose recommendations the reference can model (every signal within the member budget).
    const users = [...graph.friends.keys()].filter((user) => isModelable(graph, user) && referenceRecommendations(graph, user).length > 10).slice(0, 2);
    expect(users).toHaveLength(2);
    for (const user of users) {
      const served = await walkRestChain(server.url, RECOMMENDATION, { address: addressOf(user) }, 11);
      expectRecommendationOrder(served);
      expect(relationIds(served)).toEqual(referenceRecommendations(graph, user).map((r) => r.relationId));
    }
  });

  it("answers byte for byte what the memory store answers, on every page", async () => {
    for (const [path, params] of QUERIES) {
      let cursor: string | undefined = "";
      let pages = 0;
      while (cursor !== undefined && pages < 200) {
        const query: Params = params.limit === undefined ? params : { ...params, cursor };
        const [fromRedis, fromMemory] = await Promise.all([restGet(server.url, path, query), restGet(memory.url, path, query)]);
        expect(fromRedis.status, fromRedis.text).toBe(200);
        expect(fromRedis.text, `${path} page ${pages}`).toBe(fromMemory.text);
        // The next page is asked with the cursors of each server in turn: the other one must open it.
        const next = pages % 2 === 0 ? fromRedis.body.cursor : fromMemory.body.cursor;
        cursor = params.limit === undefined || next === "" ? undefined : next;
        pages++;
      }
    }
  });
});
