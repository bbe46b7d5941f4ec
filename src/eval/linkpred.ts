import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { MultiDimensionalRecommendationRequestSchema } from "../../gen/relgraph/v1/relation_service_pb.js";
import type { Caller } from "../domain/caller.js";
import { createCursorCodec } from "../domain/cursor.js";
import { GraphQueries } from "../graph/queries.js";
import { DEFAULT_RECOMMENDATION_LIMITS, type RecommendationLimits } from "../domain/recommendation-limits.js";
import { ingestRecords } from "../ingest/ingest.js";
import { createPrng } from "../synthetic/prng.js";
import { readLines } from "../ingest/read-lines.js";
import { createRelationService, type RelationServiceMethods } from "../rpc/relation-service.js";
import { createMemoryStore } from "../store/index.js";
import { RARITY_EXPONENTS } from "../domain/recommend.js";
import { BASELINES, BaselineRanker, EXPLORATIONS, UndirectedGraph, type Exclusion } from "./baselines.js";
import { bootstrapMean, bootstrapRatio, METRICS, scoreRanking, type Estimate, type Metric } from "./metrics.js";

/** Options of a link-prediction run. */
export interface LinkPredOptions {
  /** JSON Lines files in the ingestion format, loaded as one graph. */
  files: readonly string[];
  /** Which edges are hidden: friend edges (undirected) or follow edges (directed, predicted for the follower). */
  edges: "friends" | "follows";
  /** Share of those edges hidden per seed, in (0, 1). */
  hide: number;
  seeds: number;
  /** The cut-off of Precision, Recall and NDCG. */
  k: number;
  /** Users evaluated per seed at most, sampled among those with a hidden edge; 0 for all. */
  maxUsers: number;
  /** Bootstrap resamples of each interval. */
  resamples: number;
  /**
   * Evaluate on a validation split: each seed's test edges are removed from the data unseen, and
   * the edges hidden are drawn from the rest. For choosing weights without looking at test edges.
   */
  validation?: boolean;
  /** The first-hop cap of the served row, when not the served default (to measure what a cap costs). */
  firstHopCap?: number;
  /** Also rank by Σ degree^-exponent over common neighbours, one row per exponent (see --tune). */
  tuneExponents?: readonly number[];
  /**
   * Also rank by relgraph's mutual-friend score with a candidate-degree prior, and with local-path
   * (3-step) evidence, one row per setting (EXPLORATIONS; see --explore).
   */
  explore?: boolean;
  /** Called about once a second while users are evaluated. */
  onProgress?: (progress: { seed: number; done: number; total: number; perSecond: number }) => void;
}

/**
 * The rows relgraph contributes: as served; with hubs still skipped but no member budget; and with
 * every bound lifted. Their ratios say what skipping hubs costs, and what the budget costs.
 */
export const RELGRAPH = "relgraph";
export const RELGRAPH_NO_BUDGET = "relgraph, no member budget";
export const RELGRAPH_UNBOUNDED = "relgraph, no bounds";
export const RELGRAPH_NO_FIRST_HOP_CAP = "relgraph, no first-hop cap";

/** What a run measured: a row per method, the 2-hop ceiling, and the two ratios the targets name. */
export interface LinkPredReport {
  files: string[];
  edges: "friends" | "follows";
  hide: number;
  seeds: number;
  k: number;
  nodes: number;
  edgeCount: number;
  /** Hidden edges over all seeds, and users evaluated over all seeds. */
  hiddenEdges: number;
  users: number;
  /** Share of hidden edges whose ends share a neighbour in training (distance 2, ignoring direction). */
  twoHopCeiling: Estimate;
  methods: { name: string; metrics: Record<Metric, Estimate> }[];
  /** Recall@k of relgraph over Adamic-Adar's, users paired. */
  recallVsAdamicAdar: Estimate;
  /** Recall@k of relgraph skipping hubs (no member budget) over relgraph with no bounds, users paired. */
  recallKeptByHubSkip: Estimate;
  /** Recall@k of relgraph as served (hubs skipped, member budget) over relgraph with no bounds, users paired. */
  recallKeptByBounds: Estimate;
  /** Recall@k of relgraph as served over the same without the first-hop cap, users paired. */
  recallKeptByFirstHopCap: Estimate;
  /** The served row's first-hop cap, and how many evaluated users had more neighbours or assets than it in some signal. */
  firstHopCap: number;
  usersOverFirstHopCap: number;
  seconds: number;
}

