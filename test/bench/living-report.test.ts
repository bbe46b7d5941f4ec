import { describe, expect, it } from "vitest";
import type { LivingResult, UnderChanges, Withdrawal } from "../../bench/measurements/living.js";
import { quantile } from "../../bench/measurements/living.js";
import { evaluateTargets, renderReport } from "../../bench/report.js";

/*
 * The living graph's "Speed" table in the bench report: each figure has its row and its target, and a
 * withdrawal trial that never saw its peer go counts against p99 instead of dropping out of it.
 */

function underChanges(id: UnderChanges["id"], readOnlyRps: number, underChangesRps: number): UnderChanges {
  return {
    id,
    readOnlyRps,
    readOnlyBeforeRps: readOnlyRps,
    readOnlyAfterRps: readOnlyRps,
    underChangesRps,
    ratio: underChangesRps / readOnlyRps,
    readOnlyP99Ms: 5,
    underChangesP99Ms: 7,
    offeredChangesPerSecond: 1_000,
    appliedChangesPerSecond: 990,
    backlogAtEnd: 1,
    followCores: 0.2,
    redisCores: 0.1,
    errors: 0,
  };
}

function withdrawal(latenciesMs: number[], failures: string[] = []): Withdrawal {
  return {
    trials: latenciesMs.length + failures.length,
    latenciesMs,
    p50Ms: quantile(latenciesMs, 0.5),
    p99Ms: quantile(latenciesMs, 0.99),
    maxMs: Math.max(...latenciesMs),
    restoreP50Ms: 20,
    restoreMaxMs: 40,
    pollMs: 3,
    failures,
  };
}

function living(overrides: Partial<LivingResult> = {}): LivingResult {
  return {
    ingest: { records: 1_000_000, seconds: 4, recordsPerSecond: 250_000, reportedRecordsPerSecond: 300_000, entries: null, rejected: null },
    feed: { records: 1_000_000, seconds: 8, recordsPerSecond: 125_000, reportedRecordsPerSecond: null, entries: 1_100, rejected: 0 },
    underChanges: [underChanges("mf-mm-live", 10_000, 9_000), underChanges("rec-live", 500, 350)],
    withdrawal: withdrawal(Array.from({ length: 30 }, (_, i) => 10 + i)),
    problems: [],
    ...overrides,
  };
}

const verdict = (result: LivingResult, prefix: string) => evaluateTargets([], null, null, result).find((t) => t.name.startsWith(prefix));

describe("the living-graph report", () => {
  it("checks each figure of the issue's Speed table against its target", () => {
    const result = living();
    expect(verdict(result, "change throughput, relgraph ingest")).toMatchObject({ pass: true, actual: 250_000 });
    expect(verdict(result, "change throughput, feed")).toMatchObject({ pass: false, actual: 125_000 });
    expect(verdict(result, "mutual friend median×median REST while")).toMatchObject({ pass: true, shown: "0.9" });
    expect(verdict(result, "recommendation REST while")).toMatchObject({ pass: false, shown: "0.7" });
    expect(verdict(result, "withdrawal latency")).toMatchObject({ pass: true, actual: 39 });
  });

  it("counts a trial whose peer never went as a failed p99, and leaves unmeasured figures unjudged", () => {
    const failed = living({ withdrawal: withdrawal([10, 12], ["trial 3: u7 still shown for bench-wallet-3 after 10000 ms"]), ingest: null });
    expect(verdict(failed, "withdrawal latency")).toMatchObject({ pass: false });
    expect(verdict(failed, "change throughput, relgraph ingest")).toMatchObject({ pass: null, shown: "–" });
    expect(evaluateTargets([], null, null, null).filter((t) => t.name.startsWith("change throughput")).every((t) => t.pass === null)).toBe(true);
  });

  it("prints the throughput, under-changes and withdrawal rows, and the failures", () => {
    const result = living({ withdrawal: withdrawal([10, 12], ["trial 3: u7 still shown"]), problems: ["feed-changes: 2 entries rejected"] });
    const text = renderReport({ header: [], note: "", ops: [], ingestion: null, memory: null, living: result, targets: evaluateTargets([], null, null, result) });
    expect(text).toMatch(/relgraph ingest\s+1,000,000\s+–\s+4\.00\s+250,000\s+300,000/);
    expect(text).toMatch(/feed \(relgraph follow\)\s+1,000,000\s+1,100\s+8\.00\s+125,000/);
    expect(text).toMatch(/mf-mm-live\s+10,000\s+10,000, 10,000\s+9,000\s+0\.90 PASS/);
    expect(text).toMatch(/rec-live\s+500\s+500, 500\s+350\s+0\.70 FAIL/);
    expect(text).toMatch(/2\/3 trials: p50 10\.00, p99 12\.00/);
    expect(text).toContain("! trial 3: u7 still shown");
    expect(text).toContain("! feed-changes: 2 entries rejected");
  });

  it("takes quantiles by nearest rank", () => {
    expect(quantile([], 0.5)).toBeNull();
    expect(quantile([5, 1, 3], 0.5)).toBe(3);
    expect(quantile(Array.from({ length: 100 }, (_, i) => i + 1), 0.99)).toBe(99);
    expect(quantile([1, 2], 0.99)).toBe(2);
  });
});
