import type { ClientHttp2Session } from "node:http2";
import { getAddress } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROFILE_STATEMENT, RELATIONSHIP_GRAPH_STATEMENT } from "../../src/auth/siwe.js";
import { decryptResult, fetchKeyNetwork } from "../../src/client/decrypt.js";
import type { PublicKeyNetwork } from "../../src/crypto/key-network.js";
import { createStore } from "../../src/store/index.js";
import {
  CONTRACTS,
  EXPECTED,
  GAME_ID,
  UNKNOWN_ADDRESS,
  WALLETS,
  addr,
  fixtureRecords,
  graphEntryJson,
  userInfoJson,
  type UserName,
} from "../support/fixtures.js";
import { signAuthorization } from "../support/keynodes.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";
import { startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { relationIds, type ServedUser } from "./chains.js";
import { closeH2c, connectH2c, h2cGet, restGet, walkChain, type Params, type RestOptions, type RestReply } from "./http.js";

const MUTUAL_FRIEND = "/api/v1/mutualFriend";
const RECOMMENDATION = "/api/v1/multi-dimensional-recommendation";
const RECOMMENDATION_CAMEL = "/api/v1/multiDimensionalRecommendation";
const CONTRACT_INTERACTION = "/api/v1/mutualContractInteraction";
const PROFILE = "/api/v1/profile";
const RELATIONSHIP_GRAPH = "/api/v1/relationshipGraph";

/** A success envelope: exact keys in the contract's order, cursor only on paged operations. */
function expectSuccess(reply: RestReply, paged: boolean): void {
  expect(reply.status, reply.text).toBe(200);
  expect(Object.keys(reply.body)).toEqual(paged ? ["code", "desc", "data", "cursor"] : ["code", "desc", "data"]);
  expect(reply.body.code).toBe("0");
  expect(reply.body.desc).toBe("success");
  if (paged) expect(typeof reply.body.cursor).toBe("string");
}

/** An error envelope with the contract's code and HTTP status, whose desc names `param` when given. */
function expectError(reply: RestReply, code: string, status: number, param?: string): void {
  expect(reply.status, reply.text).toBe(status);
  expect(Object.keys(reply.body)).toEqual(["code", "desc", "data"]);
  expect(reply.body.code).toBe(code);
  expect(reply.body.data).toBeNull();
  expect(typeof reply.body.desc).toBe("string");
  expect(reply.body.desc).not.toBe("");
  if (param !== undefined) expect(reply.body.desc).toContain(param);
}

/** Key order of a UserInfo as the proto declares it; null message fields keep their place. */
function expectUserInfoKeyOrder(item: Record<string, unknown>, withDescription: boolean): void {
  expect(Object.keys(item)).toEqual(["relationId", "address", "social", "game", ...(withDescription ? ["description"] : [])]);
  expect(Object.keys(item.relationId as object)).toEqual(["relationId", "name", "avatar"]);
}

describe("REST facade on a real server (memory store, hand-written fixture)", () => {
  let server: RunningRelgraph;
  let h2: ClientHttp2Session;
  let network: PublicKeyNetwork;

  beforeAll(async () => {
    server = await startRelgraph({ records: fixtureRecords() });
    h2 = await connectH2c(server.url);
    network = await fetchKeyNetwork(server.url);
  });
  afterAll(async () => {
    if (h2) await closeH2c(h2);
    await server?.close();
  });

  const get = (path: string, params: Params = {}, options: RestOptions = {}) => restGet(server.url, path, params, options);
  const decrypt = async (data: Parameters<typeof decryptResult>[0], auth: { sig: string; message: string }) =>
    JSON.parse(new TextDecoder().decode(await decryptResult(data, { network, serverUrl: server.url, ...auth })));

  describe("Mutual friend", () => {
    it("answers the first page with UserInfo items in ascending relationId order and a cursor", async () => {
      const reply = await get(MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}`, limit: 3 });
      expectSuccess(reply, true);
      expect(reply.body.data).toEqual(["carol", "dave", "erin"].map((n) => userInfoJson(n as UserName)));
      expect(reply.body.cursor).not.toBe("");
      for (const item of reply.body.data) {
        expectUserInfoKeyOrder(item, false);
        expect(item).not.toHaveProperty("description");
      }
      // social/game are null when absent, objects when present
      expect(reply.body.data[0].game).toBeNull();
      expect(reply.body.data[1].social).toBeNull();
      expect(reply.body.data[1].game).toEqual({ gameId: GAME_ID.dave, name: "dave_g", avatar: `https://game.example/${GAME_ID.dave}.png` });
    });

    it("answers hand-computed mutual friends for two, three and disjoint users, with \"\" on the last page", async () => {
      const cases: [string[], UserName[]][] = [
        [[addr("alice"), addr("bob")], EXPECTED.mutualFriends.aliceBob],
        [[addr("alice"), addr("bob"), addr("carol")], EXPECTED.mutualFriends.aliceBobCarol],
        [[addr("carol"), addr("dave")], EXPECTED.mutualFriends.carolDave],
        [[addr("rupert"), addr("victor")], EXPECTED.mutualFriends.rupertVictor],
      ];
      for (const [addresses, expected] of cases) {
        const reply = await get(MUTUAL_FRIEND, { address: addresses.join(","), limit: 100 });
        expectSuccess(reply, true);
        expect(reply.body.data).toEqual(expected.map((n) => userInfoJson(n)));
        expect(reply.body.cursor).toBe("");
      }
    });

    it("names users by any identity: any address spelling, case-insensitive username, game id, mixed", async () => {
      const expected = await get(MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}`, limit: 100 });
      const spellings: Params[] = [
        { address: `${WALLETS.alice.address},${WALLETS.bob.address}` }, // EIP-55 checksummed
        { address: `0x${addr("alice").slice(2).toUpperCase()},0x${addr("bob").slice(2).toUpperCase()}` },
        { address: ` ${addr("alice2")} , ${addr("bob")} ` }, // items are trimmed; alice#2 is alice too
        { socialUsername: "ALICE,Bob_Social" },
        { gameId: `${GAME_ID.alice},${GAME_ID.bob}` },
        { address: addr("alice"), socialUsername: "bob_social" },
        { gameId: GAME_ID.alice, socialUsername: "bob_social", address: addr("bob") }, // bob twice is fine
      ];
      for (const identities of spellings) {
        const reply = await get(MUTUAL_FRIEND, { ...identities, limit: 100 });
        expect(reply.text, JSON.stringify(identities)).toBe(expected.text);
      }
    });

    it("ignores unknown query parameters", async () => {
      const plain = await get(MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}`, limit: 4 });
      const noisy = await get(MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}`, limit: 4, foo: "bar", LIMIT: "abc", sig: "x" });
      expect(noisy.text).toBe(plain.text);
    });
  });

  describe("Multi-dimensional recommendation", () => {
    it("answers the hand-computed ranking with descriptions at both paths, identically", async () => {
      const dashed = await get(RECOMMENDATION, { address: addr("alice"), limit: 100 });
      expectSuccess(dashed, true);
      expect(dashed.body.data).toEqual(EXPECTED.aliceRecommendations.map(([n, description]) => userInfoJson(n, description)));
      expect(dashed.body.cursor).toBe("");
      for (const item of dashed.body.data) expectUserInfoKeyOrder(item, true);
      const camel = await get(RECOMMENDATION_CAMEL, { address: addr("alice"), limit: 100 });
      expect(camel.status).toBe(200);
      expect(camel.text).toBe(dashed.text);
    });

    it("names the user by address (either of alice's), username or game id alike", async () => {
      const expected = await get(RECOMMENDATION, { address: addr("alice"), limit: 100 });
      for (const identity of [{ address: addr("alice2") }, { socialUsername: "Alice" }, { gameId: GAME_ID.alice }]) {
        const reply = await get(RECOMMENDATION_CAMEL, { ...identity, limit: 100 });
        expect(reply.text).toBe(expected.text);
      }
    });

    it("answers an empty list with an empty cursor for a user with no signal", async () => {
      const reply = await get(RECOMMENDATION, { address: addr("yuri"), limit: 10 });
      expectSuccess(reply, true);
      expect(reply.body.data).toEqual([]);
      expect(reply.body.cursor).toBe("");
    });

    it("pages the ranking in order with a cursor that ends with \"\"", async () => {
      const { pages, cursors } = await walkChain<ServedUser>(async (cursor) => {
        const reply = await get(RECOMMENDATION, { address: addr("alice"), limit: 3, cursor });
        expectSuccess(reply, true);
        return reply.body;
      });
      expect(pages.map((page) => page.length)).toEqual([3, 3, 3, 1]);
      expect(cursors.slice(0, 3).every((c) => c !== "")).toBe(true);
      expect(relationIds(pages.flat())).toEqual(EXPECTED.aliceRecommendations.map(([n]) => n));
    });
  });

  describe("Mutual contract interaction", () => {
    it("answers lowercase ascending contracts per address, without a cursor", async () => {
      const cases: [string[], string[]][] = [
        [[addr("bob"), addr("carol")], EXPECTED.mutualContracts.bobCarol],
        [[WALLETS.bob.address, addr("carol"), WALLETS.stranger.address], EXPECTED.mutualContracts.bobCarolStranger],
        [[addr("bob"), addr("stranger")], EXPECTED.mutualContracts.bobStranger],
        [[addr("alice"), addr("niaj")], EXPECTED.mutualContracts.aliceNiaj],
        [[addr("olivia"), addr("alice")], EXPECTED.mutualContracts.aliceOlivia],
        [[addr("alice"), addr("alice2")], EXPECTED.mutualContracts.aliceAlice2],
      ];
      for (const [addresses, expected] of cases) {
        const reply = await get(CONTRACT_INTERACTION, { address: addresses.join(",") });
        expectSuccess(reply, false);
        expect(reply.body.data).toEqual(expected);
      }
      expect(EXPECTED.mutualContracts.bobCarol).toEqual([CONTRACTS.C4, CONTRACTS.C6, CONTRACTS.C5]);
    });

    it("ignores limit and cursor, which it does not take", async () => {
      const reply = await get(CONTRACT_INTERACTION, { address: `${addr("bob")},${addr("carol")}`, limit: 0, cursor: "junk" });
      expectSuccess(reply, false);
      expect(reply.body.data).toEqual(EXPECTED.mutualContracts.bobCarol);
    });
  });

  describe("Profile", () => {
    it("answers EncryptedData that the signer decrypts to the profile", async () => {
      const auth = await signAuthorization(WALLETS.alice, PROFILE_STATEMENT);
      const reply = await get(PROFILE, { address: addr("alice"), ...auth });
      expectSuccess(reply, false);
      expect(reply.body.data).toMatchObject({ encryptedString: expect.any(String), encryptedSymmetricKey: expect.any(String) });
      expect(await decrypt(reply.body.data, auth)).toEqual(EXPECTED.profile.alice);
    });

    it("accepts a signature by any of the user's addresses, and any identity", async () => {
      const auth = await signAuthorization(WALLETS.alice2, PROFILE_STATEMENT);
      const reply = await get(PROFILE, { socialUsername: "alice", ...auth });
      expectSuccess(reply, false);
      expect(await decrypt(reply.body.data, auth)).toEqual(EXPECTED.profile.alice);
      const rupertAuth = await signAuthorization(WALLETS.rupert, PROFILE_STATEMENT);
      const rupert = await get(PROFILE, { address: addr("rupert"), ...rupertAuth });
      expect(await decrypt(rupert.body.data, rupertAuth)).toEqual(EXPECTED.profile.rupert);
    });

    it("refuses a missing, wrongly stated or foreign authorization", async () => {
      expectError(await get(PROFILE, { address: addr("alice") }), "10101", 401, "sig");
      const graphAuth = await signAuthorization(WALLETS.alice, RELATIONSHIP_GRAPH_STATEMENT);
      expectError(await get(PROFILE, { address: addr("alice"), ...graphAuth }), "10101", 401, "statement");
      const bobAuth = await signAuthorization(WALLETS.bob, PROFILE_STATEMENT);
      expectError(await get(PROFILE, { address: addr("alice"), ...bobAuth }), "10102", 403);
      const unknown = await get(PROFILE, { address: UNKNOWN_ADDRESS, ...bobAuth });
      expectError(unknown, "11602", 404, "address");
    });
  });

  describe("Relationship graph", () => {
    it("pages the released friends only, ascending, decrypting to graph entries", async () => {
      for (const [owner, limit] of [["alice", 2], ["bob", 3], ["carol", 5]] as [keyof typeof EXPECTED.relationshipGraph, number][]) {
        const auth = await signAuthorization(WALLETS[owner], RELATIONSHIP_GRAPH_STATEMENT);
        const entries: unknown[] = [];
        const { pages } = await walkChain(async (cursor) => {
          const reply = await get(RELATIONSHIP_GRAPH, { address: addr(owner), limit, cursor, ...auth });
          expectSuccess(reply, true);
          const page = await decrypt(reply.body.data, auth);
          entries.push(...page);
          return { data: page, cursor: reply.body.cursor };
        });
        const expected = EXPECTED.relationshipGraph[owner];
        expect(entries).toEqual(expected.map((peer) => graphEntryJson(owner, peer)));
        expect(pages.length).toBe(Math.max(1, Math.ceil(expected.length / limit)));
      }
    });

    it("validates limit before answering", async () => {
      const auth = await signAuthorization(WALLETS.alice, RELATIONSHIP_GRAPH_STATEMENT);
      expectError(await get(RELATIONSHIP_GRAPH, { address: addr("alice"), ...auth }), "11600", 400, "limit");
      expectError(await get(RELATIONSHIP_GRAPH, { address: addr("alice"), limit: 101, ...auth }), "11600", 400, "limit");
    });
  });

  describe("h2c (HTTP/2 prior knowledge) on the same port", () => {
    it("answers byte-for-byte what HTTP/1.1 answers", async () => {
      const requests: [string, Params][] = [
        [MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}`, limit: 2 }],
        [RECOMMENDATION, { gameId: GAME_ID.alice, limit: 100 }],
        [RECOMMENDATION_CAMEL, { gameId: GAME_ID.alice, limit: 4 }],
        [CONTRACT_INTERACTION, { address: `${addr("bob")},${addr("carol")}` }],
      ];
      for (const [path, params] of requests) {
        const [viaH1, viaH2] = await Promise.all([get(path, params), h2cGet(h2, path, params)]);
        expect(viaH2.status).toBe(200);
        // Cursors are deterministic for keyset pages; recommendation cursors carry a fingerprint, equal too.
        expect(viaH2.text).toBe(viaH1.text);
      }
    });

    it("pages a cursor chain and reports errors in the envelope", async () => {
      const { pages } = await walkChain<ServedUser>(async (cursor) => {
        const reply = await h2cGet(h2, MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}`, limit: 2, cursor });
        expectSuccess(reply, true);
        return reply.body;
      });
      expect(relationIds(pages.flat())).toEqual(EXPECTED.mutualFriends.aliceBob);
      expectError(await h2cGet(h2, MUTUAL_FRIEND, { address: addr("alice") }, { apiKey: null }), "10001", 401);
      expectError(await h2cGet(h2, MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}`, limit: 0 }), "11600", 400, "limit");
    });
  });

  describe("ApiKey", () => {
    const everyPath = [MUTUAL_FRIEND, RECOMMENDATION, RECOMMENDATION_CAMEL, CONTRACT_INTERACTION, PROFILE, RELATIONSHIP_GRAPH, "/api/v1/nope"];

    it("is required on every route under /api/v1/, before any parameter is looked at (10001/401)", async () => {
      for (const path of everyPath) expectError(await get(path, {}, { apiKey: null }), "10001", 401, "ApiKey");
    });

    it("must be a known key (10002/401)", async () => {
      for (const path of everyPath) {
        expectError(await get(path, { address: addr("alice"), limit: 5 }, { apiKey: "not-a-key" }), "10002", 401, "ApiKey");
      }
      expectError(await get(MUTUAL_FRIEND, {}, { apiKey: "" }), "10001", 401);
    });

    it("is not needed by /healthz and /readyz", async () => {
      const health = await get("/healthz", {}, { apiKey: null });
      expect(health.status).toBe(200);
      const ready = await get("/readyz", {}, { apiKey: null });
      expect(ready.status).toBe(200);
    });
  });

  describe("invalid parameters", () => {
    const pair = `${addr("alice")},${addr("bob")}`;

    it("limit must be a decimal integer from 1 to 100 (11600/400)", async () => {
      for (const limit of [null, "", "0", "101", "abc", "1.5", "-1", "1e2", "0x10"]) {
        expectError(await get(MUTUAL_FRIEND, { address: pair, limit }), "11600", 400, "limit");
        expectError(await get(RECOMMENDATION, { address: addr("alice"), limit }), "11600", 400, "limit");
      }
      for (const limit of ["1", "100"]) expectSuccess(await get(MUTUAL_FRIEND, { address: pair, limit }), true);
    });

    it("a list item may not be empty", async () => {
      for (const address of [`${addr("alice")},,${addr("bob")}`, `${addr("alice")},`, `,${addr("alice")},${addr("bob")}`, ` , ${addr("bob")}`]) {
        expectError(await get(MUTUAL_FRIEND, { address, limit: 5 }), "11600", 400, "address");
      }
      expectError(await get(MUTUAL_FRIEND, { socialUsername: "alice,,bob_social", limit: 5 }), "11600", 400, "socialUsername");
      expectError(await get(MUTUAL_FRIEND, { address: addr("alice"), gameId: `${GAME_ID.bob},`, limit: 5 }), "11600", 400, "gameId");
      expectError(await get(CONTRACT_INTERACTION, { address: `${addr("bob")},,${addr("carol")}` }), "11600", 400, "address");
    });

    it("a list has at most 50 items", async () => {
      const many = Array.from({ length: 51 }, (_, i) => `0x${i.toString(16).padStart(40, "0")}`).join(",");
      expectError(await get(MUTUAL_FRIEND, { address: many, limit: 5 }), "11600", 400, "address");
      expectError(await get(CONTRACT_INTERACTION, { address: many }), "11600", 400, "address");
    });

    it("an address must be 0x and 40 hex digits", async () => {
      for (const bad of ["0x1234", "hello", `${addr("alice")}0`, addr("alice").slice(2), `0x${"g".repeat(40)}`, `0X${addr("alice").slice(2)}`]) {
        expectError(await get(MUTUAL_FRIEND, { address: `${bad},${addr("bob")}`, limit: 5 }), "11600", 400, "address");
        expectError(await get(RECOMMENDATION, { address: bad, limit: 5 }), "11600", 400, "address");
        expectError(await get(CONTRACT_INTERACTION, { address: `${addr("bob")},${bad}` }), "11600", 400, "address");
      }
    });

    it("a mixed-case address must carry a valid EIP-55 checksum; one letter case is always fine", async () => {
      const checksummed = getAddress(addr("alice"));
      expect(checksummed).toMatch(/[a-f]/);
      expect(checksummed).toMatch(/[A-F]/);
      // Flip the case of one letter: still mixed case, no longer the checksum.
      const i = [...checksummed].findIndex((c, k) => k > 1 && /[a-fA-F]/.test(c));
      const c = checksummed[i]!;
      const broken = checksummed.slice(0, i) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + checksummed.slice(i + 1);
      expect(broken.slice(2)).not.toBe(broken.slice(2).toLowerCase());
      expect(broken.slice(2)).not.toBe(broken.slice(2).toUpperCase());
      expectError(await get(RECOMMENDATION, { address: broken, limit: 5 }), "11600", 400, "address");
      expectError(await get(MUTUAL_FRIEND, { address: `${broken},${addr("bob")}`, limit: 5 }), "11600", 400, "address");
      expectError(await get(CONTRACT_INTERACTION, { address: `${broken},${addr("bob")}` }), "11600", 400, "address");
      const expected = await get(RECOMMENDATION, { address: addr("alice"), limit: 5 });
      for (const good of [checksummed, addr("alice"), `0x${addr("alice").slice(2).toUpperCase()}`]) {
        expect((await get(RECOMMENDATION, { address: good, limit: 5 })).text).toBe(expected.text);
      }
    });

    it("single-user operations take exactly one identity", async () => {
      const auth = await signAuthorization(WALLETS.alice, PROFILE_STATEMENT);
      const none = [await get(RECOMMENDATION, { limit: 5 }), await get(PROFILE, { ...auth }), await get(RECOMMENDATION, { address: "", limit: 5 })];
      for (const reply of none) expectError(reply, "11600", 400, "address, socialUsername and gameId");
      const two = [
        await get(RECOMMENDATION, { address: addr("alice"), gameId: GAME_ID.alice, limit: 5 }),
        await get(RECOMMENDATION_CAMEL, { socialUsername: "alice", gameId: GAME_ID.alice, limit: 5 }),
        await get(PROFILE, { address: addr("alice"), socialUsername: "alice", ...auth }),
      ];
      for (const reply of two) expectError(reply, "11600", 400, "address, socialUsername and gameId");
    });

    it("Mutual friend needs two distinct users, Mutual contract interaction two distinct addresses", async () => {
      const oneUser: Params[] = [
        { address: addr("alice") },
        { address: `${addr("alice")},${WALLETS.alice.address}` }, // one address in two spellings
        { address: `${addr("alice")},${addr("alice2")}` }, // two addresses of one user
        { address: addr("alice"), socialUsername: "ALICE" }, // one user by two identities
        { socialUsername: "alice,Alice" },
        {},
      ];
      for (const identities of oneUser) {
        const reply = await get(MUTUAL_FRIEND, { ...identities, limit: 5 });
        expectError(reply, "11600", 400);
        expect(reply.body.desc).toMatch(/at least 2 distinct users/);
      }
      for (const address of [addr("bob"), `${addr("bob")},${WALLETS.bob.address}`, ""]) {
        expectError(await get(CONTRACT_INTERACTION, { address }), "11600", 400, "address");
      }
    });

    it("an unknown user is 11602/404, naming the identity", async () => {
      expectError(await get(RECOMMENDATION, { address: UNKNOWN_ADDRESS, limit: 5 }), "11602", 404, UNKNOWN_ADDRESS);
      expectError(await get(RECOMMENDATION, { socialUsername: "nobody", limit: 5 }), "11602", 404, "socialUsername");
      expectError(await get(RECOMMENDATION, { gameId: "42", limit: 5 }), "11602", 404, "gameId");
      expectError(await get(MUTUAL_FRIEND, { address: `${addr("alice")},${UNKNOWN_ADDRESS}`, limit: 5 }), "11602", 404, UNKNOWN_ADDRESS);
      expectError(await get(MUTUAL_FRIEND, { address: addr("alice"), socialUsername: "nobody", limit: 5 }), "11602", 404, "nobody");
      expectError(await get(CONTRACT_INTERACTION, { address: `${addr("bob")},${UNKNOWN_ADDRESS}` }), "11602", 404, UNKNOWN_ADDRESS);
    });

    it("a forged, garbled, tampered or foreign cursor is 11603/400", async () => {
      const first = await get(MUTUAL_FRIEND, { address: pair, limit: 2 });
      const cursor: string = first.body.cursor;
      const [body, tag] = cursor.split(".") as [string, string];
      const forgedBody = Buffer.from(JSON.stringify({ a: "frank" })).toString("base64url");
      const flipped = body.slice(0, -1) + (body.endsWith("A") ? "B" : "A");
      const bad = [
        "garbage",
        "%%%",
        "a.b.c",
        `${forgedBody}.${tag}`, // a state of our own under a real MAC
        `${flipped}.${tag}`,
        `${body}.`,
        `${body}.${Buffer.alloc(32).toString("base64url")}`,
        "x".repeat(5000),
      ];
      for (const c of bad) expectError(await get(MUTUAL_FRIEND, { address: pair, limit: 2, cursor: c }), "11603", 400, "cursor");
      // The real cursor works, and only for the query that issued it.
      expectSuccess(await get(MUTUAL_FRIEND, { address: pair, limit: 2, cursor }), true);
      expectSuccess(await get(MUTUAL_FRIEND, { address: `${addr("bob")},${addr("alice2")}`, limit: 2, cursor }), true);
      const threeUsers = { address: `${pair},${addr("carol")}`, limit: 2, cursor };
      expectError(await get(MUTUAL_FRIEND, threeUsers), "11603", 400, "cursor");
      expectError(await get(RECOMMENDATION, { address: addr("alice"), limit: 2, cursor }), "11603", 400, "cursor");

      const recCursor: string = (await get(RECOMMENDATION, { address: addr("alice"), limit: 2 })).body.cursor;
      expect(recCursor).not.toBe("");
      expectSuccess(await get(RECOMMENDATION, { socialUsername: "alice", limit: 2, cursor: recCursor }), true);
      expectError(await get(RECOMMENDATION, { address: addr("judy"), limit: 2, cursor: recCursor }), "11603", 400, "cursor");
      expectError(await get(MUTUAL_FRIEND, { address: pair, limit: 2, cursor: recCursor }), "11603", 400, "cursor");
      const recFlipped = recCursor.replace(/^./, (ch) => (ch === "e" ? "f" : "e"));
      expectError(await get(RECOMMENDATION, { address: addr("alice"), limit: 2, cursor: recFlipped }), "11603", 400, "cursor");
    });
  });
});