/** Thrown when the data cannot be evaluated: no edges to hide, deletions, unknown references. */
export class LinkPredDataError extends Error {
  override name = "LinkPredDataError";
}

/** The longest list any method ranks: the service's chain stops there too. */
const MAX_RANKED = DEFAULT_RECOMMENDATION_LIMITS.maxResults;

/**
 * Held-out link prediction: per seed, hides a share of the edges, loads the rest into a fresh
 * embedded store, asks MultiDimensionalRecommendation through the RelationService implementation
 * (the code every protocol serves) for each user with a hidden edge, and ranks the same users with
 * each baseline on the same training graph. Every method is scored on the same users and split.
 */
export async function runLinkPrediction(options: LinkPredOptions): Promise<LinkPredReport> {
  const started = performance.now();
  const fullData = await loadGraph(options.files);
  let data = fullData;
  let pool = options.edges === "friends" ? data.friends : data.follows;
  if (pool.length === 0) throw new LinkPredDataError(`the data has no ${options.edges === "friends" ? "friend" : "follow"} edges to hide`);
  const tuned = (options.tuneExponents ?? []).map((exponent) => ({ exponent, name: `rarity d^-${exponent}` }));
  const served: RecommendationLimits = { ...DEFAULT_RECOMMENDATION_LIMITS, firstHopCap: options.firstHopCap ?? DEFAULT_RECOMMENDATION_LIMITS.firstHopCap };
  const limitsOfRows = [served, { ...served, memberBudget: NO_BUDGET_LIMITS.memberBudget }, UNBOUNDED_LIMITS, { ...served, firstHopCap: Number.MAX_SAFE_INTEGER }];
  const explored = options.explore ? EXPLORATIONS : [];
  const names = [RELGRAPH, RELGRAPH_NO_BUDGET, RELGRAPH_UNBOUNDED, RELGRAPH_NO_FIRST_HOP_CAP, ...BASELINES, ...tuned.map((row) => row.name), ...explored.map((row) => row.name)];
  const values = new Map(names.map((name) => [name, METRICS.map(() => [] as number[])]));
  const ceiling: number[] = [];
  let hiddenEdges = 0;
  let users = 0;
  let usersOverFirstHopCap = 0;

  for (let seed = 1; seed <= options.seeds; seed++) {
    const prng = createPrng(`linkpred:${seed}`);
    data = fullData;
    pool = options.edges === "friends" ? data.friends : data.follows;
    let hidden = new Uint8Array(pool.length);
    const hiddenCount = Math.max(1, Math.round(pool.length * options.hide));
    for (const i of sample(pool.length, hiddenCount, prng)) hidden[i] = 1;
    if (options.validation) {
      // The test edges leave the data; the validation edges are a share of what is left.
      const kept = pool.filter((_, i) => !hidden[i]);
      data = withEdges(fullData, options.edges, kept);
      pool = options.edges === "friends" ? data.friends : data.follows;
      hidden = new Uint8Array(pool.length);
      for (const i of sample(pool.length, Math.max(1, Math.round(pool.length * options.hide)), prng)) hidden[i] = 1;
    }
    hiddenEdges += hidden.reduce((sum, bit) => sum + bit, 0);

    const training = trainingGraph(data, options.edges, hidden);
    const store = createMemoryStore();
    await ingestRecords(store, trainingRecords(data, options.edges, hidden), { source: "training split" });
    const services = limitsOfRows.map((limits) => recommendationService(store, limits));

    // Positives per query user: a friend edge is hidden from both ends, a follow from its follower.
    const positives = new Map<number, Set<number>>();
    const addPositive = (user: number, peer: number) => {
      let set = positives.get(user);
      if (!set) positives.set(user, (set = new Set()));
      set.add(peer);
    };
    const [from, to] = options.edges === "friends" ? [data.friendA, data.friendB] : [data.followFrom, data.followTo];
    for (let i = 0; i < pool.length; i++) {
      if (!hidden[i]) continue;
      const a = from[pool[i]!]!;
      const b = to[pool[i]!]!;
      ceiling.push(sharesNeighbour(training.graph, a, b) ? 1 : 0);
      addPositive(a, b);
      if (options.edges === "friends") addPositive(b, a);
    }
    let queryUsers = [...positives.keys()].sort((x, y) => x - y);
    if (options.maxUsers > 0 && queryUsers.length > options.maxUsers) {
      queryUsers = sample(queryUsers.length, options.maxUsers, prng).map((i) => queryUsers[i]!);
    }

    const ranker = new BaselineRanker(training.graph, createPrng(`linkpred:${seed}:random`));
    const exclusion: Exclusion = { marks: new Uint32Array(data.nodes), stamp: 0 };
    let lastReport = performance.now();
    const seedStarted = lastReport;
    for (const [done, user] of queryUsers.entries()) {
      exclusion.stamp++;
      exclusion.marks[user] = exclusion.stamp;
      for (const peer of training.excluded(user)) exclusion.marks[peer] = exclusion.stamp;
      const userPositives = new Set([...positives.get(user)!].filter((peer) => exclusion.marks[peer] !== exclusion.stamp));
      if (userPositives.size === 0) continue;
      let candidates = 0;
      for (let node = 0; node < data.nodes; node++) if (exclusion.marks[node] !== exclusion.stamp) candidates++;
      users++;
      if (training.firstHopSizes(user).some((size) => size > served.firstHopCap)) usersOverFirstHopCap++;
      const record = (name: string, ranked: readonly number[]) => {
        const scores = scoreRanking(ranked, userPositives, candidates, options.k);
        const rows = values.get(name)!;
        METRICS.forEach((metric, m) => rows[m]!.push(scores[metric]));
      };
      for (const [s, service] of services.entries()) {
        const ranked = await recommend(service, data.identities[user]!, data.indexOf);
        record(names[s]!, ranked.filter((node) => exclusion.marks[node] !== exclusion.stamp));
      }
      for (const method of BASELINES) record(method, ranker.rank(method, user, exclusion, MAX_RANKED));
      for (const { exponent, name } of tuned) record(name, ranker.rankByRarity(exponent, user, exclusion, MAX_RANKED));
      for (const exploration of explored) record(exploration.name, ranker.rankExplored(exploration, RARITY_EXPONENTS.mutualFriends, user, exclusion, MAX_RANKED));

      const now = performance.now();
      if (now - lastReport >= 1000) {
        lastReport = now;
        options.onProgress?.({ seed, done: done + 1, total: queryUsers.length, perSecond: ((done + 1) * 1000) / (now - seedStarted) });
      }
    }
    options.onProgress?.({ seed, done: queryUsers.length, total: queryUsers.length, perSecond: (queryUsers.length * 1000) / Math.max(1, performance.now() - seedStarted) });
    await store.close();
  }

  const resample = createPrng("linkpred:bootstrap");
  const column = (name: string, metric: Metric) => Float64Array.from(values.get(name)![METRICS.indexOf(metric)]!);
  return {
    files: [...options.files],
    edges: options.edges,
    hide: options.hide,
    seeds: options.seeds,
    k: options.k,
    nodes: data.nodes,
    edgeCount: (options.edges === "friends" ? fullData.friends : fullData.follows).length,
    hiddenEdges,
    users,
    twoHopCeiling: bootstrapMean(Float64Array.from(ceiling), options.resamples, resample),
    methods: names.map((name) => ({
      name,
      metrics: Object.fromEntries(METRICS.map((metric) => [metric, bootstrapMean(column(name, metric), options.resamples, resample)])) as Record<
        Metric,
        Estimate
      >,
    })),
    recallVsAdamicAdar: bootstrapRatio(column(RELGRAPH, "recall"), column("Adamic-Adar", "recall"), options.resamples, resample),
    recallKeptByHubSkip: bootstrapRatio(column(RELGRAPH_NO_BUDGET, "recall"), column(RELGRAPH_UNBOUNDED, "recall"), options.resamples, resample),
    recallKeptByBounds: bootstrapRatio(column(RELGRAPH, "recall"), column(RELGRAPH_UNBOUNDED, "recall"), options.resamples, resample),
    recallKeptByFirstHopCap: bootstrapRatio(column(RELGRAPH, "recall"), column(RELGRAPH_NO_FIRST_HOP_CAP, "recall"), options.resamples, resample),
    firstHopCap: served.firstHopCap,
    usersOverFirstHopCap,
    seconds: (performance.now() - started) / 1000,
  };
}

