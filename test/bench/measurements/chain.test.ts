import { describe, expect, it } from "vitest";
import type { BackfillResult } from "../../../bench/measurements/chain-backfill.js";
import { renderChain } from "../../../bench/measurements/chain.js";
import type { FreshnessResult } from "../../../bench/measurements/chain-freshness.js";

/*
 * The --only chain summary prints the limit (the index's start-up plus anvil's floor) beside the
 * floor, the machine's busy CPU beside each timed run, and every run beside the median, so that a
 * failing ratio can be read against what the machine allowed.
 */

const backfill: BackfillResult = {
  transactions: 10_000,
  blocks: 21,
  records: 12_622,
  indexSeconds: 0.76,
  indexRecordsPerSecond: 16_680,
  indexTransactionsPerSecond: 13_215,
  ingestSeconds: 0.63,
  ingestRecordsPerSecond: 20_084,
  indexOverIngest: 0.83,
  floorSeconds: 0.21,
  floorRequests: 6,
  floorAnswerMegabytes: 13.42,
  floorAnvilCpuSeconds: 0.13,
  floorOverIngest: 0.34,
  ingestOverFloor: 2.98,
  indexStartupSeconds: 0.37,
  limitSeconds: 0.58,
  bestIndexOverIngest: 1.08,
  indexRunsSeconds: [0.91, 0.76, 0.74],
  ingestRunsSeconds: [0.63, 0.6, 0.66],
  indexMachineBusySeconds: 1.1,
  ingestMachineBusySeconds: 1.24,
  indexerReportedRecords: 12_622,
};

const freshness: FreshnessResult = { samples: 50, p50Ms: 268, p90Ms: 276, p99Ms: 284, maxMs: 284 };

describe("renderChain", () => {
  it("prints the start-up, the limit and the best ratio beside the floor", () => {
    const lines = renderChain({ backfill, freshness }).split("\n");
    const floor = lines.findIndex((line) => line.includes("the floor"));
    const startup = lines.findIndex((line) => line.includes("start-up: the same command again"));
    const limit = lines.findIndex((line) => line.includes("the limit: start-up + floor"));
    expect(floor).toBeGreaterThan(0);
    expect(startup).toBeGreaterThan(floor);
    expect(lines[startup]).toContain("| 0.37 s |");
    expect(lines[limit]).toContain("| 0.58 s |");
    expect(lines.find((line) => line.includes("(ingest ÷ limit)"))).toContain("| 1.08 |");
    expect(lines.find((line) => line.includes("(ingest ÷ floor)"))).toContain("| 2.98 |");
  });

  it("prints the machine's busy CPU of each timed run, with the cores it kept busy on average", () => {
    const text = renderChain({ backfill, freshness });
    expect(text).toContain("during the median backfill | 1.10 s (1.45 cores on average)");
    expect(text).toContain("during the median ingest | 1.24 s (1.97 cores on average)");
  });

  it("prints every timed run beside the median it reports", () => {
    const text = renderChain({ backfill, freshness });
    expect(text).toContain("| 0.76 s: 16,680 records/s (median of 0.91, 0.76, 0.74 s) |");
    expect(text).toContain("| 0.63 s: 20,084 records/s (median of 0.63, 0.60, 0.66 s) |");
  });
});
