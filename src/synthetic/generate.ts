/**
 * A seeded synthetic social graph in the ingestion format, for the bundled demo and the benchmark.
 * The same options always give the same records. Structure, chosen to stress what real graphs do:
 *
 * - Friends: a Chung–Lu graph with power-law expected degrees (exponent 3, the exponent of
 *   preferential attachment), so that a few hubs have thousands of friends, plus a share of edges
 *   closing triangles (a friend of a friend), so that mutual friends are common.
 * - Follows: each friend is followed with probability 1/2, plus a few follows of popular users.
 * - Interactions and NFTs: contracts and NFT collections with Zipf popularity. Contract 0 plays a
 *   DEX router that most users touch; a share of interacting EOAs belong to no user.
 * - Releases: most users release to everyone, some to a subset of their friends, some to no one.
 *
 * Users are u1 … uN. u1 … u10 are demo users (Alice, Bob, … Judy) whose first address is
 * demoWallet(i); they are wired together so that every operation has a meaningful answer for u1.
 * The graph is built in typed arrays and records are yielded one at a time, so a large dataset is
 * never held as text.
 */
import { buildAdjacency, type Adjacency } from "./adjacency.js";
import type { IngestRecord, ReleaseLine, UserLine } from "../ingest/format.js";
import { DEMO_WALLETS, demoWallet } from "./demo-wallet.js";
import { createPrng, type Prng } from "./prng.js";

/** Options of generateRecords. */
export interface GenerateOptions {
  /** Number of users, u1 … uN. */
  users: number;
  /** Any text or number; the same seed gives the same records. */
  seed: string | number;
  /** Target mean number of friends per user; default 50 (at most users - 1). */
  meanDegree?: number;
  /** Share of friend edges that close a triangle (made between friends of friends), from 0 to 1; default 0.35. */
  triadicClosure?: number;
}

const DEFAULT_MEAN_DEGREE = 50;
const DEFAULT_TRIADIC_CLOSURE = 0.35;
const FOLLOW_FRIEND_PROBABILITY = 0.5;
const MEAN_POPULAR_FOLLOWS = 2;
const ROUTER_SHARE = 0.55;
const MEAN_CONTRACT_PICKS = 4;
const NFT_HOLDER_SHARE = 0.7;
const SOCIAL_SHARE = 0.85;
const GAME_SHARE = 0.6;

const DEMO_NAMES = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy"];
// Demo wiring, by user number: u1 and u2 are friends with two mutual friends (u3, u4).
const DEMO_FRIENDS: [number, number][] = [[1, 2], [1, 3], [1, 4], [2, 3], [2, 4], [3, 5], [4, 6]];
// u1 follows a friend and a non-friend; u6 and u7 follow u1.
const DEMO_FOLLOWS: [number, number][] = [[1, 2], [1, 5], [2, 5], [6, 1], [6, 2], [7, 1]];

const FIRST_NAMES = [
  "Ada", "Ben", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana", "Ines", "Jon", "Kai", "Lena", "Mateo", "Nia",
  "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tariq", "Uma", "Vik", "Wen", "Xavi", "Yara", "Zoe",
];
const LAST_NAMES = [
  "Ahmed", "Brown", "Costa", "Dubois", "Evans", "Fischer", "Garcia", "Haddad", "Ito", "Jensen", "Kim", "Lopez",
  "Mensah", "Novak", "Okafor", "Park", "Rossi", "Silva", "Tanaka", "Usman", "Vargas", "Weber", "Yilmaz", "Zhang",
];
const DESCRIPTIONS = [
  "Followed each other on social",
  "Played together in game",
  "Traded NFTs with each other",
  "Members of the same DAO",
  "Co-signers of a multisig",
  "Met at a hackathon",
  "Introduced by a mutual friend",
  "Same guild",
];

/**
 * Yields a synthetic dataset as ingestion records: users, then friends, follows, interactions,
 * NFTs and releases. Throws RangeError at once for unusable options.
 */
