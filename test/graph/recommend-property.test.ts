import fc from "fast-check";
import type { Caller } from "../../src/domain/caller.js";
import { describe, expect, it } from "vitest";
import { createCursorCodec } from "../../src/domain/cursor.js";
import { describeCandidate, occurrenceWeight, SIGNALS, type Signal } from "../../src/domain/recommend.js";
import { GraphQueries } from "../../src/graph/queries.js";
import { DEFAULT_RECOMMENDATION_LIMITS, type RecommendationLimits } from "../../src/domain/recommendation-limits.js";
import type { IngestRecord } from "../../src/ingest/format.js";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";

/** The ApiKey every query here is asked under. */
const CALLER: Caller = { keyId: "test-key" };

/**
 * Every page of every user's recommendations, on random graphs under random bounds, against a plain
 * reference written from the rules alone (docs/reference.md, "Parameters and answers"): a fixed
 * hash sample of at most firstHopCap neighbours (or assets) per signal, the smallest of their sets
 * first within the member budget and the set bounds, one occurrence per member, weighed by its set's
 * size, the user and their friends never listed, best score first and ties by relationId, cut at
 * maxResults and served `limit` at a time. The graphs are small and dense, so that scores tie at
 * page boundaries and at the cut, and may hold a hub over the first-hop cap.
 */

const addressOf = (name: string) => `0x${Buffer.from(name).toString("hex").padStart(40, "0").slice(-40)}`;
const contract = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;

/** The first-hop sample's hashes, as the rules define them: Fibonacci hashing of a UserId, FNV-1a of an asset. */
const hashOfId = (id: number) => Math.imul(id % 2 ** 32, 0x9e3779b1) >>> 0;
const hashOfText = (text: string) => {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
};

interface Spec {
  users: number;
  friends: [number, number][];
  follows: [number, number][];
  interactions: [number, number][];
  nfts: [number, number][];
  /** Whether user 0 befriends and follows everyone (a hub, over any small first-hop cap). */
  hub: boolean;
  limits: Pick<RecommendationLimits, "maxResults" | "memberBudget" | "maxNeighbourSet" | "maxAssetHolders" | "firstHopCap">;
  pageLimits: number[];
}

const specArbitrary: fc.Arbitrary<Spec> = fc.integer({ min: 3, max: 24 }).chain((users) => {
  const user = fc.integer({ min: 0, max: users - 1 });
  const pair = fc.tuple(user, user).filter(([a, b]) => a !== b);
  const asset = fc.tuple(user, fc.integer({ min: 0, max: 5 }));
  return fc.record({
    users: fc.constant(users),
    friends: fc.array(pair, { maxLength: 60, size: "max" }),
    follows: fc.array(pair, { maxLength: 60, size: "max" }),
    interactions: fc.array(asset, { maxLength: 30, size: "max" }),
    nfts: fc.array(asset, { maxLength: 30, size: "max" }),
    hub: fc.boolean(),
    limits: fc.record({
      maxResults: fc.integer({ min: 1, max: 15 }),
      memberBudget: fc.integer({ min: 1, max: 80 }),
      maxNeighbourSet: fc.integer({ min: 1, max: 30 }),
      maxAssetHolders: fc.integer({ min: 1, max: 30 }),
      firstHopCap: fc.integer({ min: 1, max: 12 }),
    }),
    pageLimits: fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 2 }),
  });
});

/** Relation ids whose string order differs from their number order ("u10" < "u2"). */
const nameOf = (i: number) => `u${i}`;

function recordsOf(spec: Spec): IngestRecord[] {
  const friends = [...spec.friends];
  const follows = [...spec.follows];
  if (spec.hub) {
    for (let i = 1; i < spec.users; i++) {
      friends.push([0, i]);
      follows.push([0, i]);
    }
  }
  return [
    ...Array.from({ length: spec.users }, (_, i): IngestRecord => {
      const name = nameOf(i);
      return { type: "user", relationId: name, name, avatar: "", addresses: [addressOf(name)], social: null, game: null };
    }),
    ...friends.map(([a, b]): IngestRecord => ({ type: "friend", a: nameOf(a), b: nameOf(b), description: "" })),
    ...follows.map(([from, to]): IngestRecord => ({ type: "follow", from: nameOf(from), to: nameOf(to) })),
    ...spec.interactions.map(([u, c]): IngestRecord => ({ type: "interaction", address: addressOf(nameOf(u)), contract: contract(c) })),
    ...spec.nfts.map(([u, c]): IngestRecord => ({ type: "nft", address: addressOf(nameOf(u)), contract: contract(c) })),
  ];
}

