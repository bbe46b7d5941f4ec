import { occurrenceWeight, SIGNALS } from "../../src/domain/recommend.js";
import { DEFAULT_RECOMMENDATION_LIMITS, type RecommendationLimits } from "../../src/domain/recommendation-limits.js";
import type { IngestRecord } from "../../src/ingest/format.js";

/*
 * A reference model of the graph, built straight from ingestion records with plain Maps and Sets,
 * that answers mutual friends and recommendations the slow, obvious way. The tests compare what the
 * server says over the wire with it on graphs too large to work out by hand.
 */

/** The graph of a set of records, by relationId. */
export interface ReferenceGraph {
  users: Set<string>;
  friends: Map<string, Set<string>>;
  following: Map<string, Set<string>>;
  followers: Map<string, Set<string>>;
  contracts: Map<string, Set<string>>;
  nfts: Map<string, Set<string>>;
  contractHolders: Map<string, Set<string>>;
  nftHolders: Map<string, Set<string>>;
}

/** One recommendation: who, and how many of each signal (in SIGNALS order). */
export interface ReferenceRecommendation {
  relationId: string;
  counts: number[];
  score: number;
}

const EMPTY: ReadonlySet<string> = new Set();

function add(map: Map<string, Set<string>>, key: string, value: string): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}

/** Builds the model; records must be valid (as ingestion would accept them). */
export function referenceGraph(records: Iterable<IngestRecord>): ReferenceGraph {
  const graph: ReferenceGraph = {
    users: new Set(),
    friends: new Map(),
    following: new Map(),
    followers: new Map(),
    contracts: new Map(),
    nfts: new Map(),
    contractHolders: new Map(),
    nftHolders: new Map(),
  };
  const owner = new Map<string, string>();
  const assets: { kind: "contracts" | "nfts"; address: string; contract: string }[] = [];
  for (const record of records) {
    switch (record.type) {
      case "user":
        graph.users.add(record.relationId);
        for (const address of record.addresses) owner.set(address.toLowerCase(), record.relationId);
        break;
      case "friend":
        add(graph.friends, record.a, record.b);
        add(graph.friends, record.b, record.a);
        break;
      case "follow":
        add(graph.following, record.from, record.to);
        add(graph.followers, record.to, record.from);
        break;
      case "interaction":
      case "nft":
        assets.push({ kind: record.type === "nft" ? "nfts" : "contracts", address: record.address.toLowerCase(), contract: record.contract.toLowerCase() });
        break;
      case "release":
        break;
    }
  }
  for (const { kind, address, contract } of assets) {
    const user = owner.get(address);
    if (user === undefined) continue;
    add(graph[kind], user, contract);
    add(kind === "nfts" ? graph.nftHolders : graph.contractHolders, contract, user);
  }
  return graph;
}

/** Friends of every one of `users`, in ascending relationId order. */
export function referenceMutualFriends(graph: ReferenceGraph, users: readonly string[]): string[] {
  const [first, ...rest] = users.map((u) => graph.friends.get(u) ?? EMPTY);
  return [...(first ?? EMPTY)].filter((f) => rest.every((set) => set.has(f))).sort();
}

/**
 * The ranking the contract describes, with relgraph's documented bounds: neighbour sets and assets
 * larger than the limits contribute nothing. It refuses users for whom a signal's sets add up to more
 * than memberBudget, where which sets get expanded depends on internal ids the model does not know.
 */
export function referenceRecommendations(
  graph: ReferenceGraph,
  user: string,
  limits: RecommendationLimits = DEFAULT_RECOMMENDATION_LIMITS,
): ReferenceRecommendation[] {
  /** The user's own set of one kind, checked to expand entirely within the member budget. */
  const own = (map: Map<string, Set<string>>, reach: Map<string, Set<string>>, cap: number, what: string) => {
    const set = map.get(user) ?? EMPTY;
    let total = 0;
    for (const item of set) {
      const size = reach.get(item)?.size ?? 0;
      if (size <= cap) total += size;
    }
    if (total > limits.memberBudget) {
      throw new Error(`reference model: ${user}'s ${what} reach ${total} members, over the budget ${limits.memberBudget}`);
    }
    return set;
  };
  const friends = own(graph.friends, graph.friends, limits.maxNeighbourSet, "friends");
  const excluded = new Set([user, ...friends]);
  const counts = new Map<string, number[]>();
  const scores = new Map<string, number>();
  const tally = (slot: number, members: ReadonlySet<string>, cap: number) => {
    if (members.size > cap) return;
    for (const member of members) {
      if (excluded.has(member)) continue;
      let row = counts.get(member);
      if (!row) counts.set(member, (row = SIGNALS.map(() => 0)));
      row[slot]! += 1;
      scores.set(member, (scores.get(member) ?? 0) + occurrenceWeight(SIGNALS[slot]!, members.size));
    }
  };
  for (const friend of friends) tally(0, graph.friends.get(friend) ?? EMPTY, limits.maxNeighbourSet);
  for (const contract of own(graph.contracts, graph.contractHolders, limits.maxAssetHolders, "contracts")) {
    tally(1, graph.contractHolders.get(contract) ?? EMPTY, limits.maxAssetHolders);
  }
  for (const nft of own(graph.nfts, graph.nftHolders, limits.maxAssetHolders, "NFTs")) tally(2, graph.nftHolders.get(nft) ?? EMPTY, limits.maxAssetHolders);
  for (const followed of own(graph.following, graph.followers, limits.maxNeighbourSet, "followings")) {
    tally(3, graph.followers.get(followed) ?? EMPTY, limits.maxNeighbourSet);
  }
  for (const follower of own(graph.followers, graph.following, limits.maxNeighbourSet, "followers")) {
    tally(4, graph.following.get(follower) ?? EMPTY, limits.maxNeighbourSet);
  }
  const ranked = [...counts].map(([relationId, row]) => ({ relationId, counts: row, score: scores.get(relationId)! }));
  ranked.sort((a, b) => b.score - a.score || (a.relationId < b.relationId ? -1 : 1));
  return ranked.slice(0, limits.maxResults);
}

/** Whether referenceRecommendations can model the user: every signal fits the member budget. */
export function isModelable(graph: ReferenceGraph, user: string, limits: RecommendationLimits = DEFAULT_RECOMMENDATION_LIMITS): boolean {
  try {
    referenceRecommendations(graph, user, limits);
    return true;
  } catch {
    return false;
  }
}

/** Human phrases of each signal as descriptions spell them, singular and plural. */
const PHRASES: [string, string][] = [
  ["mutual friend", "mutual friends"],
  ["contract both interacted with", "contracts both interacted with"],
  ["NFT collection both hold", "NFT collections both hold"],
  ["account both follow", "accounts both follow"],
  ["follower in common", "followers in common"],
];

/**
 * Reads a recommendation description back into signal counts (SIGNALS order). Throws when a part
 * is not "<n> <phrase>" with the right grammatical number, or names a signal twice.
 */
export function parseDescription(description: string): number[] {
  const counts = SIGNALS.map(() => 0);
  for (const part of description.split(", ")) {
    const match = /^([1-9]\d*) (.+)$/.exec(part);
    if (!match) throw new Error(`unreadable description part "${part}" in "${description}"`);
    const n = Number(match[1]);
    const slot = PHRASES.findIndex(([one, many]) => match[2] === (n === 1 ? one : many));
    if (slot < 0 || counts[slot] !== 0) throw new Error(`unknown or repeated signal "${part}" in "${description}"`);
    counts[slot] = n;
  }
  return counts;
}