export function generateRecords(options: GenerateOptions): Generator<IngestRecord> {
  const users = options.users;
  const meanDegree = options.meanDegree ?? Math.min(DEFAULT_MEAN_DEGREE, users - 1);
  const closure = options.triadicClosure ?? DEFAULT_TRIADIC_CLOSURE;
  if (!Number.isInteger(users) || users < 1 || users > 50_000_000) {
    throw new RangeError(`users must be an integer from 1 to 50000000, got ${users}`);
  }
  if (!(meanDegree >= 0 && meanDegree <= users - 1)) {
    throw new RangeError(`meanDegree must be from 0 to users - 1 (${users - 1}), got ${meanDegree}`);
  }
  if (!(closure >= 0 && closure <= 1)) throw new RangeError(`triadicClosure must be from 0 to 1, got ${closure}`);
  return records(users, meanDegree, closure, createPrng(`relgraph-generate:${options.seed}`));
}

/** The same records as JSON Lines, one line (with its newline) at a time. */
export function generateJsonLines(options: GenerateOptions): Generator<string> {
  const records = generateRecords(options);
  return (function* () {
    for (const record of records) yield `${JSON.stringify(record)}\n`;
  })();
}

function* records(n: number, meanDegree: number, closure: number, rng: Prng): Generator<IngestRecord> {
  const popular = aliasSampler(popularity(n, rng), rng);
  const graph = friendGraph(n, meanDegree, closure, popular, rng);
  const addresses: string[][] = [];
  for (let u = 0; u < n; u++) {
    const user = userRecord(u, rng);
    addresses.push(user.addresses);
    yield user;
  }
  for (let u = 0; u < n; u++) {
    for (const v of graph.neighbors(u)) {
      if (v > u) yield { type: "friend", a: rel(u), b: rel(v), description: DESCRIPTIONS[rng.int(DESCRIPTIONS.length)]! };
    }
  }
  yield* followRecords(graph, popular, rng);
  yield* interactionRecords(addresses, rng);
  yield* nftRecords(addresses, rng);
  yield* releaseRecords(graph, rng);
}

function rel(u: number): string {
  return `u${u + 1}`;
}

/**
 * Expected-degree weights: (rank + 1)^-1/2 over a random ranking, a power law of exponent 3. u1 is
 * placed at the 99th percentile, well connected but not a hub, so that its demo answers page nicely.
 */
function popularity(n: number, rng: Prng): Float64Array {
  const rank = new Uint32Array(n);
  for (let i = 0; i < n; i++) rank[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [rank[i], rank[j]] = [rank[j]!, rank[i]!];
  }
  const holder = rank.indexOf(Math.floor(n / 100));
  [rank[0], rank[holder]] = [rank[holder]!, rank[0]!];
  return Float64Array.from(rank, (r) => 1 / Math.sqrt(r + 1));
}

/** An undirected simple graph in compressed sparse rows. */
type Graph = Adjacency;

function friendGraph(n: number, meanDegree: number, closure: number, pick: () => number, rng: Prng): Graph {
  const total = Math.round((n * meanDegree) / 2);
  const direct = n < 2 ? 0 : Math.round(total * (1 - closure));
  const edges = new EdgeList(total + DEMO_FRIENDS.length);
  for (const [a, b] of DEMO_FRIENDS) if (b <= n) edges.push(a - 1, b - 1);
  for (let e = 0; e < direct; e++) {
    const a = pick();
    let b = pick();
    while (b === a) b = pick();
    edges.push(a, b);
  }
  const base = buildGraph(n, edges);
  for (let e = 0; e < total - direct; e++) {
    const u = pick();
    const friendsOfU = base.neighbors(u);
    if (friendsOfU.length === 0) continue;
    const friendsOfV = base.neighbors(friendsOfU[rng.int(friendsOfU.length)]!);
    const w = friendsOfV[rng.int(friendsOfV.length)]!;
    if (w !== u) edges.push(u, w);
  }
  return buildGraph(n, edges);
}

