import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RELGRAPH_CLI } from "../support/keynodes.js";

/** `relgraph eval` as a process, the way bench/quality/linkpred.sh runs it. */

const run = async (args: string[]) => {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [RELGRAPH_CLI, "eval", ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
};

const SAMPLE = new URL("../fixtures/nostr-follows-sample.jsonl", import.meta.url).pathname;

describe("relgraph eval", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "relgraph-eval-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("prints the table, reports progress with a rate, and writes the JSON report", async () => {
    const json = join(dir, "report.json");
    const result = await run(["linkpred", "--data", SAMPLE, "--follows", "--seeds", "1", "--k", "5", "--bootstrap", "100", "--json", json]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^\| method \| P@5 \| R@5 \| NDCG@5 \| MRR \| Hits@50 \| AUC \|$/m);
    expect(result.stdout).toMatch(/^\| Adamic-Adar \| \d\.\d{3} \(\d\.\d{3}–\d\.\d{3}\)/m);
    expect(result.stderr).toMatch(/seed 1\/1: \d+\/\d+ users, \d+ users\/s/);
    const report = JSON.parse(await readFile(json, "utf8")) as { edges: string; methods: unknown[] };
    expect(report.edges).toBe("follows");
    // relgraph as served, without the member budget, without bounds, without the first-hop cap; seven baselines.
    expect(report.methods).toHaveLength(11);
    expect(result.stdout).toMatch(/^Recall@5 kept by the first-hop cap of 2000 \(relgraph \/ no first-hop cap; 0 of the users evaluated are over it\): 1\.0000/m);
  });

  it("refuses bad options and data it cannot evaluate with a usage or data error", async () => {
    expect((await run(["linkpred"])).code).toBe(2);
    expect((await run(["linkpred", "--data", SAMPLE, "--hide", "1.5"])).stderr).toMatch(/--hide must be/);
    expect((await run(["linkpred", "--data", SAMPLE, "--first-hop-cap", "0"])).stderr).toMatch(/--first-hop-cap must be a positive integer/);
    // The sample has follows only: there is no friend edge to hide.
    const noFriends = await run(["linkpred", "--data", SAMPLE, "--seeds", "1"]);
    expect(noFriends.code).toBe(1);
    expect(noFriends.stderr).toMatch(/no friend edges to hide/);
    expect((await run(["nonsense"])).code).toBe(2);
  });

  it("converts a graph-tool file to JSON Lines that the evaluation reads", async () => {
    // A triangle plus a pendant node, little-endian, uncompressed.
    const u64 = (n: number) => {
      const b = Buffer.alloc(8);
      b.writeBigUInt64LE(BigInt(n));
      return b;
    };
    const gt = Buffer.concat([Buffer.from([0xe2, 0x9b, 0xbe, 0x20, 0x67, 0x74, 1, 0]), u64(0), Buffer.from([0]), u64(4), u64(2), Buffer.from([1, 2]), u64(1), Buffer.from([2]), u64(1), Buffer.from([3]), u64(0)]);
    const input = join(dir, "tiny.gt");
    const out = join(dir, "tiny.jsonl");
    await writeFile(input, gt);
    const converted = await run(["convert", input, "--out", out]);
    expect(converted.code, converted.stderr).toBe(0);
    const lines = (await readFile(out, "utf8")).trim().split("\n").map((line) => JSON.parse(line) as { type: string });
    expect(lines.filter((r) => r.type === "user")).toHaveLength(4);
    expect(lines.filter((r) => r.type === "friend")).toHaveLength(4);
    const bad = await run(["convert", SAMPLE, "--out", join(dir, "bad.jsonl")]);
    expect(bad.code).toBe(1);
  });
});
