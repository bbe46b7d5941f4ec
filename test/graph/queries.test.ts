import { describe, expect, it } from "vitest";
import type { Caller } from "../../src/domain/caller.js";
import { createCursorCodec } from "../../src/domain/cursor.js";
import { InvalidCursorError, UserNotFoundError } from "../../src/domain/errors.js";
import { GraphQueries } from "../../src/graph/queries.js";
import { DEFAULT_RECOMMENDATION_LIMITS, type RecommendationLimits } from "../../src/domain/recommendation-limits.js";
import type { IngestRecord } from "../../src/ingest/format.js";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { describeCandidate, occurrenceWeight, SIGNALS } from "../../src/domain/recommend.js";
import { createPrng } from "../../src/synthetic/prng.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import type { GraphStore } from "../../src/store/store.js";

/** The ApiKey every query here is asked under. */
const CALLER: Caller = { keyId: "test-key" };

/** A deterministic address per user name; contracts are named by hex. */
const addressOf = (name: string) => `0x${Buffer.from(name).toString("hex").padStart(40, "0").slice(-40)}`;
const contract = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;

/** Records for users (each with one address) plus relations given in a compact form. */
function graph(spec: {
  users: string[];
  friends?: [string, string][];
  follows?: [string, string][];
  interactions?: [string, number][];
  nfts?: [string, number][];
}): IngestRecord[] {
  return [
    ...spec.users.map((u): IngestRecord => ({ type: "user", relationId: u, name: u, avatar: "", addresses: [addressOf(u)], social: null, game: null })),
    ...(spec.friends ?? []).map(([a, b]): IngestRecord => ({ type: "friend", a, b, description: "" })),
    ...(spec.follows ?? []).map(([from, to]): IngestRecord => ({ type: "follow", from, to })),
    ...(spec.interactions ?? []).map(([u, c]): IngestRecord => ({ type: "interaction", address: addressOf(u), contract: contract(c) })),
    ...(spec.nfts ?? []).map(([u, c]): IngestRecord => ({ type: "nft", address: addressOf(u), contract: contract(c) })),
  ];
}

async function queriesOver(records: IngestRecord[], limits: Partial<RecommendationLimits> = {}, store: GraphStore = createMemoryStore()) {
  await ingestRecords(store, records);
  const queries = new GraphQueries(store, createCursorCodec(Buffer.alloc(32, 7)), { ...DEFAULT_RECOMMENDATION_LIMITS, ...limits });
  const idOf = async (relationId: string) => (await queries.resolveUsers([{ kind: "address", value: addressOf(relationId) }]))[0]!;
  /** The whole recommendation chain of `user`, as "relationId: description" lines. */
  const recommend = async (user: string, limit = 100) => {
    const id = await idOf(user);
    const lines: string[] = [];
    let cursor = "";
    do {
      const page = await queries.recommendations(id, { limit, cursor }, CALLER);
      lines.push(...page.items.map((item) => `${item.user.relationId}: ${item.description}`));
      cursor = page.cursor;
    } while (cursor !== "");
    return lines;
  };
  return { store, queries, idOf, recommend };
}