class EdgeList {
  readonly from: Uint32Array;
  readonly to: Uint32Array;
  length = 0;
  constructor(capacity: number) {
    this.from = new Uint32Array(capacity);
    this.to = new Uint32Array(capacity);
  }
  push(a: number, b: number): void {
    this.from[this.length] = a;
    this.to[this.length++] = b;
  }
}

/** Builds the symmetric adjacency of the edges, dropping repeated edges. */
function buildGraph(n: number, edges: EdgeList): Graph {
  return buildAdjacency(n, edges.from.subarray(0, edges.length), edges.to.subarray(0, edges.length));
}

/** Vose's alias method: O(1) draws of an index with probability proportional to its weight. */
function aliasSampler(weights: Float64Array, rng: Prng): () => number {
  const n = weights.length;
  const sum = weights.reduce((total, w) => total + w, 0);
  const scaled = weights.map((w) => (w * n) / sum);
  const probability = new Float64Array(n).fill(1);
  const alias = new Uint32Array(n);
  const small: number[] = [];
  const large: number[] = [];
  scaled.forEach((p, i) => (p < 1 ? small : large).push(i));
  while (small.length > 0 && large.length > 0) {
    const s = small.pop()!;
    const l = large.pop()!;
    probability[s] = scaled[s]!;
    alias[s] = l;
    scaled[l] = scaled[l]! + scaled[s]! - 1;
    (scaled[l]! < 1 ? small : large).push(l);
  }
  return () => {
    const i = rng.int(n);
    return rng.next() < probability[i]! ? i : alias[i]!;
  };
}

/** Zipf weights 1 / (rank + 1)^s: index 0 is the most popular. */
function zipf(n: number, s: number): Float64Array {
  return Float64Array.from({ length: n }, (_, r) => 1 / (r + 1) ** s);
}

/** A geometric count (0, 1, 2, …) with the given mean. */
function geometric(rng: Prng, mean: number): number {
  return Math.floor(Math.log(1 - rng.next()) / Math.log(mean / (mean + 1)));
}

function randomAddress(rng: Prng): string {
  let hex = "0x";
  for (let i = 0; i < 5; i++) hex += rng.uint32().toString(16).padStart(8, "0");
  return hex;
}

function userRecord(u: number, rng: Prng): UserLine {
  const relationId = rel(u);
  const avatar = `https://avatars.relgraph.example/${relationId}.png`;
  const gameId = `76561198${String(u + 1).padStart(9, "0")}`;
  if (u < DEMO_WALLETS) {
    const name = DEMO_NAMES[u]!;
    const username = name.toLowerCase();
    // u1 has a second address, with no demo key, to show a user with several addresses.
    const addresses = u === 0 ? [demoWallet(1).address, randomAddress(rng)] : [demoWallet(u + 1).address];
    return {
      type: "user",
      relationId,
      name,
      avatar,
      addresses,
      social: { username, name, avatar: `https://social.relgraph.example/avatars/${username}.png` },
      game: { gameId, name: `${username}_g`, avatar: `https://game.relgraph.example/avatars/${gameId}.png` },
    };
  }
  const first = FIRST_NAMES[rng.int(FIRST_NAMES.length)]!;
  const last = LAST_NAMES[rng.int(LAST_NAMES.length)]!;
  const count = rng.next() < 0.7 ? 1 : rng.next() < 0.75 ? 2 : 3;
  const addresses = Array.from({ length: count }, () => randomAddress(rng));
  // Some usernames keep their capitals: ingestion and queries match them case-insensitively.
  const handle = `${first}_${last}${u + 1}`;
  const username = rng.next() < 0.1 ? handle : handle.toLowerCase();
  const social =
    rng.next() < SOCIAL_SHARE
      ? { username, name: `${first} ${last}`, avatar: `https://social.relgraph.example/avatars/${handle.toLowerCase()}.png` }
      : null;
  const game =
    rng.next() < GAME_SHARE
      ? { gameId, name: `${first.toLowerCase()}${rng.int(1000)}`, avatar: `https://game.relgraph.example/avatars/${gameId}.png` }
      : null;
  return { type: "user", relationId, name: `${first} ${last}`, avatar, addresses, social, game };
}

