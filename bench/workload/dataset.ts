import { createHash } from "node:crypto";
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { Wallet } from "ethers";
import type { IngestRecord } from "../../src/ingest/format.js";
import { generateRecords } from "../../src/synthetic/generate.js";
import { createPrng, type Prng } from "../../src/synthetic/prng.js";
import { buildAdjacency, type Adjacency } from "../../src/synthetic/adjacency.js";
import { commonCount } from "./graph-index.js";

/*
 * The bench dataset: the seeded generator's records (power-law friends, triadic closure, Zipf
 * contracts and NFTs), written as JSON Lines for `relgraph ingest`, plus a few users whose
 * addresses belong to wallets the bench holds, so that it can sign SIWE messages for Profile and
 * Relationship graph. While writing, the bench keeps what it needs to sample queries by degree band:
 * every friend edge and every address's contracts. It never asks Redis.
 */

/** A user the bench queries. */
export interface BenchUser {
  relationId: string;
  /** The user's first address, lowercase. */
  address: string;
  /** Number of friends. */
  degree: number;
}

/** A bench user whose address belongs to a wallet the bench can sign with. */
export interface WalletUser extends BenchUser {
  wallet: Wallet;
}

/** Two users and how many friends they share (computed by the bench from the records). */
export interface UserPair {
  a: BenchUser;
  b: BenchUser;
  mutual: number;
}

/** Two addresses and how many contracts both interacted with. */
export interface AddressPair {
  a: string;
  b: string;
  common: number;
}

/** The degree bands the issue asks to report separately. */
export type PairBand = "median-median" | "p99-p99" | "median-hub" | "hub-hub";

/** Options of createDataset. */
export interface DatasetOptions {
  users: number;
  seed: string;
  file: string;
  /** Users with bench-held wallets, befriended to median users. */
  wallets: number;
  /** Pairs sampled per band (hub×hub may have fewer: every pair of hubs). */
  pairsPerBand: number;
  /** Median-band users sampled for recommendations (fewer when the band is smaller). */
  recommendUsers: number;
  /** Users with at least this many friends are hubs. */
  hubDegree: number;
  /** Hubs used when fewer than two users reach hubDegree (small graphs): the best-connected ones. */
  fallbackHubs: number;
}

/** The shape of the bench's dataset besides its size and seed: what `npm run bench` and the lab tools generate. */
export const BENCH_DATASET = {
  wallets: 20,
  pairsPerBand: 50,
  /**
   * Users asked for recommendations: relgraph caches the neighbour sets a recommendation reads (until
   * they change), so a run should ask about as many different users as it makes calls, as a
   * service asked by many people does, rather than measure a few users' cached neighbourhoods.
   */
  recommendUsers: 20_000,
  hubDegree: 5_000,
  fallbackHubs: 5,
} as const satisfies Omit<DatasetOptions, "users" | "seed" | "file">;

/** Above this many users, `relgraph ingest` of the dataset gets a larger heap: its validator holds the whole load. */
const LARGE_LOAD_USERS = 50_000;
const LARGE_LOAD_HEAP_MB = 16_384;

/** The Node flags `relgraph ingest` of a dataset of `users` users runs with. */
export function loadHeapFlags(users: number): string[] {
  return users > LARGE_LOAD_USERS ? [`--max-old-space-size=${LARGE_LOAD_HEAP_MB}`] : [];
}

/** What the bench wrote and sampled. */
export interface Dataset {
  file: string;
  records: number;
  bytes: number;
  users: number;
  friendEdges: number;
  generateSeconds: number;
  degrees: { mean: number; median: number; p99: number; max: number; atLeastHubDegree: number };
  bands: Record<"median" | "p99" | "hub", { minDegree: number; maxDegree: number; users: number }>;
  pairs: Record<PairBand, UserPair[]>;
  contractPairs: AddressPair[];
  /** Median-band users for Multi-dimensional recommendation. */
  recommendUsers: BenchUser[];
  /** The hub band, for Multi-dimensional recommendation of users whose own degree is highest. */
  hubUsers: BenchUser[];
  wallets: WalletUser[];
  /**
   * Friend and follow edges of the generated graph, a uniform sample without repeats, in random
   * order: what the change records delete (workload/changes.ts).
   */
  storedEdges: StoredEdges;
}

