import type { Prng } from "../synthetic/prng.js";

/**
 * The training graph as the baselines see it: undirected, in compressed sparse rows, over dense
 * node indices. `tieRank` orders nodes by relationId, so every method breaks score ties the way the
 * service does (ascending relationId), and no method gains from how the dataset numbered its nodes.
 */
export class UndirectedGraph {
  readonly offsets: Uint32Array;
  readonly neighbours: Uint32Array;

  constructor(
    readonly nodes: number,
    a: ArrayLike<number>,
    b: ArrayLike<number>,
    readonly tieRank: Uint32Array,
  ) {
    const degree = new Uint32Array(nodes + 1);
    for (let i = 0; i < a.length; i++) {
      degree[a[i]!]!++;
      degree[b[i]!]!++;
    }
    this.offsets = new Uint32Array(nodes + 1);
    for (let node = 0; node < nodes; node++) this.offsets[node + 1] = this.offsets[node]! + degree[node]!;
    const next = this.offsets.slice(0, nodes);
    const neighbours = new Uint32Array(this.offsets[nodes]!);
    for (let i = 0; i < a.length; i++) {
      neighbours[next[a[i]!]!++] = b[i]!;
      neighbours[next[b[i]!]!++] = a[i]!;
    }
    this.neighbours = neighbours;
  }

  degree(node: number): number {
    return this.offsets[node + 1]! - this.offsets[node]!;
  }

  neighboursOf(node: number): Uint32Array {
    return this.neighbours.subarray(this.offsets[node]!, this.offsets[node + 1]!);
  }
}

/** The baseline methods, as the report names them. */
export const BASELINES = ["random", "preferential attachment", "common neighbours", "Jaccard", "Adamic-Adar", "resource allocation", "personalized PageRank"] as const;

/** One baseline method. */
export type Baseline = (typeof BASELINES)[number];

/** A scoring explored beyond relgraph's (BaselineRanker.rankExplored), with the row it reports as. */
export type Exploration =
  | { kind: "degree prior"; gamma: number; name: string }
  | { kind: "local path" | "local path, read sets"; epsilon: number; name: string };

/** What --explore adds: a few settings of each exploration, chosen to bracket their useful range. */
export const EXPLORATIONS: readonly Exploration[] = [
  ...[-0.5, -0.25, -0.1, 0.1, 0.25].map((gamma) => ({ kind: "degree prior" as const, gamma, name: `× d(c)^${gamma}` })),
  ...[0.01, 0.1, 0.3, 1].map((epsilon) => ({ kind: "local path" as const, epsilon, name: `local path, ε ${epsilon}` })),
  ...[0.05, 0.2, 1].map((epsilon) => ({ kind: "local path, read sets" as const, epsilon, name: `local path over read sets, ε ${epsilon}` })),
];

/** What a ranker may not recommend to the user: marks[node] === stamp for the user and the nodes excluded. */
export interface Exclusion {
  marks: Uint32Array;
  stamp: number;
}

/** Personalized PageRank: the restart probability, and the push threshold per unit of degree. */
const PPR_RESTART = 0.15;
const PPR_EPSILON = 1e-5;

/**
 * Ranks candidates for one user under each baseline, reusing dense scratch arrays across users, so
 * a call costs the user's neighbourhood, not the graph.
 */
export class BaselineRanker {
  private readonly score: Float64Array;
  private readonly residual: Float64Array;
  private readonly touched: Uint32Array;
  private readonly seen: Uint32Array;
  private stamp = 0;
  private readonly byDegree: Uint32Array;
  private readonly shuffled: Uint32Array;

