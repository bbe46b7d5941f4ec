import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { finished } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { createChainReader } from "../../src/chain/chain-reader.js";
import { createIndexer, type LedgerStore } from "../../src/chain/indexer.js";
import { createRpcClient } from "../../src/chain/rpc-client.js";
import { recordingClient, replayRequests, type ReplayResult } from "./rpc-floor.js";
import { anvilBinary } from "../processes/anvil.js";
import { cpuSeconds, freePort, machineBusySeconds, run, start, type Managed, type RunResult } from "../processes/processes.js";
import { ANVIL_HISTORY_ARGS, makeChainHistory } from "../workload/chain-history.js";

/*
 * How fast does `relgraph index` backfill a chain, against `relgraph ingest` of the very records it
 * derives? A generated history (workload/chain-history.ts) on a private anvil; `relgraph index
 * --to-block HEAD --confirmations 0` into a fresh redis-server; the same derivation, unit by unit,
 * written to JSON Lines and loaded with `relgraph ingest` into another; each three times, by turns,
 * and the medians compared. And the floor: the same
 * JSON-RPC requests (recorded from that derivation's reader) replayed to anvil with the same batches
 * and concurrency, answers read whole but not parsed (rpc-floor.ts): the time anvil alone needs.
 * Every `relgraph index` run also pays its own start-up (node, modules, the store, the chain id, the
 * stored position), which the floor leaves out: the same command run again on the filled store, with
 * nothing left to do, measures it. Start-up plus floor is the limit below which no indexer on this
 * machine can go.
 */

const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

/** The history and the indexer's unit. */
export interface BackfillOptions {
  transactions: number;
  /** Addresses that send, receive and hold. */
  users: number;
  perBlock: number;
  /** relgraph index --unit-blocks; its own default when absent. */
  unitBlocks?: number;
  seed: number;
  log: (line: string) => void;
}

export const DEFAULT_BACKFILL = { users: 20_000, perBlock: 500, seed: 37 } as const;

/** Seconds, rates and the target's ratio (indexOverIngest), beside the floor and the limit. */
export interface BackfillResult {
  transactions: number;
  blocks: number;
  records: number;
  indexSeconds: number;
  indexRecordsPerSecond: number;
  indexTransactionsPerSecond: number;
  ingestSeconds: number;
  ingestRecordsPerSecond: number;
  /** The target's ratio: relgraph index's records/s ÷ relgraph ingest's. */
  indexOverIngest: number;
  floorSeconds: number;
  floorRequests: number;
  floorAnswerMegabytes: number;
  floorAnvilCpuSeconds: number;
  /** A looser bound than bestIndexOverIngest, which counts the start-up too: 0.5 needs at least floorOverIngest ≤ 2. */
  floorOverIngest: number;
  ingestOverFloor: number;
  /** Every timed run's wall time, in the order run (the index and ingest figures above are their medians). */
  indexRunsSeconds: number[];
  ingestRunsSeconds: number[];
  /** Wall time of the same `relgraph index` run again once the store holds --to-block: the start-up every run pays. */
  indexStartupSeconds: number;
  /** indexStartupSeconds + floorSeconds: an indexer that added nothing to anvil's serving would take this long. */
  limitSeconds: number;
  /** ingest ÷ limit: the best indexOverIngest this machine allows. */
  bestIndexOverIngest: number;
  /** CPU seconds the whole machine (every process, every core) was busy during the timed index run, and the ingest. */
  indexMachineBusySeconds: number;
  ingestMachineBusySeconds: number;
  /** Records relgraph index said it applied; equal to `records` when both derivations agree. */
  indexerReportedRecords: number;
}

/** Replays of the floor; the median is reported. */
const FLOOR_REPLAYS = 3;
/** Timed runs of relgraph index, and of relgraph ingest; the medians are reported. */
const TIMED_RUNS = 3;

type TimedRun = RunResult & { machineBusySeconds: number };

