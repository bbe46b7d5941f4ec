import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readGraphTool, readNostrSocialGraph, toJsonLines } from "../../src/eval/datasets.js";
import { formatReport } from "../../src/cli/commands/eval.js";
import { BaselineRanker, EXPLORATIONS, UndirectedGraph, type Exploration } from "../../src/eval/baselines.js";
import { createPrng } from "../../src/synthetic/prng.js";
import { RELGRAPH, RELGRAPH_NO_BUDGET, RELGRAPH_NO_FIRST_HOP_CAP, RELGRAPH_UNBOUNDED, runLinkPrediction, type LinkPredOptions } from "../../src/eval/linkpred.js";
import { scoreRanking } from "../../src/eval/metrics.js";

const SAMPLE = new URL("../fixtures/nostr-follows-sample.jsonl", import.meta.url).pathname;

describe("link prediction on a real sample", () => {
  let dir: string;
  let friendsFile: string;
  beforeAll(async () => {
    // The same sample as an undirected friend graph: each follow becomes a friend record.
    dir = await mkdtemp(join(tmpdir(), "relgraph-linkpred-"));
    friendsFile = join(dir, "friends.jsonl");
    const lines = (await readFile(SAMPLE, "utf8")).trim().split("\n").map((line) => JSON.parse(line) as Record<string, string>);
    const friends = lines.map((r) => (r.type === "follow" ? { type: "friend", a: r.from, b: r.to, description: "sample" } : r));
    await writeFile(friendsFile, friends.map((r) => JSON.stringify(r)).join("\n"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const run = (options: Partial<LinkPredOptions>) =>
    runLinkPrediction({ files: [SAMPLE], edges: "follows", hide: 0.2, seeds: 2, k: 5, maxUsers: 0, resamples: 200, ...options });

  it("hides follow edges, asks the service, and scores every method on the same users", async () => {
    const progress: number[] = [];
    const report = await run({ onProgress: ({ done }) => progress.push(done) });
    expect(report.nodes).toBe(45);
    expect(report.edgeCount).toBe(491);
    expect(report.hiddenEdges).toBe(2 * Math.round(491 * 0.2));
    expect(report.users).toBeGreaterThan(20);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    const names = report.methods.map((row) => row.name);
    expect(names).toEqual([
      RELGRAPH,
      RELGRAPH_NO_BUDGET,
      RELGRAPH_UNBOUNDED,
      RELGRAPH_NO_FIRST_HOP_CAP,
      "random",
      "preferential attachment",
      "common neighbours",
      "Jaccard",
      "Adamic-Adar",
      "resource allocation",
      "personalized PageRank",
    ]);
    const recall = (name: string) => report.methods.find((row) => row.name === name)!.metrics.recall;
    for (const row of report.methods) {
      for (const estimate of Object.values(row.metrics)) {
        expect(estimate.low).toBeLessThanOrEqual(estimate.mean);
        expect(estimate.mean).toBeLessThanOrEqual(estimate.high);
        expect(estimate.mean).toBeGreaterThanOrEqual(0);
        expect(estimate.high).toBeLessThanOrEqual(1);
      }
    }
    // On a graph this small no set reaches a bound: skipping hubs changes nothing.
    expect(recall(RELGRAPH).mean).toBe(recall(RELGRAPH_UNBOUNDED).mean);
    expect(recall(RELGRAPH_NO_BUDGET).mean).toBe(recall(RELGRAPH_UNBOUNDED).mean);
    expect(report.recallKeptByHubSkip.mean).toBe(1);
    expect(report.usersOverFirstHopCap).toBe(0);
    expect(report.recallKeptByFirstHopCap.mean).toBe(1);
    // Structure beats chance by far on a real graph, for relgraph as for the classic indices.
    expect(recall(RELGRAPH).mean).toBeGreaterThan(recall("random").mean + 0.1);
    expect(report.methods[0]!.metrics.auc.mean).toBeGreaterThan(0.6);
    expect(report.twoHopCeiling.mean).toBeGreaterThan(0.5);
    expect(report.recallVsAdamicAdar.mean).toBeCloseTo(recall(RELGRAPH).mean / recall("Adamic-Adar").mean, 10);
    const table = formatReport(report);
    expect(table).toContain("| relgraph | ");
    expect(table).toContain("2-hop ceiling");
  });

  it("on friend edges, matches the common-neighbour count's reach and is the same run for the same seeds", async () => {
    const report = await run({ files: [friendsFile], edges: "friends" });
    const again = await run({ files: [friendsFile], edges: "friends" });
    const strip = (r: typeof report) => ({ ...r, seconds: 0 });
    expect(strip(again)).toEqual(strip(report));
    const metrics = (name: string) => report.methods.find((row) => row.name === name)!.metrics;
    // With friends only, relgraph's candidates are exactly the 2-hop ones: Hits@50 can differ from
    // common neighbours' only through order, never through reach, on lists this short.
    expect(metrics(RELGRAPH).hits50.mean).toBeCloseTo(metrics("common neighbours").hits50.mean, 10);
    expect(metrics(RELGRAPH).recall.mean).toBeGreaterThan(metrics("random").recall.mean + 0.1);
  });

  it("measures what a first-hop cap costs against the same service without one", async () => {
    // The sample's busiest users follow and are followed by a few dozen: a cap of 3 samples them.
    const report = await run({ firstHopCap: 3 });
    const recall = (name: string) => report.methods.find((row) => row.name === name)!.metrics.recall;
    expect(report.firstHopCap).toBe(3);
    expect(report.usersOverFirstHopCap).toBeGreaterThan(report.users / 2);
    expect(recall(RELGRAPH_NO_FIRST_HOP_CAP).mean).toBe(recall(RELGRAPH_UNBOUNDED).mean);
    expect(recall(RELGRAPH).mean).toBeLessThan(recall(RELGRAPH_NO_FIRST_HOP_CAP).mean);
    expect(report.recallKeptByFirstHopCap.mean).toBeLessThan(1);
    expect(formatReport(report)).toContain("Recall@5 kept by the first-hop cap of 3");
  });

  it("chooses weights on a validation split without seeing the test edges", async () => {
    const report = await run({ validation: true, tuneExponents: [0, 0.75], explore: true });
    expect(report.methods.map((row) => row.name).slice(-2 - EXPLORATIONS.length)).toEqual(["rarity d^-0", "rarity d^-0.75", ...EXPLORATIONS.map((e) => e.name)]);
    // Validation hides a share of what the test split left: fewer edges than the test split hides.
    expect(report.hiddenEdges).toBe(2 * Math.round((491 - Math.round(491 * 0.2)) * 0.2));
  });
});

describe("explorations beyond the 2-hop score (--explore)", () => {
  /** Ranks for node 0 of an undirected graph, excluding it and its neighbours as the evaluation does. */
  const rank = (edges: [number, number][], exploration: Exploration) => {
    const nodes = 1 + Math.max(...edges.flat());
    const graph = new UndirectedGraph(nodes, edges.map(([a]) => a), edges.map(([, b]) => b), Uint32Array.from({ length: nodes }, (_, i) => i));
    const marks = new Uint32Array(nodes);
    for (const node of [0, ...graph.neighboursOf(0)]) marks[node] = 1;
    return new BaselineRanker(graph, createPrng("explore")).rankExplored(exploration, 0.75, 0, { marks, stamp: 1 }, 10);
  };
  const prior = (gamma: number): Exploration => ({ kind: "degree prior", gamma, name: "" });
  const path = (epsilon: number, kind: "local path" | "local path, read sets" = "local path"): Exploration => ({ kind, epsilon, name: "" });

  it("reaches a candidate three steps away only with local-path evidence", () => {
    const chain: [number, number][] = [[0, 1], [1, 3], [3, 4]];
    expect(rank(chain, prior(0))).toEqual([3]);
    expect(rank(chain, path(0.1))).toEqual([3, 4]);
  });

  it("over the read sets, weighs a common neighbour by how many of the user's neighbours it knows", () => {
    // 3 comes through 1 (3 neighbours, one of them the user's neighbour 2), 4 through 5 (2 neighbours, none).
    const edges: [number, number][] = [[0, 1], [0, 2], [0, 5], [1, 2], [1, 3], [5, 4]];
    expect(rank(edges, path(0, "local path, read sets"))).toEqual([4, 3]);
    expect(rank(edges, path(1, "local path, read sets"))).toEqual([3, 4]);
  });

  it("with a degree prior, orders equal evidence by the candidate's degree, either way", () => {
    // 3 and 4 each share neighbour 1 with the user; 4 has two more neighbours.
    const edges: [number, number][] = [[0, 1], [1, 3], [1, 4], [4, 6], [4, 7]];
    expect(rank(edges, prior(0.25))).toEqual([4, 3]);
    expect(rank(edges, prior(-0.25))).toEqual([3, 4]);
    expect(EXPLORATIONS.map((e) => e.kind)).toEqual(expect.arrayContaining(["degree prior", "local path", "local path, read sets"]));
  });
});

describe("ranking metrics", () => {
  it("scores a ranked list against the hidden edges, with everything unranked tied below", () => {
    // Positives 7 and 9 among 10 candidates; 7 ranked 2nd, 9 unranked.
    const scores = scoreRanking([3, 7, 4], new Set([7, 9]), 10, 2);
    expect(scores.precision).toBe(0.5);
    expect(scores.recall).toBe(0.5);
    expect(scores.mrr).toBe(0.5);
    expect(scores.hits50).toBe(1);
    expect(scores.ndcg).toBeCloseTo(1 / Math.log2(3) / (1 + 1 / Math.log2(3)), 12);
    // 8 negatives: 7 beats 7 of them (all but 3); 9 beats none of the 2 ranked, ties the other 6.
    expect(scores.auc).toBeCloseTo((7 + 3) / (2 * 8), 12);
    expect(scoreRanking([], new Set([1]), 5, 10)).toEqual({ precision: 0, recall: 0, ndcg: 0, mrr: 0, hits50: 0, auc: 0.5 });
  });
});

describe("dataset readers", () => {
  it("reads a graph-tool .gt file, gzipped or not, in either byte order", () => {
    // 3 nodes, undirected: 0–1, 0–2, 2–1, as graph-tool writes them (out-lists, 1-byte indices).
    const gt = (little: boolean) => {
      const u64 = (n: number) => {
        const b = Buffer.alloc(8);
        if (little) b.writeBigUInt64LE(BigInt(n));
        else b.writeBigUInt64BE(BigInt(n));
        return b;
      };
      const comment = Buffer.from("a test graph");
      return Buffer.concat([
        Buffer.from([0xe2, 0x9b, 0xbe, 0x20, 0x67, 0x74, 0x01, little ? 0 : 1]),
        u64(comment.length),
        comment,
        Buffer.from([0]),
        u64(3),
        u64(2),
        Buffer.from([1, 2]),
        u64(0),
        u64(1),
        Buffer.from([1]),
        u64(0), // the property maps that follow are not read
      ]);
    };
    for (const bytes of [gt(true), gt(false), gzipSync(gt(true))]) {
      const graph = readGraphTool(bytes);
      expect(graph).toMatchObject({ nodes: 3, directed: false });
      expect([...graph.sources]).toEqual([0, 0, 2]);
      expect([...graph.targets]).toEqual([1, 2, 1]);
    }
    expect(() => readGraphTool(gt(true).subarray(0, 40))).toThrow(/cut short/);
    expect(() => readGraphTool(Buffer.from("not a graph"))).toThrow(/not a graph-tool/);
  });

  it("reads a nostr-social-graph snapshot's follow lists and skips its mute lists", () => {
    const key = (n: number) => Buffer.alloc(32, n);
    // version 2; ids 300 and 5 (300 needs two varint bytes); 300 follows 5; a mute list: 5 mutes 300.
    const bytes = Buffer.concat([
      Buffer.from([2, 2]),
      key(1),
      Buffer.from([0xac, 0x02]),
      key(2),
      Buffer.from([5]),
      Buffer.from([1, 0xac, 0x02, 0, 1, 5]),
      Buffer.from([1, 5, 0, 1, 0xac, 0x02]),
    ]);
    const graph = readNostrSocialGraph(bytes);
    expect(graph).toMatchObject({ nodes: 2, directed: true });
    expect([...graph.sources]).toEqual([0]);
    expect([...graph.targets]).toEqual([1]);
    expect(() => readNostrSocialGraph(Buffer.from([3]))).toThrow(/version 3/);
  });

  it("writes a user per connected node, and friend records once per pair", () => {
    const graph = { nodes: 4, directed: true, sources: Uint32Array.from([0, 1, 2, 2]), targets: Uint32Array.from([1, 0, 2, 0]) };
    const friends = [...toJsonLines(graph, "friends", "t")].map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(friends.filter((r) => r.type === "user").map((r) => r.relationId)).toEqual(["n0", "n1", "n2"]);
    expect(friends.filter((r) => r.type === "friend").map((r) => [r.a, r.b])).toEqual([["n0", "n1"], ["n0", "n2"]]);
    const follows = [...toJsonLines(graph, "follows", "t")].filter((line) => line.includes('"follow"'));
    expect(follows).toHaveLength(3);
  });
});