/** Edges by relationId: friends [a, b], follows [from, to]. */
export interface StoredEdges {
  friends: [string, string][];
  follows: [string, string][];
}

/** Edges of each kind sampled for storedEdges: deletes for two runs of 1M changes (15% and 10% of each). */
const STORED_EDGE_SAMPLE = 400_000;

/** How many 2-hop visits pair sampling may spend per band, to bound its time on large graphs. */
const PAIR_SEARCH_BUDGET = 40_000_000;
const WRITE_CHUNK = 1 << 20;

/** Generates the dataset file and samples the bench's queries from it. */
export async function createDataset(options: DatasetOptions): Promise<Dataset> {
  const started = performance.now();
  const rng = createPrng(`relgraph-bench:${options.seed}`);
  const n = options.users;
  const firstAddress: string[] = new Array<string>(n);
  const edges = new EdgeBuffer();
  const contractIds = new Map<string, number>();
  const contractsOf = new Map<string, number[]>();

  // A stream of its own, so that the samples drawn with `rng` stay what they were before this one.
  const edgeRng = createPrng(`relgraph-bench:${options.seed}:stored-edges`);
  const storedEdges: StoredEdges = { friends: [], follows: [] };
  const seen = { friends: 0, follows: 0 };
  // Algorithm R: each edge of the kind ends in the sample with the same chance.
  const keep = (kind: keyof StoredEdges, edge: [string, string]) => {
    const index = seen[kind]++;
    if (index < STORED_EDGE_SAMPLE) storedEdges[kind].push(edge);
    else {
      const slot = edgeRng.int(index + 1);
      if (slot < STORED_EDGE_SAMPLE) storedEdges[kind][slot] = edge;
    }
  };

  const out = createWriteStream(options.file);
  let buffer = "";
  let records = 0;
  let bytes = 0;
  const write = async (record: IngestRecord) => {
    buffer += `${JSON.stringify(record)}\n`;
    records++;
    if (buffer.length >= WRITE_CHUNK) await flush();
  };
  const flush = async () => {
    bytes += Buffer.byteLength(buffer);
    if (!out.write(buffer)) await once(out, "drain");
    buffer = "";
  };

  for (const record of generateRecords({ users: n, seed: options.seed })) {
    switch (record.type) {
      case "user":
        firstAddress[userIndex(record.relationId)] = (record.addresses[0] ?? "").toLowerCase();
        break;
      case "friend":
        edges.push(userIndex(record.a), userIndex(record.b));
        keep("friends", [record.a, record.b]);
        break;
      case "follow":
        keep("follows", [record.from, record.to]);
        break;
      case "interaction": {
        let id = contractIds.get(record.contract);
        if (id === undefined) contractIds.set(record.contract, (id = contractIds.size));
        const list = contractsOf.get(record.address);
        if (list) list.push(id);
        else contractsOf.set(record.address, [id]);
        break;
      }
    }
    await write(record);
  }
  const generatedEdges = edges.length;

  const degree = new Uint32Array(n);
  for (let e = 0; e < edges.length; e++) {
    degree[edges.from[e]!]!++;
    degree[edges.to[e]!]!++;
  }
  const sorted = Uint32Array.from(degree).sort();
  const median = sorted[Math.floor((n - 1) / 2)]!;
  const p99 = sorted[Math.floor((n - 1) * 0.99)]!;
  const max = sorted[n - 1]!;
  const near = (target: number) => {
    const slack = Math.max(2, Math.round(target * 0.1));
    return indicesWhere(n, (u) => Math.abs(degree[u]! - target) <= slack);
  };
  const medianBand = near(median);
  const p99Band = near(p99);
  const byDegree = indicesWhere(n, () => true).sort((x, y) => degree[y]! - degree[x]!);
  const overHub = byDegree.filter((u) => degree[u]! >= options.hubDegree);
  const hubBand = overHub.length >= 2 ? overHub : byDegree.slice(0, options.fallbackHubs);

  // Wallet users: median degree, friends drawn from the median band, releasing to everyone.
  const wallets: { index: number; wallet: Wallet }[] = [];
  for (let i = 0; i < options.wallets; i++) {
    const privateKey = `0x${createHash("sha256").update(`relgraph-bench-wallet:${options.seed}:${i}`).digest("hex")}`;
    const wallet = new Wallet(privateKey);
    const index = n + i;
    const relationId = `bench-wallet-${i + 1}`;
    wallets.push({ index, wallet });
    await write({
      type: "user",
      relationId,
      name: `Bench Wallet ${i + 1}`,
      avatar: `https://avatars.relgraph.example/${relationId}.png`,
      addresses: [wallet.address.toLowerCase()],
      social: null,
      game: null,
    });
    for (const friend of sample(medianBand, Math.max(1, median), rng)) {
      edges.push(index, friend);
      await write({ type: "friend", a: relationId, b: relationOf(friend, n, options.wallets), description: "Bench wallet friend" });
    }
    await write({ type: "release", relationId, peers: "*" });
  }
  await flush();
  out.end();
  await once(out, "finish");

  const total = n + options.wallets;
  const graph = buildAdjacency(total, edges.from.subarray(0, edges.length), edges.to.subarray(0, edges.length));
  const userOf = (u: number): BenchUser => ({
    relationId: relationOf(u, n, options.wallets),
    address: u < n ? firstAddress[u]! : wallets[u - n]!.wallet.address.toLowerCase(),
    degree: graph.degree(u),
  });
  const pairOf = ([a, b, mutual]: [number, number, number]): UserPair => ({ a: userOf(a), b: userOf(b), mutual });
  const k = options.pairsPerBand;
  const pairs: Record<PairBand, UserPair[]> = {
    "median-median": bestPairs(graph, medianBand, medianBand, k, rng).map(pairOf),
    "p99-p99": bestPairs(graph, p99Band, p99Band, k, rng).map(pairOf),
    "median-hub": bestPairs(graph, hubBand, medianBand, k, rng).map(pairOf),
    "hub-hub": allPairs(graph, hubBand, k).map(pairOf),
  };

  const band = (members: number[]) => ({
    minDegree: Math.min(...members.map((u) => degree[u]!)),
    maxDegree: Math.max(...members.map((u) => degree[u]!)),
    users: members.length,
  });
  return {
    file: options.file,
    records,
    bytes,
    users: total,
    friendEdges: edges.length,
    generateSeconds: (performance.now() - started) / 1000,
    degrees: { mean: (2 * generatedEdges) / n, median, p99, max, atLeastHubDegree: overHub.length },
    bands: { median: band(medianBand), p99: band(p99Band), hub: band(hubBand) },
    pairs,
    contractPairs: contractPairs(contractsOf, k, rng),
    recommendUsers: sample(medianBand, options.recommendUsers, rng).map(userOf),
    hubUsers: hubBand.map(userOf),
    wallets: wallets.map(({ index, wallet }) => ({ ...userOf(index), wallet })),
    // The reservoir keeps its slots in the order edges came: shuffled, a prefix is a random sample too.
    storedEdges: { friends: sample(storedEdges.friends, storedEdges.friends.length, edgeRng), follows: sample(storedEdges.follows, storedEdges.follows.length, edgeRng) },
  };
}

