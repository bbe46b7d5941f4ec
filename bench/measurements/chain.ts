import type { BenchOptions } from "../options.js";
import { DEFAULT_BACKFILL, measureChainBackfill, type BackfillResult } from "./chain-backfill.js";
import { measureChainFreshness, type FreshnessResult } from "./chain-freshness.js";

/** Issue 37's figures: the backfill beside ingest and anvil's floor, and a new block's freshness. */
export interface ChainResult {
  backfill: BackfillResult;
  freshness: FreshnessResult;
}

/** The backfill, then the freshness, each on processes of its own. */
export async function measureChain(options: Pick<BenchOptions, "chainTransactions" | "freshnessSamples">, log: (line: string) => void): Promise<ChainResult> {
  log(`bench: chain backfill of ${options.chainTransactions.toLocaleString("en-US")} transactions (issue 37) …`);
  const backfill = await measureChainBackfill({ ...DEFAULT_BACKFILL, transactions: options.chainTransactions, log });
  const freshness = await measureChainFreshness(options.freshnessSamples, log);
  return { backfill, freshness };
}

/** The figures beside their targets. */
export function renderChain({ backfill: b, freshness: f }: ChainResult): string {
  const verdict = (pass: boolean) => (pass ? "PASS" : "FAIL");
  // Busy CPU seconds over wall seconds: how many cores were kept busy on average, by every process.
  const runs = (seconds: readonly number[]) => seconds.map((run) => run.toFixed(2)).join(", ") + " s";
  const busy = (cpuSeconds: number, wallSeconds: number) => `${cpuSeconds.toFixed(2)} s (${(cpuSeconds / wallSeconds).toFixed(2)} cores on average)`;
  const rows = [
    [
      `relgraph index backfill, ${b.transactions.toLocaleString("en-US")} transactions (${b.blocks} blocks, ${b.records.toLocaleString("en-US")} records)`,
      `${b.indexSeconds.toFixed(2)} s: ${b.indexRecordsPerSecond.toLocaleString("en-US")} records/s (median of ${runs(b.indexRunsSeconds)})`,
      "",
    ],
    [
      "relgraph ingest of the same records",
      `${b.ingestSeconds.toFixed(2)} s: ${b.ingestRecordsPerSecond.toLocaleString("en-US")} records/s (median of ${runs(b.ingestRunsSeconds)})`,
      "",
    ],
    ["the whole machine's CPU busy during the median backfill", busy(b.indexMachineBusySeconds, b.indexSeconds), ""],
    ["the whole machine's CPU busy during the median ingest", busy(b.ingestMachineBusySeconds, b.ingestSeconds), ""],
    ["backfill ÷ ingest (records/s)", b.indexOverIngest.toFixed(2), `≥ 0.5 ${verdict(b.indexOverIngest >= 0.5)}`],
    [
      `anvil alone serving the indexer's ${b.floorRequests} requests (${b.floorAnswerMegabytes} MB), the floor`,
      `${b.floorSeconds.toFixed(2)} s (anvil CPU ${b.floorAnvilCpuSeconds.toFixed(2)} s)`,
      "",
    ],
    ["backfill ÷ ingest with anvil's time alone (ingest ÷ floor)", b.ingestOverFloor.toFixed(2), ""],
    ["relgraph index start-up: the same command again on its filled store", `${b.indexStartupSeconds.toFixed(2)} s`, ""],
    ["the limit: start-up + floor", `${b.limitSeconds.toFixed(2)} s`, ""],
    ["the best backfill ÷ ingest this machine allows (ingest ÷ limit)", b.bestIndexOverIngest.toFixed(2), ""],
    [`new block → visible in Mutual contract interaction, 0 confirmations (${f.samples} blocks)`, `p99 ${f.p99Ms} ms (p50 ${f.p50Ms}, p90 ${f.p90Ms}, max ${f.maxMs})`, `≤ 1 s ${verdict(f.p99Ms <= 1000)}`],
  ];
  const lines = ["Chain data (issue 37)", "| measurement | figure | target |", "|---|---|---|", ...rows.map((row) => `| ${row.join(" | ")} |`)];
  if (b.indexerReportedRecords !== b.records) lines.push(`note: relgraph index reported ${b.indexerReportedRecords} records, the derivation beside it ${b.records}`);
  return lines.join("\n");
}