async function redisServer(keep: (managed: Managed) => Managed): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const server = keep(await start("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { ready: /Ready to accept/ }));
  return { url: `redis://127.0.0.1:${port}`, stop: () => server.stop() };
}

/** Generates the history, times the backfill, the ingest and the floor; stops every process it started. */
export async function measureChainBackfill(options: BackfillOptions): Promise<BackfillResult> {
  const { log } = options;
  const work = await mkdtemp(path.join(os.tmpdir(), "relgraph-chain-backfill-"));
  const started: Managed[] = [];
  const keep = (managed: Managed) => (started.push(managed), managed);
  try {
    const anvilPort = await freePort();
    const anvil = keep(await start(anvilBinary(), ["--host", "127.0.0.1", "--port", String(anvilPort), ...ANVIL_HISTORY_ARGS], { ready: /Listening on/ }));
    const url = `http://127.0.0.1:${anvilPort}`;
    const history = await makeChainHistory({ url, users: options.users, transactions: options.transactions, perBlock: options.perBlock, seed: options.seed, log });
    log(`history: ${history.transactions.toLocaleString("en-US")} transactions in blocks 1-${history.head}`);

    // The same records, unit by unit, as `relgraph ingest` reads them, derived in process through
    // a recording client. This also runs first so that anvil has served every request once before
    // anything is timed: the timed index and the floor replays then meet the same warm node.
    const file = path.join(work, "derived.jsonl");
    const out = createWriteStream(file);
    const state = new Map<string, Map<string, string>>();
    let written = 0;
    const capture: LedgerStore = {
      exclusive: (task) => task(),
      readState: async (space, fields) => fields.map((field) => state.get(space)?.get(field) ?? null),
      readStateSpace: async (space) => new Map(state.get(space) ?? []),
      async apply(unitRecords, changes) {
        for (const record of unitRecords) out.write(`${JSON.stringify(record)}\n`);
        written += unitRecords.length;
        for (const { space, field, value } of changes) {
          const fields = state.get(space) ?? new Map<string, string>();
          state.set(space, fields);
          if (value === null) fields.delete(field);
          else fields.set(field, value);
        }
      },
    };
    const recording = recordingClient(createRpcClient({ urls: [url] }));
    const client = recording.client;
    await createIndexer({ store: capture, chain: createChainReader(client, { contracts: null }), finality: { confirmations: 0 }, contracts: null, fromBlock: 0, toBlock: history.head, unitBlocks: options.unitBlocks }).run();
    client.close();
    out.end();
    await finished(out);

    const unitArgs = options.unitBlocks === undefined ? [] : ["--unit-blocks", String(options.unitBlocks)];
    const indexArgs = [CLI, "index", "--rpc", url, "--confirmations", "0", "--to-block", String(history.head), ...unitArgs];
    // Each tool runs several times, each into a fresh redis-server, taking turns at going first, and
    // their medians are compared: the first process to take a lot of memory after the history's
    // generation pays the kernel a cost that the processes after it do not (bench/README.md), and
    // that cost belongs to neither tool.
    const indexRuns: TimedRun[] = [];
    const ingestRuns: TimedRun[] = [];
    /** Runs the CLI with `args` into a fresh redis-server, timed; the store is left running for the caller to stop. */
    const timeRun = async (command: string, args: string[], logLevel: string, runs: TimedRun[]) => {
      const redis = await redisServer(keep);
      const env = { REDIS_URL: redis.url, LOG_LEVEL: logLevel };
      const timed = await busyWhile(() => run(process.execPath, args, env, `${command}: `));
      if (timed.code !== 0) throw new Error(`relgraph ${command} exited ${timed.code}`);
      runs.push(timed);
      return { env, stop: redis.stop };
    };
    const timeIngest = async () => (await timeRun("ingest", [CLI, "ingest", file], "warn", ingestRuns)).stop();
    let startup: RunResult | null = null;
    for (let turn = 0; turn < TIMED_RUNS; turn++) {
      const indexFirst = turn % 2 === 0;
      if (!indexFirst) await timeIngest();
      const indexStore = await timeRun("index", indexArgs, "info", indexRuns);
      // The same command on the now filled store finds its position at --to-block and exits: what
      // is left is the start-up every index run pays and the floor replay does not.
      if (turn === TIMED_RUNS - 1) startup = await run(process.execPath, indexArgs, indexStore.env, "index again: ");
      await indexStore.stop();
      if (indexFirst) await timeIngest();
    }
    if (startup === null) throw new Error("relgraph index was never run again on its filled store");
    if (startup.code !== 0) throw new Error(`relgraph index, run again on its filled store, exited ${startup.code}`);
    const restartedRecords = stoppedRecords(startup.stderr);
    if (restartedRecords !== 0) throw new Error(`relgraph index, run again on its filled store, applied ${restartedRecords} records instead of none`);
    const reported = [...new Set(indexRuns.map((timed) => stoppedRecords(timed.stderr)))];
    if (reported.length !== 1) throw new Error(`relgraph index applied different numbers of records in its runs: ${reported.join(", ")}`);
    const records = reported[0]!;
    const indexed = median(indexRuns);
    const ingested = median(ingestRuns);

    // The floor: the median of a few replays (each a few seconds), with anvil's CPU time over them.
    const replays: (ReplayResult & { anvilCpuSeconds: number })[] = [];
    for (let i = 0; i < FLOOR_REPLAYS; i++) {
      const cpuBefore = await cpuSeconds(anvil.pid);
      const replay = await replayRequests(url, recording.requests);
      replays.push({ ...replay, anvilCpuSeconds: (await cpuSeconds(anvil.pid)) - cpuBefore });
      log(`floor: replay ${i + 1} of ${FLOOR_REPLAYS}: ${replay.requests} requests, ${(replay.answerBytes / 1e6).toFixed(1)} MB of answers in ${replay.seconds.toFixed(2)} s`);
    }
    const floor = replays.sort((x, y) => x.seconds - y.seconds)[Math.floor(replays.length / 2)]!;
    const limitSeconds = startup.seconds + floor.seconds;

    const result: BackfillResult = {
      transactions: history.transactions,
      blocks: history.head,
      records: written,
      indexSeconds: round(indexed.seconds),
      indexRecordsPerSecond: Math.round(written / indexed.seconds),
      indexTransactionsPerSecond: Math.round(history.transactions / indexed.seconds),
      ingestSeconds: round(ingested.seconds),
      ingestRecordsPerSecond: Math.round(written / ingested.seconds),
      indexOverIngest: round(ingested.seconds / indexed.seconds),
      floorSeconds: round(floor.seconds),
      floorRequests: floor.requests,
      floorAnswerMegabytes: round(floor.answerBytes / 1e6),
      floorAnvilCpuSeconds: round(floor.anvilCpuSeconds),
      // Bounds that leave out the index's start-up; bestIndexOverIngest below counts it.
      floorOverIngest: round(floor.seconds / ingested.seconds),
      ingestOverFloor: round(ingested.seconds / floor.seconds),
      indexStartupSeconds: round(startup.seconds),
      limitSeconds: round(limitSeconds),
      bestIndexOverIngest: round(ingested.seconds / limitSeconds),
      indexRunsSeconds: indexRuns.map((timed) => round(timed.seconds)),
      ingestRunsSeconds: ingestRuns.map((timed) => round(timed.seconds)),
      indexMachineBusySeconds: round(indexed.machineBusySeconds),
      ingestMachineBusySeconds: round(ingested.machineBusySeconds),
      indexerReportedRecords: records,
    };
    return result;
  } finally {
    for (const managed of started.reverse()) await managed.stop();
    await rm(work, { recursive: true, force: true });
  }
}

/** Runs `timed` and notes the CPU seconds the whole machine was busy meanwhile, to show how full its cores were. */
async function busyWhile(timed: () => Promise<RunResult>): Promise<TimedRun> {
  const before = await machineBusySeconds();
  const result = await timed();
  return { ...result, machineBusySeconds: (await machineBusySeconds()) - before };
}

/** The records of relgraph index's "stopped" log line (pino JSON on stderr); 0 when it has none. */
function stoppedRecords(stderr: string): number {
  const stopped = stderr
    .split("\n")
    .map((line) => {
      try {
        return JSON.parse(line) as { msg?: string; records?: number };
      } catch {
        return {};
      }
    })
    .find((line) => line.msg === "stopped");
  return stopped?.records ?? 0;
}

/** The run of median wall time (of an odd number of runs). */
function median(runs: readonly TimedRun[]): TimedRun {
  return [...runs].sort((x, y) => x.seconds - y.seconds)[Math.floor(runs.length / 2)]!;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