describe("recommendation bounds", () => {
  // a, b, c, d touch contract 1 (four holders); a and e touch contract 2 (two holders).
  const assets = (kind: "interactions" | "nfts") =>
    graph({ users: ["a", "b", "c", "d", "e"], [kind]: [["a", 1], ["b", 1], ["c", 1], ["d", 1], ["a", 2], ["e", 2]] });

  it("a contract held by more than maxAssetHolders users contributes no candidates", async () => {
    const bounded = await queriesOver(assets("interactions"), { maxAssetHolders: 3 });
    expect(await bounded.recommend("a")).toEqual(["e: 1 contract both interacted with"]);
    const atBound = await queriesOver(assets("interactions"), { maxAssetHolders: 4 });
    // e shares the rarer contract (two holders, not four), so it ranks first.
    expect(await atBound.recommend("a")).toEqual(["e", "b", "c", "d"].map((u) => `${u}: 1 contract both interacted with`));
  });

  it("an NFT collection held by more than maxAssetHolders users contributes no candidates", async () => {
    const bounded = await queriesOver(assets("nfts"), { maxAssetHolders: 3 });
    expect(await bounded.recommend("a")).toEqual(["e: 1 NFT collection both hold"]);
    const atBound = await queriesOver(assets("nfts"), { maxAssetHolders: 4 });
    expect(await atBound.recommend("a")).toHaveLength(4);
  });

  it("expands the smallest sets first, as far as the member budget goes", async () => {
    // Contract 5 has three holders (a, x, w), contract 9 two (a, y): with room for two members only
    // contract 9 is read; with room for five both are.
    const records = graph({ users: ["a", "w", "x", "y"], interactions: [["a", 5], ["x", 5], ["w", 5], ["a", 9], ["y", 9]] });
    expect(await (await queriesOver(records, { memberBudget: 2 })).recommend("a")).toEqual(["y: 1 contract both interacted with"]);
    expect(await (await queriesOver(records, { memberBudget: 4 })).recommend("a")).toEqual(["y: 1 contract both interacted with"]);
    expect(await (await queriesOver(records, { memberBudget: 5 })).recommend("a")).toHaveLength(3);
  });

  it("expands the smallest friend sets first, whatever the order of the friends' ids, as far as the member budget goes", async () => {
    // Friend f1 (the lower id) has three friends (a, w, x), f2 two (a, y): with room for two members
    // only f2's set is read; with room for five both are.
    const records = graph({ users: ["a", "f1", "f2", "w", "x", "y"], friends: [["a", "f1"], ["a", "f2"], ["f1", "w"], ["f1", "x"], ["f2", "y"]] });
    expect(await (await queriesOver(records, { memberBudget: 2 })).recommend("a")).toEqual(["y: 1 mutual friend"]);
    expect(await (await queriesOver(records, { memberBudget: 4 })).recommend("a")).toEqual(["y: 1 mutual friend"]);
    expect(await (await queriesOver(records, { memberBudget: 5 })).recommend("a")).toHaveLength(3);
  });

  // a's friend h is a hub (friends a, p, q, r); a's friend f has friends a and z.
  const hub = graph({ users: ["a", "h", "f", "p", "q", "r", "z"], friends: [["a", "h"], ["a", "f"], ["h", "p"], ["h", "q"], ["h", "r"], ["f", "z"]] });

  it("does not expand a friend with more than maxNeighbourSet friends", async () => {
    const bounded = await queriesOver(hub, { maxNeighbourSet: 3 });
    expect(await bounded.recommend("a")).toEqual(["z: 1 mutual friend"]);
    const atBound = await queriesOver(hub, { maxNeighbourSet: 4 });
    // z's mutual friend f has two friends, the hub four: the rarer tie ranks first.
    expect(await atBound.recommend("a")).toEqual(["z", "p", "q", "r"].map((u) => `${u}: 1 mutual friend`));
  });

  it("does not expand a followed celebrity or a follower with more than maxNeighbourSet members", async () => {
    // a follows k, who is followed by a, s1, s2, s3; w follows a, t1, t2, t3 and is a's follower.
    const records = graph({
      users: ["a", "k", "s1", "s2", "s3", "w", "t1", "t2", "t3"],
      follows: [["a", "k"], ["s1", "k"], ["s2", "k"], ["s3", "k"], ["w", "a"], ["w", "t1"], ["w", "t2"], ["w", "t3"]],
    });
    expect(await (await queriesOver(records, { maxNeighbourSet: 3 })).recommend("a")).toEqual([]);
    const open = await (await queriesOver(records, { maxNeighbourSet: 4 })).recommend("a");
    // A follower in common weighs more than an account both follow (SIGNAL_WEIGHTS).
    expect(open).toEqual([
      "t1: 1 follower in common",
      "t2: 1 follower in common",
      "t3: 1 follower in common",
      "s1: 1 account both follow",
      "s2: 1 account both follow",
      "s3: 1 account both follow",
    ]);
  });

  it("sizes at most firstHopCap of a hub user's neighbours per signal, the same sample whatever order the store lists them in", async () => {
    // h has 40 friends f0…f39, each with one friend of their own (c0…c39) besides h; h follows the
    // 40 f too, who are followed by one other each.
    const fs = Array.from({ length: 40 }, (_, i) => `f${i}`);
    const cs = fs.map((_, i) => `c${i}`);
    const records = graph({
      users: ["h", ...fs, ...cs],
      friends: fs.flatMap((f, i): [string, string][] => [["h", f], [f, cs[i]!]]),
      follows: fs.flatMap((f, i): [string, string][] => [["h", f], [cs[i]!, f]]),
    });
    const sized: number[] = [];
    const counting = (store: GraphStore, reverse: boolean) =>
      new Proxy(store, {
        get: (target, name, receiver) => {
          if (name === "userSetSizes") {
            return (kind: "friends", ids: number[]) => {
              sized.push(ids.length);
              return target.userSetSizes(kind, ids);
            };
          }
          // A store listing sets in another order must not change which neighbours are kept.
          if (name === "userSet" && reverse) return async (kind: "friends", id: number) => [...(await target.userSet(kind, id))].reverse();
          return Reflect.get(target, name, receiver);
        },
      });
    const capped = await queriesOver(records, { firstHopCap: 10 }, counting(createMemoryStore(), false));
    const chain = await capped.recommend("h");
    expect(sized.length).toBeGreaterThan(0);
    expect(Math.max(...sized)).toBe(10);
    // 10 friends kept give 10 candidates by mutual friends, and 10 followings kept give the same
    // c's as followers of what h follows only where the samples meet: every line names a c.
    expect(chain.length).toBeGreaterThanOrEqual(10);
    expect(chain.length).toBeLessThan(40);
    expect(chain.every((line) => /^c\d+: /.test(line))).toBe(true);
    const reversed = await queriesOver(records, { firstHopCap: 10 }, counting(createMemoryStore(), true));
    expect(await reversed.recommend("h")).toEqual(chain);
    sized.length = 0;
    const whole = await queriesOver(records, { firstHopCap: 40 }, counting(createMemoryStore(), false));
    expect(await whole.recommend("h")).toHaveLength(40);
    expect(Math.max(...sized)).toBe(40);
  });

  it("ends the chain after maxResults users, the best ones", async () => {
    const capped = await queriesOver(hub, { maxResults: 2 });
    expect(await capped.recommend("a", 1)).toEqual(["z: 1 mutual friend", "p: 1 mutual friend"]);
  });
});