/** The generator names users u1 … uN. */
function userIndex(relationId: string): number {
  return Number(relationId.slice(1)) - 1;
}

function relationOf(u: number, n: number, wallets: number): string {
  if (u < n) return `u${u + 1}`;
  if (u < n + wallets) return `bench-wallet-${u - n + 1}`;
  throw new RangeError(`no user ${u}`);
}

function indicesWhere(n: number, keep: (u: number) => boolean): number[] {
  const result: number[] = [];
  for (let u = 0; u < n; u++) if (keep(u)) result.push(u);
  return result;
}

/** Up to k distinct members, in random order. */
function sample<T>(items: readonly T[], k: number, rng: Prng): T[] {
  const copy = [...items];
  const m = Math.min(k, copy.length);
  for (let i = 0; i < m; i++) {
    const j = i + rng.int(copy.length - i);
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, m);
}

/**
 * Up to k pairs (a in A, b in B, a ≠ b) sharing as many friends as possible, so that as many pages
 * as the graph allows are full. Each user of A is scanned through its friends' friends;
 * each user takes part in at most a few pairs so that the load spreads over many keys. When too few
 * pairs share any friend, random pairs fill the rest.
 */
function bestPairs(graph: Adjacency, a: readonly number[], b: readonly number[], k: number, rng: Prng): [number, number, number][] {
  const inB = new Uint8Array(graph.size);
  for (const w of b) inB[w] = 1;
  const counts = new Uint32Array(graph.size);
  const touched: number[] = [];
  const candidates: [number, number, number][] = [];
  let budget = PAIR_SEARCH_BUDGET;
  for (const u of sample(a, a.length, rng)) {
    if (budget <= 0) break;
    for (const v of graph.neighbors(u)) {
      const friendsOfV = graph.neighbors(v);
      budget -= friendsOfV.length;
      for (const w of friendsOfV) {
        if (inB[w] === 0 || w === u) continue;
        if (counts[w]!++ === 0) touched.push(w);
      }
    }
    // Keep each scanned user's best partners only: enough to choose from, bounded in memory.
    touched.sort((x, y) => counts[y]! - counts[x]!);
    for (const w of touched.slice(0, 3)) candidates.push([u, w, counts[w]!]);
    for (const w of touched) counts[w] = 0;
    touched.length = 0;
  }
  candidates.sort((x, y) => y[2] - x[2]);
  const uses = new Map<number, number>();
  const cap = Math.max(2, Math.ceil((2 * k) / Math.max(1, Math.min(a.length, b.length))));
  const chosen: [number, number, number][] = [];
  const seen = new Set<string>();
  const take = (u: number, w: number, mutual: number) => {
    const key = u < w ? `${u}:${w}` : `${w}:${u}`;
    if (u === w || seen.has(key) || (uses.get(u) ?? 0) >= cap || (uses.get(w) ?? 0) >= cap) return;
    seen.add(key);
    uses.set(u, (uses.get(u) ?? 0) + 1);
    uses.set(w, (uses.get(w) ?? 0) + 1);
    chosen.push([u, w, mutual]);
  };
  for (const [u, w, mutual] of candidates) {
    if (chosen.length >= k) break;
    take(u, w, mutual);
  }
  for (let tries = 0; chosen.length < k && tries < 20 * k; tries++) {
    const u = a[rng.int(a.length)]!;
    const w = b[rng.int(b.length)]!;
    take(u, w, commonCount(graph.neighbors(u), graph.neighbors(w)));
  }
  return chosen;
}