describe("REST with the store down (Redis store whose redis-server is stopped)", () => {
  let redis: TestRedisServer;
  let server: RunningRelgraph;

  beforeAll(async () => {
    redis = await startRedisServer();
    const store = await createStore({ redisUrl: redis.url, redisClusterNodes: [] });
    server = await startRelgraph({ store, records: fixtureRecords() });
  });
  afterAll(async () => {
    await server?.close();
    await redis?.stop();
  });

  it("is ready while Redis answers, then 503 on /readyz and 50300 on queries, leaking nothing", async () => {
    expect((await restGet(server.url, "/readyz", {}, { apiKey: null })).status).toBe(200);
    const before = await restGet(server.url, MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}`, limit: 100 });
    expect(relationIds(before.body.data)).toEqual(EXPECTED.mutualFriends.aliceBob);

    await redis.stop();

    const ready = await restGet(server.url, "/readyz", {}, { apiKey: null });
    expect(ready.status).toBe(503);
    expect((await restGet(server.url, "/healthz", {}, { apiKey: null })).status).toBe(200);
    const replies = [
      await restGet(server.url, MUTUAL_FRIEND, { address: `${addr("alice")},${addr("bob")}`, limit: 100 }),
      await restGet(server.url, RECOMMENDATION, { address: addr("alice"), limit: 5 }),
      await restGet(server.url, CONTRACT_INTERACTION, { address: `${addr("bob")},${addr("carol")}` }),
    ];
    for (const reply of replies) {
      expectError(reply, "50300", 503);
      expect(reply.text).not.toMatch(/ECONNREFUSED|ECONNRESET|Socket|stack|\bat \w|127\.0\.0\.1|redis:\/\/|node_modules/i);
    }
  });
});