describe("recommendation order", () => {
  it("pages through the same chain a brute-force weighted count gives: by score, ties by relationId, cut at maxResults", async () => {
    // A dense random graph with many equal scores, so that runs of ties straddle pages and the cutoff.
    const rng = createPrng("recommendation-order");
    const users = Array.from({ length: 60 }, (_, i) => `u${(i * 37) % 60}`);
    const pairs = <T>(count: number, pick: () => T) => Array.from({ length: count }, pick);
    const user = () => users[rng.int(users.length)]!;
    const spec = {
      users,
      friends: pairs(150, () => [user(), user()] as [string, string]).filter(([a, b]) => a !== b),
      follows: pairs(200, () => [user(), user()] as [string, string]).filter(([a, b]) => a !== b),
      interactions: pairs(80, () => [user(), rng.int(12)] as [string, number]),
      nfts: pairs(60, () => [user(), rng.int(10)] as [string, number]),
    };
    const maxResults = 23;
    const unbounded = { maxResults, memberBudget: 1e9, maxNeighbourSet: 1e9, maxAssetHolders: 1e9 };
    const { recommend } = await queriesOver(graph(spec), unbounded);

    const setsOf = <T>(links: [string, T][]) => {
      const sets = new Map(users.map((u) => [u, new Set<T>()]));
      for (const [u, x] of links) sets.get(u)!.add(x);
      return sets;
    };
    const friends = setsOf([...spec.friends, ...spec.friends.map(([a, b]) => [b, a] as [string, string])]);
    const following = setsOf(spec.follows);
    const followers = setsOf(spec.follows.map(([from, to]) => [to, from] as [string, string]));
    const contracts = setsOf(spec.interactions);
    const nfts = setsOf(spec.nfts);
    const common = <T>(x: Set<T>, y: Set<T>) => [...x].filter((item) => y.has(item));
    // Each shared item weighs by the size of the set it is read from: its friends, its holders, its followers…
    const sizeIn = <T>(sets: Map<string, Set<T>>, item: T) => [...sets.values()].filter((set) => set.has(item)).length;
    const expected = (u: string) =>
      users
        .filter((c) => c !== u && !friends.get(u)!.has(c))
        .map((c) => {
          const shared = {
            mutualFriends: common(friends.get(u)!, friends.get(c)!).map((w) => friends.get(w)!.size),
            sharedContracts: common(contracts.get(u)!, contracts.get(c)!).map((k) => sizeIn(contracts, k)),
            sharedNfts: common(nfts.get(u)!, nfts.get(c)!).map((k) => sizeIn(nfts, k)),
            sharedFollowings: common(following.get(u)!, following.get(c)!).map((w) => followers.get(w)!.size),
            sharedFollowers: common(followers.get(u)!, followers.get(c)!).map((w) => following.get(w)!.size),
          };
          const row = SIGNALS.map((signal) => shared[signal].length);
          const score = SIGNALS.reduce((sum, signal) => shared[signal].reduce((total, size) => total + occurrenceWeight(signal, size), sum), 0);
          return { c, row, score };
        })
        .filter(({ score }) => score > 0)
        .sort((x, y) => y.score - x.score || (x.c < y.c ? -1 : 1))
        .slice(0, maxResults)
        .map(({ c, row }) => `${c}: ${describeCandidate(row)}`);

    for (const u of users.slice(0, 12)) {
      const chain = expected(u);
      for (const limit of [1, 4, 7, 100]) expect(await recommend(u, limit)).toEqual(chain);
    }
  });
});

