import { rmSync } from "node:fs";
import { mkdir, mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { installCleanup, stopAll } from "../processes/processes.js";
import { measureRedisCeiling, type CeilingRun } from "../measurements/redis-ceiling.js";
import { quantile } from "../measurements/living.js";

/*
 * How fast could change records go into this machine's Redis with relgraph's store layout, whatever
 * the writer? Times `relgraph ingest` of the bench's change records against a replay of the very
 * bytes it sent, each from the same stored graph (measurements/redis-ceiling.ts).
 *
 *   npm run build && node dist/bench/tools/redis-ceiling.js [--users N] [--changes N] [--trials N] [--digest]
 *     [--work DIR] [--against OTHER/dist/src/cli/main.js]
 *
 * The contract has `relgraph ingest` validate the whole load before it writes anything, so no
 * validate-first writer beats (validation alone) + (the replay): that sum is the ceiling it is held to.
 */

const USAGE = `usage: node dist/bench/tools/redis-ceiling.js [options]
  --users N     generated users, as the bench's --users (default 200000, the large dataset)
  --changes N   change records (default 1000000, the large bench's)
  --trials N    ingest/replay pairs (default 3)
  --seed S      dataset seed (default "bench", the bench's)
  --digest      check with DEBUG DIGEST that every run leaves the same store (slow on a large one)
  --work DIR    keep the generated inputs and the saved store in DIR, and start from them when DIR
                already holds them for the same --users, --changes and --seed
  --against F   also time another build's ingest (F: its dist/src/cli/main.js) in each trial,
                alternating which goes first
`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      users: { type: "string", default: "200000" },
      changes: { type: "string", default: "1000000" },
      trials: { type: "string", default: "3" },
      seed: { type: "string", default: "bench" },
      digest: { type: "boolean", default: false },
      work: { type: "string" },
      against: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const count = (name: string, text: string) => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got "${text}"`);
    return value;
  };
  const kept = values.work !== undefined;
  const work = kept ? path.resolve(values.work!) : await mkdtemp(path.join(os.tmpdir(), "relgraph-ceiling-"));
  if (kept) await mkdir(work, { recursive: true });
  installCleanup(() => (kept ? undefined : rmSync(work, { recursive: true, force: true })));
  try {
    const result = await measureRedisCeiling({
      users: count("users", values.users),
      changeRecords: count("changes", values.changes),
      trials: count("trials", values.trials),
      seed: values.seed,
      digest: values.digest,
      against: values.against && path.resolve(values.against),
      reuse: kept,
      work,
      log: (line) => process.stderr.write(`${line}\n`),
    });
    const median = (runs: CeilingRun[]) => quantile(runs.map((run) => run.seconds), 0.5)!;
    const rate = (runs: CeilingRun[]) => {
      const seconds = median(runs);
      const cpu = quantile(runs.map((run) => run.redisCpuSeconds), 0.5)!;
      return `${Math.round(result.records / seconds).toLocaleString("en-US")} records/s (median ${seconds.toFixed(2)} s; Redis CPU median ${cpu.toFixed(2)} s, so ${Math.round(result.records / cpu).toLocaleString("en-US")} records/s with Redis never idle)`;
    };
    console.log(`${result.records.toLocaleString("en-US")} change records; relgraph sent Redis ${(result.capturedBytes / 2 ** 20).toFixed(0)} MiB (${result.replayErrors} replies were errors)`);
    console.log(`relgraph ingest:     ${rate(result.trials.map((trial) => trial.ingest))}`);
    const ingestRuns = result.trials.map((trial) => trial.ingest);
    const replayRuns = result.trials.map((trial) => trial.replay);
    const validateRuns = result.trials.map((trial) => trial.validate);
    const againstRuns = result.trials.flatMap((trial) => (trial.against ? [trial.against] : []));
    if (againstRuns.length > 0) console.log(`the other build:     ${rate(againstRuns)}`);
    console.log(`replay, no writer:   ${rate(replayRuns)}`);
    console.log(`validation alone:    ${rate(validateRuns)} (relgraph ingest --dry-run)`);
    // Per trial, so that each sum and ratio is of runs made side by side.
    const limits = result.trials.map((trial) => trial.validate.seconds + trial.replay.seconds);
    const limit = quantile(limits, 0.5)!;
    const ratio = (runs: CeilingRun[]) => quantile(runs.map((run, i) => limits[i]! / run.seconds), 0.5)!.toFixed(2);
    console.log(`validate-first limit: ${Math.round(result.records / limit).toLocaleString("en-US")} records/s (validation + replay, median ${limit.toFixed(2)} s)`);
    console.log(`relgraph ingest ÷ replay: ${(median(replayRuns) / median(ingestRuns)).toFixed(2)}; ÷ validate-first limit: ${ratio(ingestRuns)} (median of the trials' ratios)`);
    if (againstRuns.length > 0) {
      console.log(`the other build ÷ replay: ${(median(replayRuns) / median(againstRuns)).toFixed(2)}; ÷ validate-first limit: ${ratio(againstRuns)}`);
      const paired = quantile(result.trials.map((trial) => trial.ingest.seconds / trial.against!.seconds), 0.5)!;
      console.log(`this build's ingest time ÷ the other's, median of the pairs: ${paired.toFixed(3)}`);
    }
    if (result.sameState !== null) console.log(`every run left the same store (DEBUG DIGEST): ${result.sameState ? "yes" : "NO"}`);
    return result.sameState === false ? 1 : 0;
  } finally {
    await stopAll();
  }
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`redis-ceiling: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