/** The served limits without the member budget: hubs are still skipped. */
const NO_BUDGET_LIMITS: RecommendationLimits = { ...DEFAULT_RECOMMENDATION_LIMITS, memberBudget: Number.MAX_SAFE_INTEGER };

/** Every bound lifted but the length of the chain. */
const UNBOUNDED_LIMITS: RecommendationLimits = {
  ...NO_BUDGET_LIMITS,
  maxNeighbourSet: Number.MAX_SAFE_INTEGER,
  maxAssetHolders: Number.MAX_SAFE_INTEGER,
  firstHopCap: Number.MAX_SAFE_INTEGER,
};

function recommendationService(store: ReturnType<typeof createMemoryStore>, limits: RecommendationLimits): RelationServiceMethods {
  const refuse = () => Promise.reject(new Error("the evaluation calls no authorized operation"));
  return createRelationService({
    // The evaluation is the store's one client: its key's share of the snapshot pool is all of it.
    queries: new GraphQueries(store, createCursorCodec(randomBytes(32)), { ...limits, snapshotsPerKey: limits.snapshotLimit }),
    authorizer: { verify: refuse },
    encryptor: { encryptFor: refuse, encryptForAuthorization: refuse, close: async () => {} },
  });
}

/** Whom the evaluation asks as: it has no ApiKey, and needs none to call the implementation directly. */
const EVALUATION_CALLER: Caller = { keyId: "evaluation" };