/** The reference: each user's whole chain, as "relationId: description" lines, from the graph's sets alone. */
function referenceChains(spec: Spec, idOf: ReadonlyMap<string, number>): Map<string, string[]> {
  const names = Array.from({ length: spec.users }, (_, i) => nameOf(i));
  const nameOfId = new Map([...idOf].map(([name, id]) => [id, name]));
  const setsOf = <T>(links: [string, T][]) => {
    const sets = new Map(names.map((name) => [name, new Set<T>()]));
    for (const [name, item] of links) sets.get(name)!.add(item);
    return sets;
  };
  const records = recordsOf(spec);
  const friendLinks = records.flatMap((r): [string, string][] => (r.type === "friend" ? [[r.a, r.b], [r.b, r.a]] : []));
  const followLinks = records.flatMap((r): [string, string][] => (r.type === "follow" ? [[r.from, r.to]] : []));
  const friends = setsOf(friendLinks);
  const following = setsOf(followLinks);
  const followers = setsOf(followLinks.map(([from, to]) => [to, from]));
  const contracts = setsOf(spec.interactions.map(([u, c]) => [nameOf(u), contract(c)]));
  const nfts = setsOf(spec.nfts.map(([u, c]) => [nameOf(u), contract(c)]));
  const holdersOf = (held: Map<string, Set<string>>) => {
    const holders = new Map<string, Set<string>>();
    for (const [name, assets] of held) for (const asset of assets) (holders.get(asset) ?? holders.set(asset, new Set()).get(asset)!).add(name);
    return holders;
  };
  const contractHolders = holdersOf(contracts);
  const nftHolders = holdersOf(nfts);
  const { maxResults, memberBudget, maxNeighbourSet, maxAssetHolders, firstHopCap } = spec.limits;

  /** The sets one signal counts: the sample's smallest sets first, while they fit the budget. */
  const expand = <T extends number | string>(items: T[], hash: (item: T) => number, setOf: (item: T) => Set<string>, maxSet: number) => {
    const sample = items.length <= firstHopCap ? items : [...items].sort((a, b) => hash(a) - hash(b)).slice(0, firstHopCap);
    const sized = sample
      .map((item) => ({ item, set: setOf(item) }))
      .filter(({ set }) => set.size > 0 && set.size <= maxSet)
      .sort((a, b) => a.set.size - b.set.size || (a.item < b.item ? -1 : a.item > b.item ? 1 : 0));
    const chosen: Set<string>[] = [];
    let total = 0;
    for (const { set } of sized) {
      if (total + set.size > memberBudget) break;
      total += set.size;
      chosen.push(set);
    }
    return chosen;
  };
  const ids = (set: Set<string>) => [...set].map((name) => idOf.get(name)!);
  const byId = (of: Map<string, Set<string>>) => (id: number) => of.get(nameOfId.get(id)!)!;

  const chains = new Map<string, string[]>();
  for (const user of names) {
    const sets: Record<Signal, Set<string>[]> = {
      mutualFriends: expand(ids(friends.get(user)!), hashOfId, byId(friends), maxNeighbourSet),
      sharedFollowings: expand(ids(following.get(user)!), hashOfId, byId(followers), maxNeighbourSet),
      sharedFollowers: expand(ids(followers.get(user)!), hashOfId, byId(following), maxNeighbourSet),
      sharedContracts: expand([...contracts.get(user)!], hashOfText, (k) => contractHolders.get(k)!, maxAssetHolders),
      sharedNfts: expand([...nfts.get(user)!], hashOfText, (k) => nftHolders.get(k)!, maxAssetHolders),
    };
    const rows = new Map<string, { score: number; counts: number[] }>();
    SIGNALS.forEach((signal, s) => {
      for (const set of sets[signal]) {
        for (const candidate of set) {
          if (candidate === user || friends.get(user)!.has(candidate)) continue;
          const row = rows.get(candidate) ?? { score: 0, counts: SIGNALS.map(() => 0) };
          row.score += occurrenceWeight(signal, set.size);
          row.counts[s]! += 1;
          rows.set(candidate, row);
        }
      }
    });
    chains.set(
      user,
      [...rows]
        .sort(([a, x], [b, y]) => y.score - x.score || (a < b ? -1 : 1))
        .slice(0, maxResults)
        .map(([candidate, row]) => `${candidate}: ${describeCandidate(row.counts)}`),
    );
  }
  return chains;
}

describe("recommendations against a plain reference (property)", () => {
  it("serves every page of every user exactly as the rules rank them, on random graphs under random bounds", async () => {
    await fc.assert(
      fc.asyncProperty(specArbitrary, async (spec) => {
        const store = createMemoryStore();
        await ingestRecords(store, recordsOf(spec));
        const queries = new GraphQueries(store, createCursorCodec(Buffer.alloc(32, 7)), { ...DEFAULT_RECOMMENDATION_LIMITS, ...spec.limits });
        const names = Array.from({ length: spec.users }, (_, i) => nameOf(i));
        const resolved = await queries.resolveUsers(names.map((name) => ({ kind: "address", value: addressOf(name) })));
        const idOf = new Map(names.map((name, i) => [name, resolved[i]!]));
        const expected = referenceChains(spec, idOf);
        for (const name of names) {
          for (const limit of spec.pageLimits) {
            const pages: string[][] = [];
            let cursor = "";
            do {
              const page = await queries.recommendations(idOf.get(name)!, { limit, cursor }, CALLER);
              pages.push(page.items.map((item) => `${item.user.relationId}: ${item.description}`));
              cursor = page.cursor;
            } while (cursor !== "" && pages.length <= 100);
            // Full pages, then what is left; a next page offered only while users remain.
            const chain = expected.get(name)!;
            const chunks = Array.from({ length: Math.max(1, Math.ceil(chain.length / limit)) }, (_, i) => chain.slice(i * limit, (i + 1) * limit));
            expect(pages).toEqual(chunks);
          }
        }
      }),
      { seed: 20261126, numRuns: 150 },
    );
  });
});
