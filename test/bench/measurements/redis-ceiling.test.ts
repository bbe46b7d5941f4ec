import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/*
 * The Redis ceiling tool, small: the bytes captured from `relgraph ingest` must be the whole of what
 * it asked of Redis, so that their replay over the same stored graph leaves the very store the ingest
 * left (DEBUG DIGEST). A capture that missed a connection, or a write made before a socket connected,
 * leaves another store. Loaded from dist/, as the tool runs, since it starts dist/src/cli/main.js and
 * loads dist/bench/tools/resp-tee.js into it.
 */

type CeilingBench = typeof import("../../../bench/measurements/redis-ceiling.js");

describe("measureRedisCeiling", () => {
  let bench: CeilingBench;
  let work: string;
  beforeAll(async () => {
    bench = (await import(new URL("../../../dist/bench/measurements/redis-ceiling.js", import.meta.url).href)) as CeilingBench;
    work = await mkdtemp(path.join(os.tmpdir(), "relgraph-ceiling-test-"));
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it("replays what relgraph ingest sent into the same store, and times both from the same start", async () => {
    const lines: string[] = [];
    // Enough changes that the replay's Redis CPU spans several of /proc's clock ticks.
    const result = await bench.measureRedisCeiling({ users: 2_000, changeRecords: 100_000, trials: 2, seed: "bench", work, digest: true, log: (line) => lines.push(line) });
    expect(result.records).toBe(100_000);
    expect(result.sameState).toBe(true);
    // Only node-redis's CLIENT SETINFO may fail, and only on servers before 7.2: one per connection.
    expect(result.replayErrors).toBeLessThanOrEqual(4);
    expect(result.capturedBytes).toBeGreaterThan(100_000);
    expect(result.trials).toHaveLength(2);
    for (const { ingest, replay } of result.trials) {
      expect(ingest.redisCpuSeconds).toBeGreaterThan(0);
      expect(replay.redisCpuSeconds).toBeGreaterThan(0);
      expect(replay.digest).toBe(ingest.digest);
      expect(ingest.digest).toMatch(/^[0-9a-f]{40}$/);
    }
    expect(lines.filter((line) => line.startsWith("ceiling: trial"))).toHaveLength(2);
  }, 120_000);
});