/** The whole chain of recommendations for a user, as node indices, best first. */
async function recommend(service: RelationServiceMethods, identity: Identity, indexOf: ReadonlyMap<string, number>): Promise<number[]> {
  const ranked: number[] = [];
  let cursor = "";
  do {
    const request = create(MultiDimensionalRecommendationRequestSchema, { ...identity, limit: 100, cursor });
    const page = await service.multiDimensionalRecommendation(request, EVALUATION_CALLER);
    for (const item of page.data ?? []) ranked.push(indexOf.get(item.relationId?.relationId ?? "")!);
    cursor = page.cursor ?? "";
  } while (cursor !== "" && ranked.length < MAX_RANKED);
  return ranked;
}

/** The request fields that name a user. */
type Identity = { address: string } | { socialUsername: string } | { gameId: string };

/** A load, parsed once: users as dense indices, edges as index columns, other records kept as they are. */
interface LoadedGraph {
  nodes: number;
  indexOf: Map<string, number>;
  relationIds: string[];
  identities: Identity[];
  userRecords: unknown[];
  otherRecords: unknown[];
  friendA: number[];
  friendB: number[];
  followFrom: number[];
  followTo: number[];
  /** Indices into the friend and follow columns: the edges that can be hidden (distinct, no self-loops). */
  friends: number[];
  follows: number[];
}

