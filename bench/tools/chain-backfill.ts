import { createWriteStream, rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { finished } from "node:stream/promises";
import { parseArgs } from "node:util";
import { createChainReader } from "../../src/chain/chain-reader.js";
import { createIndexer, type LedgerStore } from "../../src/chain/indexer.js";
import { createRpcClient } from "../../src/chain/rpc-client.js";
import { recordingClient, replayRequests, type ReplayResult } from "../measurements/rpc-floor.js";
import { anvilBinary } from "../processes/anvil.js";
import { cpuSeconds, freePort, installCleanup, run, start, stopAll } from "../processes/processes.js";
import { ANVIL_HISTORY_ARGS, makeChainHistory } from "../workload/chain-history.js";

/*
 * How fast does `relgraph index` backfill a chain, against `relgraph ingest` of the very records it
 * derives? A generated history (workload/chain-history.ts) on a private anvil; `relgraph index
 * --to-block HEAD --confirmations 0` into one fresh redis-server; the same derivation, unit by unit,
 * written to JSON Lines and loaded with `relgraph ingest` into another. And the floor: the same
 * JSON-RPC requests (recorded from that derivation's reader) replayed to anvil with the same batches
 * and concurrency, answers read whole but not parsed (measurements/rpc-floor.ts): the time anvil
 * alone needs, below which no indexer on this machine can go.
 *
 *   npm run build && node dist/bench/tools/chain-backfill.js [--transactions N] [--per-block N] [--seed S]
 */

const USAGE = `usage: node dist/bench/tools/chain-backfill.js [options]
  --transactions N   transactions of the generated history (default 100000)
  --users N          addresses that send, receive and hold (default 20000)
  --per-block N      transactions per block (default 500)
  --unit-blocks N    relgraph index --unit-blocks (default its own)
  --seed S           history seed (default 37)
`;

const CLI = path.resolve("dist/src/cli/main.js");

async function redisServer(): Promise<string> {
  const port = await freePort();
  await start("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { ready: /Ready to accept/ });
  return `redis://127.0.0.1:${port}`;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      transactions: { type: "string", default: "100000" },
      users: { type: "string", default: "20000" },
      "per-block": { type: "string", default: "500" },
      "unit-blocks": { type: "string" },
      seed: { type: "string", default: "37" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const work = await mkdtemp(path.join(os.tmpdir(), "relgraph-chain-bench-"));
  installCleanup(() => rmSync(work, { recursive: true, force: true }));
  const log = (line: string) => process.stderr.write(`${line}\n`);
  try {
    const anvilPort = await freePort();
    const anvil = await start(anvilBinary(), ["--host", "127.0.0.1", "--port", String(anvilPort), ...ANVIL_HISTORY_ARGS], { ready: /Listening on/ });
    const url = `http://127.0.0.1:${anvilPort}`;
    const history = await makeChainHistory({ url, users: Number(values.users), transactions: Number(values.transactions), perBlock: Number(values["per-block"]), seed: Number(values.seed), log });
    log(`history: ${history.transactions.toLocaleString("en-US")} transactions in blocks 1-${history.head}`);

    const unitArgs = values["unit-blocks"] ? ["--unit-blocks", values["unit-blocks"]] : [];
    const indexRedis = await redisServer();
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
    const unitBlocks = values["unit-blocks"] ? Number(values["unit-blocks"]) : undefined;
    await createIndexer({ store: capture, chain: createChainReader(client, { contracts: null }), finality: { confirmations: 0 }, contracts: null, fromBlock: 0, toBlock: history.head, unitBlocks }).run();
    client.close();
    out.end();
    await finished(out);
    const ingestRedis = await redisServer();
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

    const result = {
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
    };
    if (records !== written) log(`note: relgraph index reported ${records} records, the derivation here ${written}`);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } finally {
    await stopAll();
  }
}

/** Replays of the floor; the tool reports the median. */
const FLOOR_REPLAYS = 3;

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`chain-backfill: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
