import { spawn } from "node:child_process";
import { createReadStream } from "node:fs";
import { readFile, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pipeline } from "node:stream/promises";
import { createClient } from "redis";
import { cpuSeconds, freePort, run, start } from "../processes/processes.js";
import { awaitKeyspaceRehash, REHASH_TIMEOUT_MS } from "../processes/redis-rehash.js";
import { BENCH_DATASET, createDataset, loadHeapFlags } from "../workload/dataset.js";
import { throughputChanges } from "./living.js";

/*
 * The Redis ceiling of change throughput: how fast one redis-server applies, on its own, everything
 * `relgraph ingest` of the bench's change records asks of it (the plan's reads, the journal, the
 * apply, the lease). The bytes relgraph writes to Redis are captured (tools/resp-tee.ts), then
 * replayed through `redis-cli --pipe` over the same stored graph, with no writer at all. What Redis
 * needs for them bounds what any writer could reach with this store layout on this machine: issue
 * 14's target of 200k records/s (bench/README.md, "The Redis ceiling").
 *
 * Every trial starts from the same stored graph: the loaded dataset is saved once, and each run
 * begins with DEBUG RELOAD NOSAVE, which empties the server and loads that file again.
 */

const MAIN = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));
const TEE = fileURLToPath(new URL("../tools/resp-tee.js", import.meta.url));

/** Options of measureRedisCeiling. */
export interface CeilingOptions {
  users: number;
  changeRecords: number;
  trials: number;
  /** A directory for the dataset, the change records, the capture and the saved store. */
  work: string;
  /** The dataset's seed; the change records' derive from it as the bench's do. */
  seed: string;
  /** Also compare DEBUG DIGEST after each run with the first ingest's (slow: tens of seconds on the large store). */
  digest?: boolean;
  /**
   * Another build's dist/src/cli/main.js: each trial also times its `relgraph ingest` from the same
   * stored graph, right after this build's, so that a change to the writer is measured in pairs.
   */
  against?: string;
  /**
   * Keep the work directory's generated inputs and saved store for the next run with the same users,
   * changes and seed, which then starts from them (the dataset's generation and load take minutes).
   */
  reuse?: boolean;
  log(line: string): void;
}

/** One trial: each run starts from the same stored graph. */
export interface CeilingTrial {
  ingest: CeilingRun;
  /** `relgraph ingest --dry-run`: reading and validating the load (against the store too), writing nothing. */
  validate: CeilingRun;
  replay: CeilingRun;
  /** The other build's ingest, when CeilingOptions.against names one. */
  against: CeilingRun | null;
}

/** One timed run: wall time and the CPU the redis-server used during it. */
export interface CeilingRun {
  seconds: number;
  redisCpuSeconds: number;
  /** DEBUG DIGEST after the run, when asked for. */
  digest: string | null;
}

/** What measureRedisCeiling found. */
export interface CeilingResult {
  records: number;
  /** Bytes relgraph wrote to Redis. */
  capturedBytes: number;
  /** Replies of the last replay that were errors. */
  replayErrors: number;
  /** Per trial, relgraph ingest, its validation alone and the replay of its bytes, each from the same stored graph. */
  trials: CeilingTrial[];
  /** Whether every replay left the store as the ingest did (null when digests were not asked for). */
  sameState: boolean | null;
}

