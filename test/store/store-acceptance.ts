import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../src/domain/errors.js";
import { foldSocialUsername } from "../../src/domain/identity.js";
import type { UserId } from "../../src/domain/model.js";
import { UnknownRelationIdError } from "../../src/store/index.js";
import { PagingStateFullError, type ChangedPart, type GraphStore, type IngestBatch, type UserInput, type WriteProgress } from "../../src/store/store.js";

/** How the acceptance suite gets stores of one engine. */
export interface StoreAcceptanceOptions {
  /** The engine name the stores must report. */
  engine: string;
  /** A store over an empty backend; called before each test. */
  createEmpty(): Promise<GraphStore>;
  /**
   * A store over a backend of its own, and a way to take that backend down. Absent for engines
   * that cannot become unavailable.
   */
  createDisposable?(): Promise<{ store: GraphStore; stopBackend(): Promise<void> }>;
}

/** Lowercase test addresses: `addr("a1")` is 0x + "a1" padded to 40 hex digits. */
export function addr(tag: string): string {
  return `0x${tag.padStart(40, "0")}`;
}

/** A user input with defaults, for tests. */
export function user(relationId: string, addresses: string[], extra: Partial<UserInput> = {}): UserInput {
  return {
    relationId,
    name: `name of ${relationId}`,
    avatar: `https://a.example/${relationId}.png`,
    addresses,
    social: null,
    game: null,
    ...extra,
  };
}

/** A batch with only the given parts. */
export function batch(parts: Partial<IngestBatch>): IngestBatch {
  return { users: [], friends: [], follows: [], interactions: [], nfts: [], releases: [], ...parts };
}

const A1 = addr("a1");
const A2 = addr("a2");
const B1 = addr("b1");
const C1 = addr("c1");
const D1 = addr("d1");
const E1 = addr("e1");
const X1 = addr("f1"); // an address with interactions but no user
const K1 = addr("c0001");
const K2 = addr("c0002");
const K3 = addr("c0003");
const N1 = addr("e0001");

/**
 * u1..u5 are friends as u1-u2, u1-u3, u2-u3, u1-u4, u2-u4, and u5 with u1, u2, u3; u6 has no relation.
 * K1 is a contract of u1 (A1), u2, u3 and the ownerless X1; K2 of u1 (A2); K3 of u2.
 */
export function fixture(): IngestBatch {
  return batch({
    users: [
      user("u1", [A1, A2], {
        name: "Alice",
        social: { username: "alice", name: "Alice S", avatar: "https://s.example/alice.png" },
        game: { gameId: "76561198000000001", name: "alice_g", avatar: "https://g.example/1.png" },
      }),
      user("u2", [B1], { social: { username: "bob", name: "Bob", avatar: "https://s.example/bob.png" } }),
      user("u3", [C1], { game: { gameId: "g3", name: "carol_g", avatar: "https://g.example/3.png" } }),
      user("u4", [D1]),
      user("u5", [E1]),
      user("u6", []),
    ],
    friends: [
      { a: "u1", b: "u2", description: "met at ETHDenver" },
      { a: "u1", b: "u3", description: "colleagues" },
      { a: "u2", b: "u3", description: "" },
      { a: "u1", b: "u4", description: "siblings" },
      { a: "u2", b: "u4", description: "" },
      { a: "u5", b: "u1", description: "neighbours" },
      { a: "u5", b: "u2", description: "" },
      { a: "u5", b: "u3", description: "" },
    ],
    follows: [
      { from: "u1", to: "u2" },
      { from: "u1", to: "u3" },
      { from: "u2", to: "u3" },
      { from: "u4", to: "u3" },
    ],
    interactions: [
      { address: A1, contract: K1 },
      { address: A2, contract: K2 },
      { address: B1, contract: K1 },
      { address: B1, contract: K3 },
      { address: C1, contract: K1 },
      { address: X1, contract: K1 },
    ],
    nfts: [
      { address: A1, contract: N1 },
      { address: B1, contract: N1 },
    ],
    releases: [
      { relationId: "u1", peers: "*" },
      { relationId: "u2", peers: ["u1", "u5"] },
    ],
  });
}

/** Retries an expectation until it holds or 5 s have passed (changes reach listeners asynchronously). */
async function eventually(check: () => void): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

const sorted = <T extends string | number>(values: readonly T[]): T[] =>
  [...values].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));

