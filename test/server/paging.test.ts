import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_RECOMMENDATION_LIMITS } from "../../src/domain/recommendation-limits.js";
import type { IngestRecord } from "../../src/ingest/format.js";
import { generateRecords } from "../../src/synthetic/generate.js";
import { EXPECTED, addr, fixtureRecords, userInfoJson } from "../support/fixtures.js";
import { startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { expectAscending, expectRecommendationOrder, relationIds, walkRestChain } from "./chains.js";
import { restGet } from "./http.js";
import { type ReferenceGraph, isModelable, parseDescription, referenceGraph, referenceMutualFriends, referenceRecommendations } from "./reference.js";

const MUTUAL_FRIEND = "/api/v1/mutualFriend";
const RECOMMENDATION = "/api/v1/multi-dimensional-recommendation";

describe("paging the hand-written fixture", () => {
  let server: RunningRelgraph;
  beforeAll(async () => {
    server = await startRelgraph({ records: fixtureRecords() });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("serves every mutual friend exactly once, in order, at every limit", async () => {
    const params = { address: `${addr("alice")},${addr("bob")}` };
    const whole = await walkRestChain(server.url, MUTUAL_FRIEND, params, 100);
    expect(whole).toEqual(EXPECTED.mutualFriends.aliceBob.map((n) => userInfoJson(n)));
    for (let limit = 1; limit <= 8; limit++) {
      expect(await walkRestChain(server.url, MUTUAL_FRIEND, params, limit), `limit ${limit}`).toEqual(whole);
    }
  });

  it("serves every recommendation exactly once, in order, at every limit", async () => {
    const params = { socialUsername: "alice" };
    const whole = await walkRestChain(server.url, RECOMMENDATION, params, 100);
    expect(whole).toEqual(EXPECTED.aliceRecommendations.map(([n, d]) => userInfoJson(n, d)));
    expectRecommendationOrder(whole);
    for (let limit = 1; limit <= 11; limit++) {
      expect(await walkRestChain(server.url, RECOMMENDATION, params, limit), `limit ${limit}`).toEqual(whole);
    }
  });

  it("answers a replayed cursor with the same page, and interleaved chains independently", async () => {
    const params = { address: `${addr("alice")},${addr("bob")}`, limit: 2 };
    const first = await restGet(server.url, MUTUAL_FRIEND, params);
    const recFirst = await restGet(server.url, RECOMMENDATION, { address: addr("alice"), limit: 4 });
    const second = await restGet(server.url, MUTUAL_FRIEND, { ...params, cursor: first.body.cursor });
    const again = await restGet(server.url, MUTUAL_FRIEND, { ...params, cursor: first.body.cursor });
    expect(again.text).toBe(second.text);
    expect(relationIds(second.body.data)).toEqual(["erin", "frank"]);
    const recSecond = await restGet(server.url, RECOMMENDATION, { address: addr("alice"), limit: 4, cursor: recFirst.body.cursor });
    const recAgain = await restGet(server.url, RECOMMENDATION, { address: addr("alice"), limit: 4, cursor: recFirst.body.cursor });
    expect(recAgain.text).toBe(recSecond.text);
    expect(relationIds(recSecond.body.data)).toEqual(["peggy", "rupert", "xena", "sybil"]);
  });

  it("lets a later page use another limit: the cursor holds the position, not the page size", async () => {
    const first = await restGet(server.url, MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}`, limit: 2 });
    const rest = await restGet(server.url, MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}`, limit: 100, cursor: first.body.cursor });
    expect([...relationIds(first.body.data), ...relationIds(rest.body.data)]).toEqual(EXPECTED.mutualFriends.aliceBob);
    expect(rest.body.cursor).toBe("");
  });
});

describe("paging a generated graph against a reference model", () => {
  const records: IngestRecord[] = [...generateRecords({ users: 2000, seed: "relgraph-paging" })];
  const graph: ReferenceGraph = referenceGraph(records);
  let server: RunningRelgraph;

  beforeAll(async () => {
    server = await startRelgraph({ records });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** The pair of friends with the most mutual friends: the longest list the graph offers. */
  function busiestPair(): [string, string] {
    let best: [string, string] = ["u1", "u2"];
    let most = -1;
    for (const [u, friends] of graph.friends) {
      for (const v of friends) {
        if (v <= u) continue;
        const n = referenceMutualFriends(graph, [u, v]).length;
        if (n > most) [best, most] = [[u, v], n];
      }
    }
    return best;
  }

  it("pages a long mutual-friend list (over 100) and a three-user list exactly once each, in order", async () => {
    const [u, v] = busiestPair();
    const expected = referenceMutualFriends(graph, [u, v]);
    expect(expected.length).toBeGreaterThan(100);
    for (const limit of [1, 7, 33, 100]) {
      const served = await walkRestChain(server.url, MUTUAL_FRIEND, identitiesOf([u, v]), limit);
      expectAscending(served);
      expect(relationIds(served), `limit ${limit}`).toEqual(expected);
    }
    const w = expected[0]!;
    const triple = referenceMutualFriends(graph, [u, v, w]);
    expect(triple.length).toBeGreaterThan(0);
    const single = await walkRestChain(server.url, MUTUAL_FRIEND, identitiesOf([u, v, w]), 100);
    expect(relationIds(single)).toEqual(triple);
    for (const limit of [1, 2, 5]) {
      expect(await walkRestChain(server.url, MUTUAL_FRIEND, identitiesOf([u, v, w]), limit)).toEqual(single);
    }
  });

  /** Users by descending number of friends. */
  const byDegree = () => [...graph.friends].sort((a, b) => b[1].size - a[1].size).map(([user]) => user);
  const modelable = (user: string) => isModelable(graph, user);
  /** The best-connected user the reference can model. */
  const busiestModelable = () => byDegree().find(modelable)!;

  it("pages recommendations exactly as the reference ranks them, descriptions included", async () => {
    // Users the reference can model: some by id, and the best-connected ones within the budget.
    const users = [...new Set([...["u1", "u2", "u17", "u1234"].filter(modelable), ...byDegree().filter(modelable).slice(0, 3)])];
    expect(users.length).toBeGreaterThanOrEqual(3);
    for (const user of users) {
      const expected = referenceRecommendations(graph, user);
      expect(expected.length, user).toBeGreaterThan(0);
      const identity = identitiesOf([user]);
      const whole = await walkRestChain(server.url, RECOMMENDATION, identity, 100);
      expectRecommendationOrder(whole);
      expect(relationIds(whole), user).toEqual(expected.map((r) => r.relationId));
      expect(whole.map((item) => parseDescription(item.description!))).toEqual(expected.map((r) => r.counts));
      for (const item of whole) expect(graph.friends.get(user)?.has(item.relationId.relationId) ?? false).toBe(false);
      for (const limit of [13, 64]) expect(await walkRestChain(server.url, RECOMMENDATION, identity, limit)).toEqual(whole);
    }
  });

  it("stops a recommendation chain at the documented maximum, with no repeats", async () => {
    // This user's candidates outnumber maxResults: the chain ends there instead of running on.
    const user = busiestModelable();
    const candidates = referenceRecommendations(graph, user, { ...DEFAULT_RECOMMENDATION_LIMITS, maxResults: Infinity });
    expect(candidates.length).toBeGreaterThan(DEFAULT_RECOMMENDATION_LIMITS.maxResults);
    const served = await walkRestChain(server.url, RECOMMENDATION, identitiesOf([user]), 97);
    expect(relationIds(served)).toEqual(candidates.slice(0, DEFAULT_RECOMMENDATION_LIMITS.maxResults).map((r) => r.relationId));
  });

  it("pages a hub's recommendations (over the member budget) in order, each user once, no friend", async () => {
    const hub = byDegree()[0]!;
    expect(modelable(hub)).toBe(false);
    const served = await walkRestChain(server.url, RECOMMENDATION, identitiesOf([hub]), 100);
    expect(served.length).toBeGreaterThan(0);
    expect(served.length).toBeLessThanOrEqual(DEFAULT_RECOMMENDATION_LIMITS.maxResults);
    expectRecommendationOrder(served);
    for (const id of relationIds(served)) expect(id === hub || graph.friends.get(hub)!.has(id)).toBe(false);
    expect(await walkRestChain(server.url, RECOMMENDATION, identitiesOf([hub]), 41)).toEqual(served);
  });

  /** Query parameters naming users by a mix of identities, as a client would: address, else username, else game id. */
  function identitiesOf(users: string[]): Record<string, string> {
    const address: string[] = [];
    const socialUsername: string[] = [];
    const gameId: string[] = [];
    for (const relationId of users) {
      const record = records.find((r): r is Extract<IngestRecord, { type: "user" }> => r.type === "user" && r.relationId === relationId)!;
      if (record.addresses[0]) address.push(record.addresses[0]);
      else if (record.social) socialUsername.push(record.social.username);
      else if (record.game) gameId.push(record.game.gameId);
      else throw new Error(`${relationId} has no identity`);
    }
    const params = { address: address.join(","), socialUsername: socialUsername.join(","), gameId: gameId.join(",") };
    return Object.fromEntries(Object.entries(params).filter(([, value]) => value !== ""));
  }
});