/** Generates the bench's dataset and change records, loads the dataset into a private redis-server, and times ingest against replay. */
export async function measureRedisCeiling(options: CeilingOptions): Promise<CeilingResult> {
  const { seed } = options;
  const changes = path.join(options.work, "changes.jsonl");
  const saved = path.join(options.work, "ceiling.rdb");
  const inputs = path.join(options.work, "ceiling-inputs.json");
  const wanted = JSON.stringify({ users: options.users, changeRecords: options.changeRecords, seed });
  const reused = options.reuse === true && (await readFile(inputs, "utf8").catch(() => "")) === wanted;
  if (!reused) {
    options.log(`ceiling: generating ${options.users.toLocaleString("en-US")} users (seed "${seed}") …`);
    const dataset = await createDataset({ users: options.users, seed, file: path.join(options.work, "dataset.jsonl"), ...BENCH_DATASET });
    const spare = new Set(dataset.wallets.map((wallet) => wallet.relationId));
    const lines = [...throughputChanges("ingest", { users: options.users, seed, changeRecords: options.changeRecords, storedEdges: dataset.storedEdges, spare })];
    await writeFile(changes, `${lines.join("\n")}\n`);
    await rm(saved, { force: true });
    await rm(inputs, { force: true });
  } else {
    options.log(`ceiling: reusing the dataset and change records of ${options.work}`);
  }
  const records = (await readFile(changes, "utf8")).split("\n").filter((line) => line.trim() !== "").length;

  const port = await freePort();
  // Started on the saved store, when it is reused: redis-server loads its dbfilename at start.
  const server = await start(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", options.work, "--dbfilename", "ceiling.rdb", "--enable-debug-command", "local"],
    { ready: /Ready to accept connections/ },
  );
  const env = { REDIS_URL: `redis://127.0.0.1:${port}` };
  const redis = createClient({ url: env.REDIS_URL });
  await redis.connect();
  try {
    if (!reused) {
      const dataset = path.join(options.work, "dataset.jsonl");
      options.log(`ceiling: loading the dataset …`);
      const load = await run(process.execPath, [...loadHeapFlags(options.users), MAIN, "ingest", dataset], env, "  load: ");
      if (load.code !== 0) throw new Error(`relgraph ingest of the dataset failed (exit ${load.code}): ${load.stderr.slice(-1_000)}`);
      await awaitKeyspaceRehash(redis, REHASH_TIMEOUT_MS);
      await redis.sendCommand(["SAVE"]);
      if (options.reuse) await writeFile(inputs, wanted);
    }

    const restore = async () => {
      await redis.sendCommand(["DEBUG", "RELOAD", "NOSAVE"]);
      await awaitKeyspaceRehash(redis, REHASH_TIMEOUT_MS);
    };
    const digest = async () => (options.digest ? redis.sendCommand<string>(["DEBUG", "DIGEST"]) : null);
    const timed = async (body: () => Promise<void>, writes = true): Promise<CeilingRun> => {
      const cpuBefore = await cpuSeconds(server.pid);
      const started = performance.now();
      await body();
      const seconds = (performance.now() - started) / 1000;
      return { seconds, redisCpuSeconds: (await cpuSeconds(server.pid)) - cpuBefore, digest: writes ? await digest() : null };
    };
    const ingest = async (extraArgs: string[], extraEnv: Record<string, string>, main = MAIN, ingestArgs: string[] = []) => {
      const result = await run(process.execPath, [...extraArgs, main, "ingest", ...ingestArgs, changes], { ...env, ...extraEnv }, "  changes: ");
      if (result.code !== 0) throw new Error(`relgraph ingest of the changes failed (exit ${result.code}): ${result.stderr.slice(-1_000)}`);
    };

    // Captured on a run of its own: copying the bytes costs the writer, not Redis, but it is kept out of the timed runs.
    const captured = path.join(options.work, "changes.resp");
    options.log("ceiling: capturing what relgraph ingest sends …");
    await restore();
    await ingest(["--import", TEE], { RESP_TEE_PORT: String(port), RESP_TEE_FILE: captured });
    const capturedBytes = (await stat(captured)).size;

    const trials: CeilingResult["trials"] = [];
    let replayErrors = 0;
    for (let trial = 1; trial <= options.trials; trial++) {
      await restore();
      // Writes nothing, so the next run needs no restore: it starts from the store this one validated against.
      const validateRun = await timed(() => ingest([], {}, MAIN, ["--dry-run"]), false);
      let ingestRun: CeilingRun;
      let againstRun: CeilingRun | null = null;
      const against = options.against;
      if (!against) {
        ingestRun = await timed(() => ingest([], {}));
      } else if (trial % 2 === 1) {
        // Paired runs alternate which build goes first, so that a drift of the machine falls on both alike.
        ingestRun = await timed(() => ingest([], {}));
        await restore();
        againstRun = await timed(() => ingest([], {}, against));
      } else {
        againstRun = await timed(() => ingest([], {}, against));
        await restore();
        ingestRun = await timed(() => ingest([], {}));
      }
      await restore();
      const replayRun = await timed(async () => {
        replayErrors = await replay(port, captured);
      });
      trials.push({ ingest: ingestRun, validate: validateRun, replay: replayRun, against: againstRun });
      const first = trials[0]!.ingest.digest;
      const shown = (run: CeilingRun) =>
        `${run.seconds.toFixed(2)} s (Redis CPU ${run.redisCpuSeconds.toFixed(2)} s${run.digest === null ? "" : run.digest === first ? ", same store" : ", ANOTHER STORE"})`;
      options.log(
        `ceiling: trial ${trial}: relgraph ingest ${shown(ingestRun)}, ` +
          (againstRun ? `the other build's ${shown(againstRun)}, ` : "") +
          `validation alone ${shown(validateRun)}, replay ${shown(replayRun)}`,
      );
    }
    const digests = trials.flatMap(({ ingest: i, replay: r, against: a }) => [i.digest, r.digest, ...(a ? [a.digest] : [])]);
    return {
      records,
      capturedBytes,
      replayErrors,
      trials,
      sameState: options.digest ? digests.every((d) => d === digests[0]) : null,
    };
  } finally {
    await redis.close();
    await server.stop();
  }
}

/**
 * Sends a captured byte stream to Redis with `redis-cli --pipe`, which writes it as fast as Redis
 * reads it and waits for every reply; resolves with the number of replies that were errors. It
 * exits 1 when there were any: node-redis's CLIENT SETINFO is one on servers before 7.2.
 */
async function replay(port: number, file: string): Promise<number> {
  const child = spawn("redis-cli", ["-p", String(port), "--pipe"], { stdio: ["pipe", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_096)));
  child.stderr.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_096)));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", resolve);
  });
  await pipeline(createReadStream(file), child.stdin);
  const code = await exited;
  const summary = /errors: (\d+), replies: (\d+)/.exec(output);
  if (!summary) throw new Error(`redis-cli --pipe exited (${code}) without reporting its replies: ${output.slice(-500)}`);
  return Number(summary[1]);
}