  constructor(
    private readonly graph: UndirectedGraph,
    private readonly prng: Prng,
  ) {
    const n = graph.nodes;
    this.score = new Float64Array(n);
    this.residual = new Float64Array(n);
    this.touched = new Uint32Array(n);
    this.seen = new Uint32Array(n);
    this.byDegree = Uint32Array.from({ length: n }, (_, i) => i).sort(
      (x, y) => graph.degree(y) - graph.degree(x) || graph.tieRank[x]! - graph.tieRank[y]!,
    );
    this.shuffled = Uint32Array.from({ length: n }, (_, i) => i);
  }

  /** The top `max` candidates for `user` under `method`, best first. */
  rank(method: Baseline, user: number, excluded: Exclusion, max: number): number[] {
    switch (method) {
      case "random":
        return this.random(excluded, max);
      case "preferential attachment":
        return this.inOrder(this.byDegree, excluded, max);
      case "personalized PageRank":
        return this.pageRank(user, excluded, max);
      default:
        return this.twoHop(method, method === "Jaccard", user, excluded, max);
    }
  }

  /** A uniform sample without replacement: a partial Fisher–Yates shuffle that carries over between users. */
  private random(excluded: Exclusion, max: number): number[] {
    const order = this.shuffled;
    const ranked: number[] = [];
    for (let i = 0; i < order.length && ranked.length < max; i++) {
      const j = i + this.prng.int(order.length - i);
      const node = order[j]!;
      order[j] = order[i]!;
      order[i] = node;
      if (excluded.marks[node] !== excluded.stamp) ranked.push(node);
    }
    return ranked;
  }

  private inOrder(order: Uint32Array, excluded: Exclusion, max: number): number[] {
    const ranked: number[] = [];
    for (let i = 0; i < order.length && ranked.length < max; i++) {
      if (excluded.marks[order[i]!] !== excluded.stamp) ranked.push(order[i]!);
    }
    return ranked;
  }

  /**
   * Candidates by Σ degree(w)^-exponent over their common neighbours w with `user`: 0 is common
   * neighbours, 1 resource allocation. What the evaluation's --tune option sweeps to choose
   * relgraph's rarity weight on validation splits.
   */
  rankByRarity(exponent: number, user: number, excluded: Exclusion, max: number): number[] {
    return this.twoHop((degree) => degree ** -exponent, false, user, excluded, max);
  }

  /**
   * An exploration beyond relgraph's 2-hop score (Σ d(w)^-β over common neighbours w), for --explore:
   * the score times a prior on the candidate's degree, d(c)^γ; or local-path evidence (Lü, Jin and
   * Zhou's A² + εA³, with each step weighted by d^-β), over every 3-path user–w–x–c, or only over those
   * a recommendation has already read, whose middle x is also the user's neighbour: each common
   * neighbour x then counts 1 + ε·e(x), e(x) the user's neighbours x knows.
   */
  rankExplored(exploration: Exploration, beta: number, user: number, excluded: Exclusion, max: number): number[] {
    const { graph, score } = this;
    const stamp = ++this.stamp;
    let touched = 0;
    const add = (c: number, amount: number) => {
      if (excluded.marks[c] === excluded.stamp) return;
      if (this.seen[c] !== stamp) {
        this.seen[c] = stamp;
        score[c] = 0;
        this.touched[touched++] = c;
      }
      score[c]! += amount;
    };
    const rarity = (node: number) => Math.max(2, graph.degree(node)) ** -beta;
    const neighbours = graph.neighboursOf(user);
    if (exploration.kind === "local path, read sets") {
      // The user's neighbours, marked in `residual` (scratch here) for the embeddedness count.
      for (const w of neighbours) this.residual[w] = stamp;
      for (const x of neighbours) {
        let embeddedness = 0;
        for (const y of graph.neighboursOf(x)) if (this.residual[y] === stamp) embeddedness++;
        const weight = rarity(x) * (1 + exploration.epsilon * embeddedness);
        for (const c of graph.neighboursOf(x)) add(c, weight);
      }
      for (const w of neighbours) this.residual[w] = 0;
    } else {
      for (const w of neighbours) {
        const weight = rarity(w);
        for (const x of graph.neighboursOf(w)) {
          add(x, weight);
          if (exploration.kind !== "local path" || x === user) continue;
          const path = exploration.epsilon * weight * rarity(x);
          for (const c of graph.neighboursOf(x)) if (c !== user) add(c, path);
        }
      }
      if (exploration.kind === "degree prior") {
        for (let i = 0; i < touched; i++) {
          const c = this.touched[i]!;
          score[c] = score[c]! * Math.max(1, graph.degree(c)) ** exploration.gamma;
        }
      }
    }
    return this.top(touched, max);
  }