async function loadGraph(files: readonly string[]): Promise<LoadedGraph> {
  const graph: LoadedGraph = {
    nodes: 0,
    indexOf: new Map(),
    relationIds: [],
    identities: [],
    userRecords: [],
    otherRecords: [],
    friendA: [],
    friendB: [],
    followFrom: [],
    followTo: [],
    friends: [],
    follows: [],
  };
  const edges: { type: "friend" | "follow"; a: string; b: string; where: string }[] = [];
  for (const file of files) {
    await readLines(file, (text, line) => {
      if (text.trim() === "") return;
      const where = `${file}:${line}`;
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(text) as Record<string, unknown>;
      } catch {
        throw new LinkPredDataError(`${where}: not JSON`);
      }
      if (record.op === "delete") throw new LinkPredDataError(`${where}: the evaluation takes a graph, not changes: remove delete records`);
      if (record.type === "user") {
        const relationId = String(record.relationId);
        if (!graph.indexOf.has(relationId)) {
          graph.indexOf.set(relationId, graph.relationIds.length);
          graph.relationIds.push(relationId);
          graph.identities.push(identityOf(record, where));
        } else {
          graph.identities[graph.indexOf.get(relationId)!] = identityOf(record, where);
        }
        graph.userRecords.push(record);
      } else if (record.type === "friend") {
        edges.push({ type: "friend", a: String(record.a), b: String(record.b), where });
      } else if (record.type === "follow") {
        edges.push({ type: "follow", a: String(record.from), b: String(record.to), where });
      } else {
        graph.otherRecords.push(record);
      }
    });
  }
  graph.nodes = graph.relationIds.length;
  const seen = new Set<number>();
  for (const edge of edges) {
    const a = graph.indexOf.get(edge.a);
    const b = graph.indexOf.get(edge.b);
    if (a === undefined || b === undefined) throw new LinkPredDataError(`${edge.where}: refers to a user the data does not define`);
    if (edge.type === "friend") {
      graph.friendA.push(a);
      graph.friendB.push(b);
      const key = Math.min(a, b) * graph.nodes + Math.max(a, b);
      if (a !== b && !seen.has(-key - 1)) {
        seen.add(-key - 1);
        graph.friends.push(graph.friendA.length - 1);
      }
    } else {
      graph.followFrom.push(a);
      graph.followTo.push(b);
      const key = a * graph.nodes + b;
      if (a !== b && !seen.has(key)) {
        seen.add(key);
        graph.follows.push(graph.followFrom.length - 1);
      }
    }
  }
  return graph;
}

/** The graph with only the `kept` edges (indices into its columns) of the kind `edges`; the other kind stays whole. */
function withEdges(data: LoadedGraph, edges: "friends" | "follows", kept: readonly number[]): LoadedGraph {
  const [a, b] = edges === "friends" ? [data.friendA, data.friendB] : [data.followFrom, data.followTo];
  const keptA = kept.map((i) => a[i]!);
  const keptB = kept.map((i) => b[i]!);
  const indices = kept.map((_, i) => i);
  return edges === "friends"
    ? { ...data, friendA: keptA, friendB: keptB, friends: indices }
    : { ...data, followFrom: keptA, followTo: keptB, follows: indices };
}

function identityOf(record: Record<string, unknown>, where: string): Identity {
  const addresses = record.addresses;
  if (Array.isArray(addresses) && typeof addresses[0] === "string") return { address: addresses[0] };
  const social = record.social as { username?: unknown } | null | undefined;
  if (typeof social?.username === "string") return { socialUsername: social.username };
  const game = record.game as { gameId?: unknown } | null | undefined;
  if (typeof game?.gameId === "string") return { gameId: game.gameId };
  throw new LinkPredDataError(`${where}: the user has no address, social account or game id to query it by`);
}

/** The training records: every record but the hidden edges (and any duplicate of one). */
function* trainingRecords(data: LoadedGraph, edges: "friends" | "follows", hidden: Uint8Array): Generator<unknown> {
  yield* data.userRecords;
  yield* data.otherRecords;
  const hiddenKeys = hiddenEdgeKeys(data, edges, hidden);
  for (let i = 0; i < data.friendA.length; i++) {
    const a = data.friendA[i]!;
    const b = data.friendB[i]!;
    if (edges === "friends" && hiddenKeys.has(Math.min(a, b) * data.nodes + Math.max(a, b))) continue;
    yield { type: "friend", a: data.relationIds[a], b: data.relationIds[b], description: "training" };
  }
  for (let i = 0; i < data.followFrom.length; i++) {
    const a = data.followFrom[i]!;
    const b = data.followTo[i]!;
    if (edges === "follows" && hiddenKeys.has(a * data.nodes + b)) continue;
    yield { type: "follow", from: data.relationIds[a], to: data.relationIds[b] };
  }
}

