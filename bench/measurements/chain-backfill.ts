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
import { cpuSeconds, freePort, run, start, type Managed } from "../processes/processes.js";
import { ANVIL_HISTORY_ARGS, makeChainHistory } from "../workload/chain-history.js";

/*
 * How fast does `relgraph index` backfill a chain, against `relgraph ingest` of the very records it
 * derives? A generated history (workload/chain-history.ts) on a private anvil; `relgraph index
 * --to-block HEAD --confirmations 0` into one fresh redis-server; the same derivation, unit by unit,
 * written to JSON Lines and loaded with `relgraph ingest` into another. And the floor: the same
 * JSON-RPC requests (recorded from that derivation's reader) replayed to anvil with the same batches
 * and concurrency, answers read whole but not parsed (rpc-floor.ts): the time anvil alone needs,
 * below which no indexer on this machine can go.
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

/** Seconds, rates and the target's ratio (indexOverIngest), beside the floor. */
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
  /** The target's ratio can reach at best ingest ÷ floor: 0.5 needs floorOverIngest ≤ 2. */
  floorOverIngest: number;
  ingestOverFloor: number;
  /** Records relgraph index said it applied; equal to `records` when both derivations agree. */
  indexerReportedRecords: number;
}

/** Replays of the floor; the median is reported. */
const FLOOR_REPLAYS = 3;

async function redisServer(keep: (managed: Managed) => Managed): Promise<string> {
  const port = await freePort();
  keep(await start("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { ready: /Ready to accept/ }));
  return `redis://127.0.0.1:${port}`;
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

    const unitArgs = options.unitBlocks === undefined ? [] : ["--unit-blocks", String(options.unitBlocks)];
    const indexRedis = await redisServer(keep);
    const indexed = await run(process.execPath, [CLI, "index", "--rpc", url, "--confirmations", "0", "--to-block", String(history.head), ...unitArgs], { REDIS_URL: indexRedis, LOG_LEVEL: "info" }, "index: ");
    if (indexed.code !== 0) throw new Error(`relgraph index exited ${indexed.code}`);
    const stopped = indexed.stderr
      .split("\n")
      .map((line) => {
        try {
          return JSON.parse(line) as { msg?: string; records?: number };
        } catch {
          return {};
        }
      })
      .find((line) => line.msg === "stopped");
    const records = stopped?.records ?? 0;

    // The same records, unit by unit, as `relgraph ingest` reads them.
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
    const ingestRedis = await redisServer(keep);
    const ingested = await run(process.execPath, [CLI, "ingest", file], { REDIS_URL: ingestRedis, LOG_LEVEL: "warn" }, "ingest: ");
    if (ingested.code !== 0) throw new Error(`relgraph ingest exited ${ingested.code}`);

    // The floor: the median of a few replays (each a few seconds), with anvil's CPU time over them.
    const replays: (ReplayResult & { anvilCpuSeconds: number })[] = [];
    for (let i = 0; i < FLOOR_REPLAYS; i++) {
      const cpuBefore = await cpuSeconds(anvil.pid);
      const replay = await replayRequests(url, recording.requests);
      replays.push({ ...replay, anvilCpuSeconds: (await cpuSeconds(anvil.pid)) - cpuBefore });
      log(`floor: replay ${i + 1} of ${FLOOR_REPLAYS}: ${replay.requests} requests, ${(replay.answerBytes / 1e6).toFixed(1)} MB of answers in ${replay.seconds.toFixed(2)} s`);
    }
    const floor = replays.sort((x, y) => x.seconds - y.seconds)[Math.floor(replays.length / 2)]!;

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
      // The target's ratio (ingest ÷ index) can reach at best ingest ÷ floor: 0.5 needs floorOverIngest ≤ 2.
      floorOverIngest: round(floor.seconds / ingested.seconds),
      ingestOverFloor: round(ingested.seconds / floor.seconds),
      indexerReportedRecords: records,
    };
    return result;
  } finally {
    for (const managed of started.reverse()) await managed.stop();
    await rm(work, { recursive: true, force: true });
  }
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