function* followRecords(graph: Graph, popular: () => number, rng: Prng): Generator<IngestRecord> {
  const n = graph.size;
  const targets = new Set<number>();
  for (let u = 0; u < n; u++) {
    targets.clear();
    for (const v of graph.neighbors(u)) if (rng.next() < FOLLOW_FRIEND_PROBABILITY) targets.add(v);
    for (let k = geometric(rng, MEAN_POPULAR_FOLLOWS); k > 0; k--) {
      const v = popular();
      if (v !== u) targets.add(v);
    }
    for (const [from, to] of DEMO_FOLLOWS) if (from === u + 1 && to <= n) targets.add(to - 1);
    for (const v of targets) yield { type: "follow", from: rel(u), to: rel(v) };
  }
}

function* interactionRecords(addresses: string[][], rng: Prng): Generator<IngestRecord> {
  const n = addresses.length;
  const contracts = Array.from({ length: Math.max(20, Math.ceil(n / 10)) }, () => randomAddress(rng));
  const pick = aliasSampler(zipf(contracts.length, 1.1), rng);
  for (let u = 0; u < n; u++) {
    const own = addresses[u]!;
    const picks: [number, number][] = [];
    if (u < DEMO_WALLETS) picks.push([0, 0], [0, 1]);
    else if (rng.next() < ROUTER_SHARE) picks.push([0, 0]);
    for (let k = geometric(rng, MEAN_CONTRACT_PICKS); k > 0; k--) picks.push([rng.int(own.length), pick()]);
    yield* assetRecords("interaction", own, contracts, picks);
  }
  // EOAs that belong to no user still interact; mutual-contract queries may name them.
  for (let e = Math.ceil(n / 20); e > 0; e--) {
    const own = [randomAddress(rng)];
    const picks = Array.from({ length: 1 + rng.int(3) }, (): [number, number] => [0, pick()]);
    yield* assetRecords("interaction", own, contracts, picks);
  }
}

function* nftRecords(addresses: string[][], rng: Prng): Generator<IngestRecord> {
  const n = addresses.length;
  const collections = Array.from({ length: Math.max(10, Math.ceil(n / 50)) }, () => randomAddress(rng));
  const pick = aliasSampler(zipf(collections.length, 1.2), rng);
  for (let u = 0; u < n; u++) {
    const own = addresses[u]!;
    const picks: [number, number][] = [];
    if (u < DEMO_WALLETS) picks.push([0, 0]);
    else if (rng.next() < NFT_HOLDER_SHARE) {
      for (let k = 1 + geometric(rng, 1); k > 0; k--) picks.push([rng.int(own.length), pick()]);
    }
    yield* assetRecords("nft", own, collections, picks);
  }
}

/** Records for (address index, contract index) picks, each pair once. */
function* assetRecords(
  type: "interaction" | "nft",
  own: readonly string[],
  contracts: readonly string[],
  picks: readonly [number, number][],
): Generator<IngestRecord> {
  const seen = new Set<number>();
  for (const [a, c] of picks) {
    const key = a * contracts.length + c;
    if (seen.has(key)) continue;
    seen.add(key);
    yield { type, address: own[a]!, contract: contracts[c]! };
  }
}

function* releaseRecords(graph: Graph, rng: Prng): Generator<ReleaseLine> {
  const n = graph.size;
  for (let u = 0; u < n; u++) {
    const relationId = rel(u);
    if (u === 1 && n >= 3) {
      // Bob releases only Alice and Carol, to show a partial release.
      yield { type: "release", relationId, peers: ["u1", "u3"] };
      continue;
    }
    if (u < DEMO_WALLETS) {
      yield { type: "release", relationId, peers: "*" };
      continue;
    }
    const r = rng.next();
    if (r < 0.8) {
      yield { type: "release", relationId, peers: "*" };
    } else if (r < 0.92) {
      const peers = [...graph.neighbors(u)].filter(() => rng.next() < 0.5).map(rel);
      yield { type: "release", relationId, peers };
    }
  }
}