describe("recommendation hydration", () => {
  it("describes each user served by its own counts when a ranked user vanished before hydration", async () => {
    // b: 2 mutual friends (m, n); c: 1 (m). b's record is gone by the time the page is hydrated.
    const records = graph({ users: ["a", "b", "c", "m", "n"], friends: [["a", "m"], ["a", "n"], ["m", "b"], ["n", "b"], ["m", "c"]] });
    const store = createMemoryStore();
    let vanished: number | null = null;
    const forgetting = new Proxy(store, {
      get: (target, name, receiver) =>
        name === "users"
          ? async (ids: number[]) => (await target.users(ids)).map((user) => (user?.id === vanished ? null : user))
          : Reflect.get(target, name, receiver),
    });
    const { queries, idOf } = await queriesOver(records, {}, forgetting);
    vanished = await idOf("b");
    const page = await queries.recommendations(await idOf("a"), { limit: 10, cursor: "" }, CALLER);
    expect(page.items.map((item) => `${item.user.relationId}: ${item.description}`)).toEqual(["c: 1 mutual friend"]);
  });
});

describe("recommendation reads", () => {
  it("reads the relationIds of a page in one store call when no scores tie", async () => {
    // c_i is a friend of a's friends f1 … f_i: six candidates, six distinct scores, six runs.
    const fs = ["f1", "f2", "f3", "f4", "f5", "f6"];
    const cs = ["c1", "c2", "c3", "c4", "c5", "c6"];
    const friends: [string, string][] = [...fs.map((f): [string, string] => ["a", f])];
    cs.forEach((c, i) => fs.slice(0, i + 1).forEach((f) => friends.push([f, c])));
    const store = createMemoryStore();
    let reads = 0;
    const counting = new Proxy(store, {
      get: (target, name, receiver) =>
        name === "relationIds"
          ? (ids: number[]) => {
              reads++;
              return target.relationIds(ids);
            }
          : Reflect.get(target, name, receiver),
    });
    const { queries, idOf } = await queriesOver(graph({ users: ["a", ...fs, ...cs], friends }), {}, counting);
    const a = await idOf("a");
    reads = 0;
    const whole = await queries.recommendations(a, { limit: 10, cursor: "" }, CALLER);
    expect(whole.items.map((item) => item.user.relationId)).toEqual(["c6", "c5", "c4", "c3", "c2", "c1"]);
    expect(reads).toBe(1);
    reads = 0;
    const first = await queries.recommendations(a, { limit: 3, cursor: "" }, CALLER);
    const rest = await queries.recommendations(a, { limit: 3, cursor: first.cursor }, CALLER);
    expect([...first.items, ...rest.items].map((item) => item.user.relationId)).toEqual(["c6", "c5", "c4", "c3", "c2", "c1"]);
    expect(reads).toBe(2);
  });
});