/** Every pair of the given users, up to k, most shared friends first. */
function allPairs(graph: Adjacency, users: readonly number[], k: number): [number, number, number][] {
  const pairs: [number, number, number][] = [];
  for (let i = 0; i < users.length; i++) {
    for (let j = i + 1; j < users.length; j++) {
      const u = users[i]!;
      const w = users[j]!;
      pairs.push([u, w, commonCount(graph.neighbors(u), graph.neighbors(w))]);
    }
  }
  return pairs.sort((x, y) => y[2] - x[2]).slice(0, k);
}

/**
 * Up to k pairs of addresses that interacted with at least two contracts each, every one matched
 * with the partner (of 20 tried) sharing the most contracts.
 */
function contractPairs(contractsOf: Map<string, number[]>, k: number, rng: Prng): AddressPair[] {
  const active = [...contractsOf.entries()].filter(([, list]) => list.length >= 2);
  const pairs: AddressPair[] = [];
  for (const [address, list] of sample(active, k, rng)) {
    const mine = new Set(list);
    let best: AddressPair | null = null;
    for (let t = 0; t < 20; t++) {
      const [other, theirs] = active[rng.int(active.length)]!;
      if (other === address) continue;
      const common = new Set(theirs.filter((c) => mine.has(c))).size;
      if (best === null || common > best.common) best = { a: address, b: other, common };
    }
    if (best) pairs.push(best);
  }
  return pairs;
}

/** A growable list of edges in two typed arrays. */
class EdgeBuffer {
  from = new Uint32Array(1 << 16);
  to = new Uint32Array(1 << 16);
  length = 0;
  push(a: number, b: number): void {
    if (this.length === this.from.length) {
      const grow = (old: Uint32Array) => {
        const next = new Uint32Array(old.length * 2);
        next.set(old);
        return next;
      };
      this.from = grow(this.from);
      this.to = grow(this.to);
    }
    this.from[this.length] = a;
    this.to[this.length++] = b;
  }
}