/** Defines the acceptance tests every GraphStore engine must pass. */
export function defineStoreAcceptance(options: StoreAcceptanceOptions): void {
  describe(`GraphStore acceptance: ${options.engine}`, () => {
    let store: GraphStore;
    beforeEach(async () => {
      store = await options.createEmpty();
    });
    afterEach(async () => {
      await store.close();
    });

    /** Writes the fixture and returns the ids of u1..u6 by relationId. */
    async function loadFixture(): Promise<Record<string, UserId>> {
      await store.write(fixture());
      const names = ["u1", "u2", "u3", "u4", "u5", "u6"];
      const ids = await store.resolveRelationIds(names);
      return Object.fromEntries(names.map((name, i) => [name, ids[i] as UserId]));
    }

    describe("basics", () => {
      it("reports its engine and answers ping", async () => {
        expect(store.engine).toBe(options.engine);
        await expect(store.ping()).resolves.toBeUndefined();
      });

      it("close is idempotent", async () => {
        await store.close();
        await store.close();
        store = await options.createEmpty();
      });
    });

    describe("identities and users", () => {
      it("resolves each identity kind, and null for unknown ones", async () => {
        const id = await loadFixture();
        expect(
          await store.resolve([
            { kind: "address", value: A2 },
            { kind: "social", value: "bob" },
            { kind: "game", value: "g3" },
            { kind: "game", value: "76561198000000001" },
            { kind: "address", value: X1 },
            { kind: "social", value: "nobody" },
            { kind: "game", value: "unknown" },
          ]),
        ).toEqual([id.u1, id.u2, id.u3, id.u1, null, null, null]);
      });

      it("matches social usernames case-insensitively once normalized", async () => {
        const id = await loadFixture();
        const value = foldSocialUsername("ALiCe");
        expect(await store.resolve([{ kind: "social", value }])).toEqual([id.u1]);
      });

      it("gives small distinct integer ids and resolves relationIds", async () => {
        const id = await loadFixture();
        const ids = Object.values(id);
        expect(new Set(ids).size).toBe(6);
        for (const value of ids) expect(Number.isSafeInteger(value) && value > 0).toBe(true);
        expect(await store.resolveRelationIds(["u3", "nope", "u1"])).toEqual([id.u3, null, id.u1]);
      });

      it("hydrates users and relationIds in the order asked, null or empty for unknown ids", async () => {
        const id = await loadFixture();
        const unknown = Math.max(...Object.values(id)) + 1000;
        const users = await store.users([id.u2 as UserId, unknown, id.u1 as UserId]);
        expect(users).toEqual([
          {
            id: id.u2,
            relationId: "u2",
            name: "name of u2",
            avatar: "https://a.example/u2.png",
            addresses: [B1],
            social: { username: "bob", name: "Bob", avatar: "https://s.example/bob.png" },
            game: null,
          },
          null,
          {
            id: id.u1,
            relationId: "u1",
            name: "Alice",
            avatar: "https://a.example/u1.png",
            addresses: [A1, A2],
            social: { username: "alice", name: "Alice S", avatar: "https://s.example/alice.png" },
            game: { gameId: "76561198000000001", name: "alice_g", avatar: "https://g.example/1.png" },
          },
        ]);
        expect(await store.relationIds([id.u3 as UserId, unknown, id.u6 as UserId])).toEqual(["u3", "", "u6"]);
        expect(await store.users([])).toEqual([]);
      });

      it("hydrates many users at once", async () => {
        const users = Array.from({ length: 500 }, (_, i) => user(`bulk-${i}`, [addr(`b${i}`)]));
        await store.write(batch({ users }));
        const ids = await store.resolveRelationIds(users.map((u) => u.relationId));
        const loaded = await store.users(ids as UserId[]);
        expect(loaded.map((u) => u?.relationId)).toEqual(users.map((u) => u.relationId));
        expect(await store.relationIds(ids as UserId[])).toEqual(users.map((u) => u.relationId));
      });
    });

    describe("user sets", () => {
      it("keeps friends undirected and follows directed", async () => {
        const id = await loadFixture();
        expect(sorted(await store.userSet("friends", id.u4 as UserId))).toEqual(sorted([id.u1, id.u2] as UserId[]));
        expect(sorted(await store.userSet("friends", id.u1 as UserId))).toEqual(
          sorted([id.u2, id.u3, id.u4, id.u5] as UserId[]),
        );
        expect(sorted(await store.userSet("following", id.u1 as UserId))).toEqual(sorted([id.u2, id.u3] as UserId[]));
        expect(await store.userSet("followers", id.u1 as UserId)).toEqual([]);
        expect(sorted(await store.userSet("followers", id.u3 as UserId))).toEqual(
          sorted([id.u1, id.u2, id.u4] as UserId[]),
        );
        expect(await store.userSet("friends", id.u6 as UserId)).toEqual([]);
      });

      it("counts set sizes", async () => {
        const id = await loadFixture();
        const ids = [id.u1, id.u3, id.u6] as UserId[];
        expect(await store.userSetSizes("friends", ids)).toEqual([4, 3, 0]);
        expect(await store.userSetSizes("following", ids)).toEqual([2, 0, 0]);
        expect(await store.userSetSizes("followers", ids)).toEqual([0, 3, 0]);
      });

      it("returns null instead of reading sets larger than the bound", async () => {
        const id = await loadFixture();
        const bounded = await store.userSetsBounded("friends", [id.u1, id.u6, id.u3] as UserId[], 3);
        expect(bounded[0]).toBeNull();
        expect(bounded[1]).toEqual([]);
        expect(sorted(bounded[2] ?? [])).toEqual(sorted([id.u1, id.u2, id.u5] as UserId[]));
        expect(await store.userSetsBounded("friends", [id.u1] as UserId[], 4)).not.toEqual([null]);
      });

      it("intersects the sets of two and three users, and gives [] for none or disjoint", async () => {
        const id = await loadFixture();
        expect(sorted(await store.userSetIntersection("friends", [id.u1, id.u2] as UserId[]))).toEqual(
          sorted([id.u3, id.u4, id.u5] as UserId[]),
        );
        expect(await store.userSetIntersection("friends", [id.u1, id.u2, id.u3] as UserId[])).toEqual([id.u5]);
        expect(await store.userSetIntersection("friends", [id.u1, id.u6] as UserId[])).toEqual([]);
        expect(sorted(await store.userSetIntersection("friends", [id.u3, id.u4] as UserId[]))).toEqual(
          sorted([id.u1, id.u2] as UserId[]),
        );
        expect(sorted(await store.userSetIntersection("followers", [id.u2, id.u3] as UserId[]))).toEqual([id.u1]);
        expect(await store.userSetIntersection("friends", [])).toEqual([]);
        expect(sorted(await store.userSetIntersection("friends", [id.u4] as UserId[]))).toEqual(
          sorted([id.u1, id.u2] as UserId[]),
        );
      });

      it("intersects large sets exactly", async () => {
        // Friends: hub-a with 0..2999, hub-b with the even ones, hub-c with multiples of 3.
        const members = Array.from({ length: 3000 }, (_, i) => user(`m${i}`, []));
        const friends = members.flatMap((m, i) => [
          { a: "hub-a", b: m.relationId, description: "" },
          ...(i % 2 === 0 ? [{ a: "hub-b", b: m.relationId, description: "" }] : []),
          ...(i % 3 === 0 ? [{ a: "hub-c", b: m.relationId, description: "" }] : []),
        ]);
        await store.write(batch({ users: [user("hub-a", []), user("hub-b", []), user("hub-c", []), ...members], friends }));
        const hubs = (await store.resolveRelationIds(["hub-a", "hub-b", "hub-c"])) as UserId[];
        const common = await store.userSetIntersection("friends", hubs);
        const expected = members.filter((_, i) => i % 6 === 0).map((m) => m.relationId);
        expect(sorted(await store.relationIds(common))).toEqual(sorted(expected));
      });
    });

    describe("assets", () => {
      it("unions a user's assets over all of its addresses", async () => {
        const id = await loadFixture();
        expect(sorted(await store.userAssets("contracts", id.u1 as UserId))).toEqual([K1, K2]);
        expect(sorted(await store.userAssets("contracts", id.u2 as UserId))).toEqual([K1, K3]);
        expect(await store.userAssets("nfts", id.u1 as UserId)).toEqual([N1]);
        expect(await store.userAssets("nfts", id.u3 as UserId)).toEqual([]);
        expect(await store.userAssets("contracts", id.u6 as UserId)).toEqual([]);
      });

      it("links assets recorded before their user, across two writes, and after it", async () => {
        const F1 = addr("ff1");
        const F2 = addr("ff2");
        await store.write(batch({ interactions: [{ address: F1, contract: K2 }], nfts: [{ address: F2, contract: N1 }] }));
        expect(await store.resolve([{ kind: "address", value: F1 }])).toEqual([null]);
        await store.write(batch({ users: [user("late", [F1, F2])] }));
        const [late] = (await store.resolveRelationIds(["late"])) as [UserId];
        expect(await store.userAssets("contracts", late)).toEqual([K2]);
        expect(await store.userAssets("nfts", late)).toEqual([N1]);
        expect(await store.assetHoldersBounded("contracts", [K2], 10)).toEqual([[late]]);
        await store.write(batch({ interactions: [{ address: F2, contract: K3 }] }));
        expect(sorted(await store.userAssets("contracts", late))).toEqual([K2, K3]);
        expect(await store.assetHoldersBounded("nfts", [N1], 10)).toEqual([[late]]);
      });

      it("links assets whose records precede their user within one batch", async () => {
        const F1 = addr("ff1");
        await store.write(batch({ interactions: [{ address: F1, contract: K1 }], users: [user("same", [F1])] }));
        const [same] = (await store.resolveRelationIds(["same"])) as [UserId];
        expect(await store.userAssets("contracts", same)).toEqual([K1]);
      });

      it("lists asset holders, skipping popular assets as null", async () => {
        const id = await loadFixture();
        const unknown = addr("c9999");
        const [k1, k2, k3, none] = await store.assetHoldersBounded("contracts", [K1, K2, K3, unknown], 2);
        expect(k1).toBeNull();
        expect(k2).toEqual([id.u1]);
        expect(k3).toEqual([id.u2]);
        expect(none).toEqual([]);
        const [k1All] = await store.assetHoldersBounded("contracts", [K1], 3);
        expect(sorted(k1All ?? [])).toEqual(sorted([id.u1, id.u2, id.u3] as UserId[]));
        const [n1] = await store.assetHoldersBounded("nfts", [N1], 3);
        expect(sorted(n1 ?? [])).toEqual(sorted([id.u1, id.u2] as UserId[]));
        expect(await store.assetHoldersBounded("nfts", [], 3)).toEqual([]);
      });

      it("counts asset holders without reading them", async () => {
        await loadFixture();
        const unknown = addr("c9999");
        expect(await store.assetHolderCounts("contracts", [K1, K2, K3, unknown])).toEqual([3, 1, 1, 0]);
        expect(await store.assetHolderCounts("nfts", [N1])).toEqual([2]);
        expect(await store.assetHolderCounts("nfts", [])).toEqual([]);
      });

      it("intersects the contracts of addresses", async () => {
        await loadFixture();
        expect(await store.contractIntersection([A1, B1])).toEqual([K1]);
        expect(await store.contractIntersection([A1, B1, C1, X1])).toEqual([K1]);
        expect(await store.contractIntersection([A2, B1])).toEqual([]);
        expect(await store.contractIntersection([A1, addr("9999")])).toEqual([]);
        expect(sorted(await store.contractIntersection([B1]))).toEqual([K1, K3]);
        expect(await store.contractIntersection([])).toEqual([]);
      });

      it("knows the addresses of users and of interaction and nft records", async () => {
        await loadFixture();
        const nftOnly = addr("ee");
        await store.write(batch({ nfts: [{ address: nftOnly, contract: N1 }] }));
        expect(await store.addressesKnown([A1, X1, nftOnly, E1, addr("9999")])).toEqual([true, true, true, true, false]);
      });
    });

    describe("releases and descriptions", () => {
      it("returns '*', a list of peers, or [] when nothing was released", async () => {
        const id = await loadFixture();
        expect(await store.release(id.u1 as UserId)).toBe("*");
        expect(sorted((await store.release(id.u2 as UserId)) as UserId[])).toEqual(sorted([id.u1, id.u5] as UserId[]));
        expect(await store.release(id.u3 as UserId)).toEqual([]);
      });

      it("replaces a user's whole release with each release record; [] withdraws it", async () => {
        const id = await loadFixture();
        await store.write(batch({ releases: [{ relationId: "u2", peers: ["u3"] }] }));
        expect(await store.release(id.u2 as UserId)).toEqual([id.u3]);
        await store.write(batch({ releases: [{ relationId: "u2", peers: "*" }, { relationId: "u1", peers: ["u2"] }] }));
        expect(await store.release(id.u2 as UserId)).toBe("*");
        expect(await store.release(id.u1 as UserId)).toEqual([id.u2]);
        await store.write(batch({ releases: [{ relationId: "u2", peers: [] }, { relationId: "u1", peers: [] }] }));
        expect(await store.release(id.u2 as UserId)).toEqual([]);
        expect(await store.release(id.u1 as UserId)).toEqual([]);
      });

      it("describes friend relations in both directions, '' when none", async () => {
        const id = await loadFixture();
        expect(await store.friendDescriptions(id.u1 as UserId, [id.u2, id.u5, id.u4, id.u6] as UserId[])).toEqual([
          "met at ETHDenver",
          "neighbours",
          "siblings",
          "",
        ]);
        expect(await store.friendDescriptions(id.u5 as UserId, [id.u1, id.u2] as UserId[])).toEqual(["neighbours", ""]);
        expect(await store.friendDescriptions(id.u6 as UserId, [])).toEqual([]);
      });

      it("replaces a relation's description with the upsert's, an empty one included", async () => {
        const id = await loadFixture();
        await store.write(
          batch({
            friends: [
              { a: "u2", b: "u1", description: "" },
              { a: "u4", b: "u1", description: "old friends" },
            ],
          }),
        );
        expect(await store.friendDescriptions(id.u1 as UserId, [id.u2, id.u4] as UserId[])).toEqual(["", "old friends"]);
        expect(await store.friendDescriptions(id.u2 as UserId, [id.u1] as UserId[])).toEqual([""]);
      });
    });

    describe("kept state", () => {
      it("writes a writer's kept state with its batch: fields set, replaced and deleted, read by field and by space", async () => {
        expect(await store.keptState("test:space", ["a"])).toEqual([null]);
        expect(await store.keptSpace("test:space")).toEqual(new Map());
        await store.write(batch({ interactions: [{ address: A1, contract: K1 }] }), {
          keep: [
            { space: "test:space", field: "a", value: "1" },
            { space: "test:space", field: "b", value: "2" },
            { space: "test:other", field: "a", value: "x" },
          ],
        });
        expect(await store.contractIntersection([A1])).toEqual([K1]);
        await store.write(batch({}), {
          keep: [
            { space: "test:space", field: "a", value: null },
            { space: "test:space", field: "b", value: "3" },
          ],
        });
        expect(await store.keptState("test:space", ["a", "b", "c"])).toEqual([null, "3", null]);
        expect(await store.keptSpace("test:space")).toEqual(new Map([["b", "3"]]));
        expect(await store.keptSpace("test:other")).toEqual(new Map([["a", "x"]]));
      });
    });

    describe("writes", () => {
      /** Everything the store can tell about the fixture's world, through the interface only. */
      async function snapshot(): Promise<unknown> {
        const relationIds = ["u1", "u2", "u3", "u4", "u5", "u6"];
        const ids = (await store.resolveRelationIds(relationIds)) as UserId[];
        const perUser = await Promise.all(
          ids.map(async (id) => ({
            friends: sorted(await store.userSet("friends", id)),
            following: sorted(await store.userSet("following", id)),
            followers: sorted(await store.userSet("followers", id)),
            contracts: sorted(await store.userAssets("contracts", id)),
            nfts: sorted(await store.userAssets("nfts", id)),
            release: await store.release(id).then((r) => (r === "*" ? r : sorted(r))),
            descriptions: await store.friendDescriptions(id, ids),
          })),
        );
        const addresses = [A1, A2, B1, C1, D1, E1, X1];
        return {
          ids,
          users: await store.users(ids),
          perUser,
          resolved: await store.resolve(addresses.map((value) => ({ kind: "address" as const, value }))),
          holders: (await store.assetHoldersBounded("contracts", [K1, K2, K3], 100)).map((h) => sorted(h ?? [])),
          nftHolders: (await store.assetHoldersBounded("nfts", [N1], 100)).map((h) => sorted(h ?? [])),
          intersection: await store.contractIntersection([A1, B1]),
          known: await store.addressesKnown(addresses),
        };
      }

      it("is idempotent: writing the same batch twice leaves the same state", async () => {
        await loadFixture();
        const first = await snapshot();
        await store.write(fixture());
        expect(await snapshot()).toEqual(first);
      });

      it("rejects a batch naming an unknown relationId, writing nothing", async () => {
        const error = await store
          .write(batch({ users: [user("new", [addr("9")])], follows: [{ from: "new", to: "ghost" }] }))
          .then(
            () => null,
            (e: unknown) => e,
          );
        expect(error).toBeInstanceOf(UnknownRelationIdError);
        expect(await store.resolveRelationIds(["new"])).toEqual([null]);
        expect(await store.resolve([{ kind: "address", value: addr("9") }])).toEqual([null]);
      });

      it("reports progress up to the batch's record count", async () => {
        const progress: WriteProgress[] = [];
        const data = fixture();
        await store.write(data, { onProgress: (p) => progress.push(p) });
        const total = 6 + 8 + 4 + 6 + 2 + 2;
        expect(progress.length).toBeGreaterThan(0);
        expect(progress.at(-1)).toEqual({ written: total, total });
        for (const p of progress) expect(p.total).toBe(total);
      });

      it("re-ingesting a user replaces its record and drops stale identities and assets", async () => {
        const id = await loadFixture();
        const B2 = addr("b2");
        await store.write(
          batch({
            users: [
              user("u2", [B2], { social: { username: "bobby", name: "Bobby", avatar: "https://s.example/b.png" } }),
            ],
          }),
        );
        expect(
          await store.resolve([
            { kind: "address", value: B1 },
            { kind: "address", value: B2 },
            { kind: "social", value: "bob" },
            { kind: "social", value: "bobby" },
          ]),
        ).toEqual([null, id.u2, null, id.u2]);
        expect((await store.users([id.u2 as UserId]))[0]?.addresses).toEqual([B2]);
        expect(await store.userAssets("contracts", id.u2 as UserId)).toEqual([]);
        expect(await store.userAssets("nfts", id.u2 as UserId)).toEqual([]);
        expect(await store.assetHoldersBounded("contracts", [K3], 10)).toEqual([[]]);
        expect(sorted((await store.assetHoldersBounded("contracts", [K1], 10))[0] ?? [])).toEqual(
          sorted([id.u1, id.u3] as UserId[]),
        );
        // The old address still has its records; relations and id are kept.
        expect(await store.addressesKnown([B1])).toEqual([true]);
        expect(await store.contractIntersection([B1, A1])).toEqual([K1]);
        expect(await store.resolveRelationIds(["u2"])).toEqual([id.u2]);
        expect(sorted(await store.userSet("friends", id.u2 as UserId))).toEqual(
          sorted([id.u1, id.u3, id.u4, id.u5] as UserId[]),
        );
      });

      it("moves an address claimed by another user away from its former owner", async () => {
        const id = await loadFixture();
        await store.write(batch({ users: [user("u3", [C1, A2])] }));
        expect(await store.resolve([{ kind: "address", value: A2 }])).toEqual([id.u3]);
        expect((await store.users([id.u1 as UserId]))[0]?.addresses).toEqual([A1]);
        expect(await store.userAssets("contracts", id.u1 as UserId)).toEqual([K1]);
        expect(sorted(await store.userAssets("contracts", id.u3 as UserId))).toEqual([K1, K2]);
        expect(await store.assetHoldersBounded("contracts", [K2], 10)).toEqual([[id.u3]]);
        // u3's game identity was dropped by the new record.
        expect(await store.resolve([{ kind: "game", value: "g3" }])).toEqual([null]);
      });

      it("keeps an identity with the user that took it over in the same batch", async () => {
        const id = await loadFixture();
        await store.write(
          batch({
            users: [
              user("u2", [B1]),
              user("u4", [D1], { social: { username: "bob", name: "Bob 2", avatar: "https://s.example/2.png" } }),
            ],
          }),
        );
        expect(await store.resolve([{ kind: "social", value: "bob" }])).toEqual([id.u4]);
      });
    });

    describe("changes", () => {
      const noDeletes = { friends: [], follows: [], interactions: [], nfts: [] };
      const deletes = (parts: Partial<NonNullable<IngestBatch["deletes"]>>) => ({ ...noDeletes, ...parts });

      it("deletes friend edges given in either order, and deleting an absent edge is no error", async () => {
        const id = await loadFixture();
        await store.write(batch({ deletes: deletes({ friends: [{ a: "u2", b: "u1" }, { a: "u6", b: "u1" }, { a: "ghost", b: "u1" }] }) }));
        expect(sorted(await store.userSet("friends", id.u1 as UserId))).toEqual(sorted([id.u3, id.u4, id.u5] as UserId[]));
        expect(sorted(await store.userSet("friends", id.u2 as UserId))).toEqual(sorted([id.u3, id.u4, id.u5] as UserId[]));
        expect(await store.friendDescriptions(id.u1 as UserId, [id.u2 as UserId])).toEqual([""]);
        expect(sorted(await store.userSetIntersection("friends", [id.u1, id.u2] as UserId[]))).toEqual(sorted([id.u3, id.u4, id.u5] as UserId[]));
      });

      it("deletes follows, one direction only", async () => {
        const id = await loadFixture();
        await store.write(batch({ deletes: deletes({ follows: [{ from: "u1", to: "u2" }, { from: "u3", to: "u1" }] }) }));
        expect(await store.userSet("following", id.u1 as UserId)).toEqual([id.u3]);
        expect(await store.userSet("followers", id.u2 as UserId)).toEqual([]);
        expect(await store.userSetSizes("followers", [id.u3 as UserId])).toEqual([3]);
      });

      it("deletes interactions and nfts: a user keeps an asset another of its addresses holds", async () => {
        const id = await loadFixture();
        await store.write(batch({ interactions: [{ address: A2, contract: K1 }] }));
        await store.write(
          batch({
            deletes: deletes({
              interactions: [{ address: A1, contract: K1 }, { address: B1, contract: K3 }, { address: X1, contract: K1 }],
              nfts: [{ address: B1, contract: N1 }],
            }),
          }),
        );
        // u1 still holds K1 through A2; u2 lost K3 and its NFT.
        expect(sorted(await store.userAssets("contracts", id.u1 as UserId))).toEqual(sorted([K1, K2]));
        expect(await store.userAssets("contracts", id.u2 as UserId)).toEqual([K1]);
        expect(await store.userAssets("nfts", id.u2 as UserId)).toEqual([]);
        expect(await store.assetHolderCounts("contracts", [K3])).toEqual([0]);
        expect(sorted((await store.assetHoldersBounded("nfts", [N1], 10))[0] ?? [])).toEqual([id.u1]);
        expect(await store.contractIntersection([A1, B1])).toEqual([]);
        // X1 has no owner and no record left: it is unknown again.
        expect(await store.addressesKnown([X1, A1])).toEqual([false, true]);
      });

      it("erases a user: record, identities, edges, releases naming them, assets and their addresses' records, owned paging state", async () => {
        const id = await loadFixture();
        await store.putPagingState("snapshot-of-u1", "ranking", 600, { owner: id.u1 as UserId });
        await store.putPagingState("snapshot-of-u2", "ranking", 600, { owner: id.u2 as UserId });
        await store.write(batch({ erasures: ["u1"] }));
        const u1 = id.u1 as UserId;
        expect(await store.resolveRelationIds(["u1"])).toEqual([null]);
        expect(await store.users([u1])).toEqual([null]);
        expect(
          await store.resolve([
            { kind: "address", value: A1 },
            { kind: "address", value: A2 },
            { kind: "social", value: "alice" },
            { kind: "game", value: "76561198000000001" },
          ]),
        ).toEqual([null, null, null, null]);
        for (const other of ["u2", "u3", "u4", "u5"]) {
          expect(await store.userSet("friends", id[other] as UserId)).not.toContain(u1);
          expect(await store.friendDescriptions(id[other] as UserId, [u1])).toEqual([""]);
        }
        expect(await store.userSet("followers", id.u2 as UserId)).toEqual([]);
        expect(await store.userSet("friends", u1)).toEqual([]);
        expect(await store.userSet("following", u1)).toEqual([]);
        expect(await store.release(id.u2 as UserId)).toEqual([id.u5]);
        expect(await store.release(u1)).toEqual([]);
        expect(await store.userAssets("contracts", u1)).toEqual([]);
        expect(sorted((await store.assetHoldersBounded("contracts", [K1], 10))[0] ?? [])).toEqual(sorted([id.u2, id.u3] as UserId[]));
        expect(await store.assetHolderCounts("contracts", [K2])).toEqual([0]);
        expect(await store.contractIntersection([A1, B1])).toEqual([]);
        expect(await store.addressesKnown([A1, A2, B1])).toEqual([false, false, true]);
        expect(await store.getPagingState("snapshot-of-u1")).toBeNull();
        expect(await store.getPagingState("snapshot-of-u2")).toBe("ranking");
        // The others are untouched.
        expect(sorted(await store.userSet("friends", id.u2 as UserId))).toEqual(sorted([id.u3, id.u4, id.u5] as UserId[]));
        expect(await store.users([id.u2 as UserId])).toEqual([expect.objectContaining({ relationId: "u2", addresses: [B1] })]);
        // Its identities are free for another user.
        await store.write(batch({ users: [user("u7", [A1], { social: { username: "Alice", name: "", avatar: "" } })] }));
        const [u7] = await store.resolveRelationIds(["u7"]);
        expect(await store.resolve([{ kind: "address", value: A1 }, { kind: "social", value: "alice" }])).toEqual([u7, u7]);
      });

      it("erasing an unknown user is no error, and a user erased and defined again in one batch starts afresh", async () => {
        const id = await loadFixture();
        await store.write(batch({ erasures: ["ghost"] }));
        await store.write(batch({ erasures: ["u2"], users: [user("u2", [B1])], friends: [{ a: "u2", b: "u6", description: "new" }] }));
        const [u2] = (await store.resolveRelationIds(["u2"])) as UserId[];
        expect(u2).not.toBe(id.u2);
        expect(await store.userSet("friends", u2!)).toEqual([id.u6]);
        expect(await store.userSet("followers", u2!)).toEqual([]);
        expect(await store.resolve([{ kind: "address", value: B1 }])).toEqual([u2]);
        expect(await store.userSet("friends", id.u1 as UserId)).not.toContain(id.u2);
        expect(await store.userAssets("contracts", u2!)).toEqual([]);
      });

      it("keeps a username's case as ingested and matches it case-folded", async () => {
        await store.write(batch({ users: [user("s1", [], { social: { username: "Soc150User", name: "", avatar: "" } })] }));
        const [id] = await store.resolve([{ kind: "social", value: foldSocialUsername("SOC150USER") }]);
        expect(id).not.toBeNull();
        expect((await store.users([id!]))[0]?.social?.username).toBe("Soc150User");
      });

      it("tells its listeners which parts of the graph a write changed", async () => {
        const notifier = store as unknown as { onChange?: (listener: (parts: readonly ChangedPart[]) => void) => () => void };
        // Engines that cannot tell (none yet) skip this: the cache layer then cannot serve them.
        if (!notifier.onChange) return;
        const id = await loadFixture();
        const seen: ChangedPart[] = [];
        const stop = notifier.onChange((parts) => seen.push(...parts));
        try {
          await store.write(batch({ deletes: deletes({ friends: [{ a: "u4", b: "u2" }] }) }));
          await eventually(() =>
            expect(seen).toEqual(
              expect.arrayContaining([
                { part: "userSet", kind: "friends", id: id.u4 },
                { part: "userSet", kind: "friends", id: id.u2 },
              ]),
            ),
          );
        } finally {
          stop();
        }
      });
    });

    describe("paging state", () => {
      it("stores values until their TTL expires", async () => {
        await store.putPagingState("page-a", "state-a", 1);
        await store.putPagingState("page-b", "state-b", 600);
        expect(await store.getPagingState("page-a")).toBe("state-a");
        expect(await store.getPagingState("missing")).toBeNull();
        await new Promise((resolve) => setTimeout(resolve, 2100));
        expect(await store.getPagingState("page-a")).toBeNull();
        expect(await store.getPagingState("page-b")).toBe("state-b");
      });
    });

    describe("paging state renewal", () => {
      it("gives a state read with renew its whole time again, and its owner's index with it", async () => {
        await store.putPagingState("renewed", "kept", 2, { owner: 71 as UserId });
        await store.putPagingState("not-renewed", "gone", 2, { owner: 71 as UserId });
        await new Promise((resolve) => setTimeout(resolve, 1200));
        expect(await store.getPagingState("renewed", { ttlSeconds: 3, owner: 71 as UserId })).toBe("kept");
        expect(await store.getPagingState("missing", { ttlSeconds: 3 })).toBeNull();
        await new Promise((resolve) => setTimeout(resolve, 1300));
        expect(await store.getPagingState("renewed")).toBe("kept");
        expect(await store.getPagingState("not-renewed")).toBeNull();
      });
    });

    describe("paging state limits", () => {
      const limits = { perOwner: 2, perHolder: 1_000, total: 3 };
      const full = (limit: PagingStateFullError["limit"]) => expect.objectContaining({ name: "PagingStateFullError", limit });

      it("refuses one state too many for an owner, storing nothing, and counts a key put again once", async () => {
        await store.putPagingState("own-1", "one", 600, { owner: 41 as UserId, limits });
        await store.putPagingState("own-2", "two", 600, { owner: 41 as UserId, limits });
        await store.putPagingState("own-2", "two again", 600, { owner: 41 as UserId, limits });
        const refused = store.putPagingState("own-3", "three", 600, { owner: 41 as UserId, limits });
        await expect(refused).rejects.toEqual(full("perOwner"));
        await expect(refused).rejects.toBeInstanceOf(PagingStateFullError);
        const retryAfter = await refused.catch((error: PagingStateFullError) => error.retryAfterSeconds);
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(600);
        expect(await store.getPagingState("own-3")).toBeNull();
        expect(await store.getPagingState("own-2")).toBe("two again");
        // Another owner has room of their own; without limits nothing is counted or refused.
        await store.putPagingState("other-1", "x", 600, { owner: 42 as UserId, limits });
        await store.putPagingState("own-4", "four", 600, { owner: 41 as UserId });
        expect(await store.getPagingState("own-4")).toBe("four");
      });

      it("refuses one state too many in the whole store, and makes room as states expire", async () => {
        await store.putPagingState("all-1", "one", 1, { owner: 51 as UserId, limits });
        await store.putPagingState("all-2", "two", 600, { owner: 52 as UserId, limits });
        await store.putPagingState("all-3", "three", 600, { owner: 53 as UserId, limits });
        await expect(store.putPagingState("all-4", "four", 600, { owner: 54 as UserId, limits })).rejects.toEqual(full("total"));
        expect(await store.getPagingState("all-4")).toBeNull();
        await new Promise((resolve) => setTimeout(resolve, 2100));
        await store.putPagingState("all-4", "four", 600, { owner: 54 as UserId, limits });
        expect(await store.getPagingState("all-4")).toBe("four");
      });

      it("makes room for an owner as their states expire", async () => {
        await store.putPagingState("short-1", "one", 1, { owner: 61 as UserId, limits });
        await store.putPagingState("short-2", "two", 600, { owner: 61 as UserId, limits });
        await expect(store.putPagingState("short-3", "three", 600, { owner: 61 as UserId, limits })).rejects.toEqual(full("perOwner"));
        await new Promise((resolve) => setTimeout(resolve, 2100));
        await store.putPagingState("short-3", "three", 600, { owner: 61 as UserId, limits });
        expect(await store.getPagingState("short-3")).toBe("three");
      });
    });

    describe("paging state shares per holder", () => {
      const limits = { perOwner: 1_000, perHolder: 2, total: 1_000 };
      const full = (limit: PagingStateFullError["limit"]) => expect.objectContaining({ name: "PagingStateFullError", limit });
      const claim = (owner: number, holder: string, shareLimits = limits) => ({ owner: owner as UserId, holder, limits: shareLimits });

      it("refuses a holder one state past its share, storing nothing, while another holder's new states are stored", async () => {
        await store.putPagingState("a-1", "one", 600, claim(81, "key-a"));
        await store.putPagingState("a-2", "two", 600, claim(82, "key-a"));
        // A state the holder has counted already counts once, however often it is put.
        await store.putPagingState("a-2", "two again", 600, claim(82, "key-a"));
        const refused = store.putPagingState("a-3", "three", 600, claim(83, "key-a"));
        await expect(refused).rejects.toEqual(full("perHolder"));
        await expect(refused).rejects.toBeInstanceOf(PagingStateFullError);
        const retryAfter = await refused.catch((error: PagingStateFullError) => error.retryAfterSeconds);
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(600);
        expect(await store.getPagingState("a-3")).toBeNull();
        // Another holder has a share of its own while key-a's is full, and no more than it.
        await store.putPagingState("b-1", "one", 600, claim(84, "key-b"));
        await store.putPagingState("b-2", "two", 600, claim(85, "key-b"));
        await expect(store.putPagingState("b-3", "three", 600, claim(86, "key-b"))).rejects.toEqual(full("perHolder"));
        expect([await store.getPagingState("b-1"), await store.getPagingState("b-2"), await store.getPagingState("b-3")]).toEqual(["one", "two", null]);
        // key-a's states are as they were.
        expect([await store.getPagingState("a-1"), await store.getPagingState("a-2")]).toEqual(["one", "two again"]);
        // Without a holder, or without limits, nothing counts toward a share.
        await store.putPagingState("a-4", "four", 600, { owner: 87 as UserId, limits });
        await store.putPagingState("a-5", "five", 600, { owner: 88 as UserId, holder: "key-a" });
        expect([await store.getPagingState("a-4"), await store.getPagingState("a-5")]).toEqual(["four", "five"]);
      });

      it("never deletes a live state of another holder's when a full holder puts it, and counts a shared state toward every holder that puts it", async () => {
        await store.putPagingState("shared", "kept", 600, claim(91, "key-c"));
        await store.putPagingState("d-1", "one", 600, claim(92, "key-d"));
        await store.putPagingState("d-2", "two", 600, claim(93, "key-d"));
        await expect(store.putPagingState("shared", "kept", 600, claim(91, "key-d"))).rejects.toEqual(full("perHolder"));
        expect(await store.getPagingState("shared")).toBe("kept");
        // key-e puts the state key-c stored first: it now counts toward both.
        await store.putPagingState("shared", "kept", 600, claim(91, "key-e"));
        await store.putPagingState("e-2", "two", 600, claim(94, "key-e"));
        await expect(store.putPagingState("e-3", "three", 600, claim(95, "key-e"))).rejects.toEqual(full("perHolder"));
        await store.putPagingState("c-2", "two", 600, claim(96, "key-c"));
        await expect(store.putPagingState("c-3", "three", 600, claim(97, "key-c"))).rejects.toEqual(full("perHolder"));
        expect([await store.getPagingState("shared"), await store.getPagingState("d-1"), await store.getPagingState("e-2")]).toEqual(["kept", "one", "two"]);
      });

      it("makes room in a holder's share as its states expire, and keeps a state counted while a read renews it", async () => {
        const one = { ...limits, perHolder: 1 };
        await store.putPagingState("short", "one", 1, claim(101, "key-f", one));
        await expect(store.putPagingState("next", "two", 600, claim(102, "key-f", one))).rejects.toEqual(full("perHolder"));
        await new Promise((resolve) => setTimeout(resolve, 2100));
        await store.putPagingState("next", "two", 600, claim(102, "key-f", one));
        expect(await store.getPagingState("next")).toBe("two");

        await store.putPagingState("renewed", "kept", 2, claim(103, "key-g", one));
        await new Promise((resolve) => setTimeout(resolve, 1200));
        expect(await store.getPagingState("renewed", { ttlSeconds: 3, owner: 103 as UserId, holder: "key-g" })).toBe("kept");
        await new Promise((resolve) => setTimeout(resolve, 1300));
        // Past the time it was put for, the renewed state still fills key-g's share.
        expect(await store.getPagingState("renewed")).toBe("kept");
        await expect(store.putPagingState("other", "x", 600, claim(104, "key-g", one))).rejects.toEqual(full("perHolder"));
      });
    });

    describe("api keys", () => {
      it("puts, finds by hash, lists and revokes", async () => {
        const one = { id: "k1", hash: "a".repeat(64), label: "ci", createdAt: "2024-01-01T00:00:00.000Z", revokedAt: null };
        const two = { id: "k2", hash: "b".repeat(64), label: "", createdAt: "2024-01-02T00:00:00.000Z", revokedAt: null };
        await store.putApiKey(one);
        await store.putApiKey(two);
        expect(await store.apiKeyByHash(one.hash)).toEqual(one);
        expect(await store.apiKeyByHash("c".repeat(64))).toBeNull();
        expect((await store.listApiKeys()).sort((x, y) => x.id.localeCompare(y.id))).toEqual([one, two]);
        expect(await store.revokeApiKey("k1", "2024-02-01T00:00:00.000Z")).toBe(true);
        expect(await store.revokeApiKey("k9", "2024-02-01T00:00:00.000Z")).toBe(false);
        expect(await store.apiKeyByHash(one.hash)).toEqual({ ...one, revokedAt: "2024-02-01T00:00:00.000Z" });
        expect(await store.apiKeyByHash(two.hash)).toEqual(two);
      });

      it("keeps a key's own rate limit", async () => {
        const limited = { id: "k3", hash: "d".repeat(64), label: "", createdAt: "2024-01-03T00:00:00.000Z", revokedAt: null, rateLimit: 7 };
        await store.putApiKey(limited);
        expect(await store.apiKeyByHash(limited.hash)).toEqual(limited);
      });
    });

    describe("shared secrets", () => {
      it("creates 32 random bytes per name once, and gives every caller, concurrent first ones included, the same", async () => {
        const first = await Promise.all([1, 2, 3, 4].map(() => store.sharedSecret("cursor-key")));
        expect(first[0]!.length).toBe(32);
        for (const secret of first) expect(Buffer.from(secret).equals(Buffer.from(first[0]!))).toBe(true);
        expect(Buffer.from(await store.sharedSecret("cursor-key")).equals(Buffer.from(first[0]!))).toBe(true);
        expect(Buffer.from(await store.sharedSecret("other")).equals(Buffer.from(first[0]!))).toBe(false);
      });
    });

    describe("unavailability", () => {
      // The memory engine has no backend that can go away, so it passes no createDisposable.
      it.skipIf(!options.createDisposable)("fails with StoreUnavailableError once its backend is gone", async () => {
        const disposable = await options.createDisposable!();
        try {
          await disposable.store.write(fixture());
          await disposable.store.ping();
          // None of the sets below has been read, so behind the cache layer too every call goes to the backend.
          await disposable.store.resolve([{ kind: "social", value: "nobody" }]);
          await disposable.stopBackend();
          for (const call of [
            () => disposable.store.userSetSizes("friends", [1, 2]),
            () => disposable.store.userSetsBounded("following", [1, 2], 100),
            () => disposable.store.ping(),
            () => disposable.store.resolveRelationIds(["u1"]),
            () => disposable.store.users([1, 2]),
            () => disposable.store.userSetIntersection("friends", [1, 2]),
            () => disposable.store.write(fixture()),
            () => disposable.store.getPagingState("x"),
          ]) {
            const error = await call().then(
              () => null,
              (e: unknown) => e,
            );
            expect(error).toBeInstanceOf(StoreUnavailableError);
            const unavailable = error as StoreUnavailableError;
            expect(unavailable.code).toBe("50300");
            expect(unavailable.cause).toBeDefined();
            // Failed because the backend is gone, at once, rather than by outliving the store's deadline.
            expect(String((unavailable.cause as Error).message)).not.toMatch(/no reply .* within/);
            expect(unavailable.message).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|Socket|redis/i);
          }
        } finally {
          await disposable.store.close();
        }
      });
    });
  });
}