describe("recommendation snapshots", () => {
  const base = graph({ users: ["a", "b", "c", "d", "m"], friends: [["a", "m"], ["m", "b"], ["m", "c"], ["m", "d"]] });
  const newcomer = graph({ users: ["n"], friends: [["a", "n"], ["n", "b"]] });

  it("serves the rest of a chain from its snapshot even when the graph changes meanwhile", async () => {
    const { queries, idOf, store } = await queriesOver(base);
    const a = await idOf("a");
    const first = await queries.recommendations(a, { limit: 1, cursor: "" }, CALLER);
    expect(first.items.map((i) => i.user.relationId)).toEqual(["b"]);
    // n becomes a's friend and b's: b now has 2 mutual friends, and n leaves the candidates.
    await ingestRecords(store, newcomer);
    const rest = await queries.recommendations(a, { limit: 10, cursor: first.cursor }, CALLER);
    expect(rest.items.map((i) => `${i.user.relationId}: ${i.description}`)).toEqual(["c: 1 mutual friend", "d: 1 mutual friend"]);
    expect(rest.cursor).toBe("");
    const fresh = await queries.recommendations(a, { limit: 10, cursor: "" }, CALLER);
    expect(fresh.items.map((i) => `${i.user.relationId}: ${i.description}`)).toEqual(["b: 2 mutual friends", "c: 1 mutual friend", "d: 1 mutual friend"]);
  });

  it("rebuilds an evicted snapshot while the graph is unchanged, and refuses the cursor once it changed", async () => {
    const store = createMemoryStore();
    // A store that forgets paging state, as an eviction or expiry would.
    const forgetful = new Proxy(store, {
      get: (target, name, receiver) => (name === "getPagingState" ? async () => null : Reflect.get(target, name, receiver)),
    });
    const { queries, idOf } = await queriesOver(base, {}, forgetful);
    const a = await idOf("a");
    const first = await queries.recommendations(a, { limit: 1, cursor: "" }, CALLER);
    const second = await queries.recommendations(a, { limit: 1, cursor: first.cursor }, CALLER);
    expect(second.items.map((i) => i.user.relationId)).toEqual(["c"]);
    await ingestRecords(store, newcomer);
    await expect(queries.recommendations(a, { limit: 1, cursor: second.cursor }, CALLER)).rejects.toBeInstanceOf(InvalidCursorError);
  });

  it("refuses a cursor whose stored snapshot is damaged, asking to start again", async () => {
    const store = createMemoryStore();
    // A snapshot that is not a whole number of packed candidates, as a truncated value would be.
    const damaged = new Proxy(store, {
      get: (target, name, receiver) =>
        name === "getPagingState" ? async () => Buffer.from([1, 2, 3, 4, 5]).toString("base64") : Reflect.get(target, name, receiver),
    });
    const { queries, idOf } = await queriesOver(base, {}, damaged);
    const a = await idOf("a");
    const first = await queries.recommendations(a, { limit: 1, cursor: "" }, CALLER);
    const next = queries.recommendations(a, { limit: 1, cursor: first.cursor }, CALLER);
    await expect(next).rejects.toBeInstanceOf(InvalidCursorError);
    await expect(next).rejects.toThrow(/start again with an empty cursor/);
  });

  it("binds a recommendation cursor to its user", async () => {
    const { queries, idOf } = await queriesOver(base);
    const first = await queries.recommendations(await idOf("a"), { limit: 1, cursor: "" }, CALLER);
    await expect(queries.recommendations(await idOf("b"), { limit: 1, cursor: first.cursor }, CALLER)).rejects.toBeInstanceOf(InvalidCursorError);
  });
});

describe("mutual friends and contracts", () => {
  const records = graph({
    users: ["a", "b", "u1", "u10", "u2", "u9"],
    friends: [["a", "u1"], ["a", "u10"], ["a", "u2"], ["a", "u9"], ["b", "u1"], ["b", "u10"], ["b", "u2"], ["b", "u9"]],
    interactions: [["a", 3], ["b", 3], ["a", 1], ["b", 1], ["a", 2]],
  });

  it("pages in ascending relationId string order; a cursor fits the same users named in any order", async () => {
    const { queries, idOf } = await queriesOver(records);
    const [a, b] = [await idOf("a"), await idOf("b")];
    const first = await queries.mutualFriends([a, b], { limit: 2, cursor: "" });
    expect(first.items.map((u) => u.relationId)).toEqual(["u1", "u10"]);
    const second = await queries.mutualFriends([b, a], { limit: 2, cursor: first.cursor });
    expect(second.items.map((u) => u.relationId)).toEqual(["u2", "u9"]);
    expect(second.cursor).toBe("");
    await expect(queries.mutualFriends([a, await idOf("u1")], { limit: 2, cursor: first.cursor })).rejects.toBeInstanceOf(InvalidCursorError);
  });

  it("answers the contracts every address touched, ascending, and names an unknown address", async () => {
    const { queries } = await queriesOver(records);
    expect(await queries.mutualContracts([addressOf("a"), addressOf("b")])).toEqual([contract(1), contract(3)]);
    await expect(queries.mutualContracts([addressOf("a"), addressOf("zz")])).rejects.toThrow(UserNotFoundError);
    await expect(queries.mutualContracts([addressOf("a"), addressOf("zz")])).rejects.toThrow(addressOf("zz"));
  });
});