function hiddenEdgeKeys(data: LoadedGraph, edges: "friends" | "follows", hidden: Uint8Array): Set<number> {
  const keys = new Set<number>();
  const pool = edges === "friends" ? data.friends : data.follows;
  pool.forEach((edge, i) => {
    if (!hidden[i]) return;
    if (edges === "friends") {
      const a = data.friendA[edge]!;
      const b = data.friendB[edge]!;
      keys.add(Math.min(a, b) * data.nodes + Math.max(a, b));
    } else {
      keys.add(data.followFrom[edge]! * data.nodes + data.followTo[edge]!);
    }
  });
  return keys;
}

/**
 * The training graph the baselines rank on (friend and follow edges alike, undirected, each pair
 * once), and per user whom no method may recommend: their friends, and in follow mode also whom
 * they already follow.
 */
function trainingGraph(data: LoadedGraph, edges: "friends" | "follows", hidden: Uint8Array) {
  const hiddenKeys = hiddenEdgeKeys(data, edges, hidden);
  const pairs = new Set<number>();
  const a: number[] = [];
  const b: number[] = [];
  const excludedFrom: number[] = [];
  const excludedTo: number[] = [];
  // What the service's first hop sees per signal: friends, followings and followers of each node.
  const firstHop = [new Uint32Array(data.nodes), new Uint32Array(data.nodes), new Uint32Array(data.nodes)] as const;
  const add = (x: number, y: number) => {
    if (x === y) return;
    const key = Math.min(x, y) * data.nodes + Math.max(x, y);
    if (pairs.has(key)) return;
    pairs.add(key);
    a.push(x);
    b.push(y);
  };
  for (let i = 0; i < data.friendA.length; i++) {
    const x = data.friendA[i]!;
    const y = data.friendB[i]!;
    if (edges === "friends" && hiddenKeys.has(Math.min(x, y) * data.nodes + Math.max(x, y))) continue;
    add(x, y);
    excludedFrom.push(x, y);
    excludedTo.push(y, x);
    firstHop[0][x]!++;
    firstHop[0][y]!++;
  }
  for (let i = 0; i < data.followFrom.length; i++) {
    const x = data.followFrom[i]!;
    const y = data.followTo[i]!;
    if (edges === "follows" && hiddenKeys.has(x * data.nodes + y)) continue;
    add(x, y);
    firstHop[1][x]!++;
    firstHop[2][y]!++;
    if (edges === "follows") {
      excludedFrom.push(x);
      excludedTo.push(y);
    }
  }
  const tieRank = new Uint32Array(data.nodes);
  Array.from(data.relationIds.keys())
    .sort((x, y) => (data.relationIds[x]! < data.relationIds[y]! ? -1 : 1))
    .forEach((node, rank) => (tieRank[node] = rank));
  const graph = new UndirectedGraph(data.nodes, a, b, tieRank);
  const offsets = new Uint32Array(data.nodes + 1);
  for (const x of excludedFrom) offsets[x + 1]!++;
  for (let node = 0; node < data.nodes; node++) offsets[node + 1]! += offsets[node]!;
  const next = offsets.slice(0, data.nodes);
  const excludedPeers = new Uint32Array(excludedFrom.length);
  excludedFrom.forEach((x, i) => (excludedPeers[next[x]!++] = excludedTo[i]!));
  return {
    graph,
    excluded: (user: number) => excludedPeers.subarray(offsets[user]!, offsets[user + 1]!),
    /** The user's friends, followings and followers (records repeated in the data count twice: an upper bound). */
    firstHopSizes: (user: number) => firstHop.map((sizes) => sizes[user]!),
  };
}

function sharesNeighbour(graph: UndirectedGraph, a: number, b: number): boolean {
  const around = new Set(graph.neighboursOf(a));
  for (const w of graph.neighboursOf(b)) if (around.has(w)) return true;
  return false;
}

/** `count` distinct indices below n, uniformly (a partial Fisher–Yates shuffle). */
function sample(n: number, count: number, prng: ReturnType<typeof createPrng>): number[] {
  const order = Uint32Array.from({ length: n }, (_, i) => i);
  const take = Math.min(n, count);
  for (let i = 0; i < take; i++) {
    const j = i + prng.int(n - i);
    const swap = order[i]!;
    order[i] = order[j]!;
    order[j] = swap;
  }
  return Array.from(order.subarray(0, take));
}