  /** The neighbourhood-overlap indices: every path user–w–c adds w's contribution to c. */
  private twoHop(weightOf: Baseline | ((degree: number) => number), jaccard: boolean, user: number, excluded: Exclusion, max: number): number[] {
    const { graph, score } = this;
    const stamp = ++this.stamp;
    let touched = 0;
    for (const w of graph.neighboursOf(user)) {
      const degree = graph.degree(w);
      const weight =
        typeof weightOf === "function" ? weightOf(degree) : weightOf === "Adamic-Adar" ? 1 / Math.log(degree) : weightOf === "resource allocation" ? 1 / degree : 1;
      for (const c of graph.neighboursOf(w)) {
        if (excluded.marks[c] === excluded.stamp) continue;
        if (this.seen[c] !== stamp) {
          this.seen[c] = stamp;
          score[c] = 0;
          this.touched[touched++] = c;
        }
        score[c]! += weight;
      }
    }
    if (jaccard) {
      const userDegree = graph.degree(user);
      for (let i = 0; i < touched; i++) {
        const c = this.touched[i]!;
        score[c] = score[c]! / (userDegree + graph.degree(c) - score[c]!);
      }
    }
    return this.top(touched, max);
  }

  /**
   * Personalized PageRank from `user` by local push (Andersen, Chung and Lang): residual mass above
   * ε per unit of degree is pushed until none is left, so the cost is bounded by 1/(ε·restart)
   * whatever the graph's size. Candidates are ranked by their estimate.
   */
  private pageRank(user: number, excluded: Exclusion, max: number): number[] {
    const { graph, score, residual } = this;
    const stamp = ++this.stamp;
    let touched = 0;
    const touch = (node: number) => {
      if (this.seen[node] === stamp) return;
      this.seen[node] = stamp;
      score[node] = 0;
      residual[node] = 0;
      this.touched[touched++] = node;
    };
    touch(user);
    residual[user] = 1;
    const queue: number[] = [user];
    const queued = new Set<number>([user]);
    while (queue.length > 0) {
      const node = queue.pop()!;
      queued.delete(node);
      const degree = graph.degree(node);
      const mass = residual[node]!;
      if (degree === 0) {
        score[node]! += mass;
        residual[node] = 0;
        continue;
      }
      score[node]! += PPR_RESTART * mass;
      residual[node] = 0;
      const share = ((1 - PPR_RESTART) * mass) / degree;
      for (const next of graph.neighboursOf(node)) {
        touch(next);
        residual[next]! += share;
        if (!queued.has(next) && residual[next]! > PPR_EPSILON * graph.degree(next)) {
          queued.add(next);
          queue.push(next);
        }
      }
    }
    let kept = 0;
    for (let i = 0; i < touched; i++) {
      const node = this.touched[i]!;
      if (excluded.marks[node] !== excluded.stamp && score[node]! > 0) this.touched[kept++] = node;
    }
    return this.top(kept, max);
  }

  /** The first `count` touched nodes, best `max` first: by score, ties by relationId. */
  private top(count: number, max: number): number[] {
    const { score, graph } = this;
    const candidates = Array.from(this.touched.subarray(0, count));
    candidates.sort((x, y) => score[y]! - score[x]! || graph.tieRank[x]! - graph.tieRank[y]!);
    return candidates.slice(0, max);
  }
}
