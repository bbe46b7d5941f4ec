import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "redis";
import { RELATION_ID_INDEX } from "../src/store/redis/keys.js";
import { TRACKING_CLIENT_NAME } from "../src/store/redis/tracking.js";
import { effectiveCores } from "./load/calibrate.js";
import { BENCH_DATASET, createDataset, loadHeapFlags, type Dataset } from "./workload/dataset.js";
import { measureChain, renderChain, type ChainResult } from "./measurements/chain.js";
import { measureLiving, type LivingResult } from "./measurements/living.js";
import { measureOp, type BenchTargets, type OpResult } from "./measurements/measure.js";
import { measurePrivate, renderPrivate, type PrivateResult } from "./measurements/private.js";
import { measureProtocols, renderProtocols, type ProtocolsResult } from "./measurements/protocols.js";
import { HELP, parseOptions, UsageError, type BenchOptions } from "./options.js";
import { PAGE_SIZE, planOp } from "./measurements/ops.js";
import { freePort, installCleanup, run, start, stopAll, type Managed } from "./processes/processes.js";
import { measureRedisMemory, type RedisMemory } from "./processes/redis-memory.js";
import { awaitKeyspaceRehash, REHASH_TIMEOUT_MS } from "./processes/redis-rehash.js";
import { evaluateTargets, ratiosOf, renderReport, sharedCoresNote, type Ingestion } from "./report.js";
import { createConnectClient, createGrpcClient, GRPC_CHANNELS } from "./load/rpc-clients.js";
import { signAuthorizations } from "./workload/siwe-auth.js";

/*
 * `npm run bench`: the end-to-end benchmark of relgraph over a private Redis (see HELP in
 * options.ts). Progress goes to stderr, the report to stdout, the figures to a JSON file.
 */

const MAIN = fileURLToPath(new URL("../src/cli/main.js", import.meta.url));
const PEER = fileURLToPath(new URL("./processes/peer-server.js", import.meta.url));
/**
 * The bench asks, as one client, what a service's many users would: its one ApiKey may hold the whole
 * recommendation snapshot pool (RECOMMEND_SNAPSHOT_LIMIT's default), not one key's share of it.
 */
const ONE_CLIENT_SHARE = { RECOMMEND_SNAPSHOTS_PER_KEY: "50000" };

const log = (line: string) => process.stderr.write(`${line}\n`);

async function main(argv: string[]): Promise<number> {
  let options;
  try {
    options = parseOptions(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`bench: ${error.message}\n\n${HELP}`);
    return 2;
  }
  if (options === "help") {
    process.stdout.write(HELP);
    return 0;
  }
  const work = await mkdtemp(path.join(os.tmpdir(), "relgraph-bench-"));
  installCleanup(() => rmSync(work, { recursive: true, force: true }));
  try {
    return await runBench(options, work);
  } finally {
    await stopAll();
  }
}

/** Runs the whole bench; 1 when relgraph died during it (the report says how), else 0. */
async function runBench(options: BenchOptions, work: string): Promise<number> {
  const startedAt = new Date();
  const cores = await effectiveCores();
  log(`bench: ${cores.reported} cores reported, ${cores.effective.toFixed(2)} cores of CPU time delivered to ${cores.reported} busy threads`);
  // On processes of its own, before the serving bench starts any: nothing else runs beside it.
  const chain = options.chain ? await measureChain(options, log) : null;
  if (chain && options.only.length === 0 && options.living.length === 0 && !options.protocols && !options.private) {
    process.stdout.write(`${renderChain(chain)}\n`);
    const file = await writeJson(options, startedAt, { startedAt: startedAt.toISOString(), options, machine: machineOf(cores), source: sourceState(), chain });
    process.stdout.write(`Results: ${file}\n`);
    return 0;
  }
  log(`bench: generating ${options.users.toLocaleString("en-US")} users (seed "${options.seed}") …`);
  const dataset = await createDataset({
    users: options.users,
    seed: options.seed,
    file: path.join(work, "dataset.jsonl"),
    ...BENCH_DATASET,
  });
  log(`bench: ${dataset.records.toLocaleString("en-US")} records (${(dataset.bytes / 2 ** 20).toFixed(0)} MiB) in ${dataset.generateSeconds.toFixed(1)} s`);

  const redisPort = await freePort();
  const redisServer = await start(
    "redis-server",
    // DEBUG for awaitKeyspaceRehash, from this machine only.
    ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", work, "--enable-debug-command", "local"],
    { ready: /Ready to accept connections/ },
  );
  const redisUrl = `redis://127.0.0.1:${redisPort}`;

  const heapFlags = loadHeapFlags(options.users);
  log(`bench: relgraph ingest into redis-server on port ${redisPort} …`);
  const ingestRun = await run(process.execPath, [...heapFlags, MAIN, "ingest", dataset.file], { REDIS_URL: redisUrl }, "  ingest: ");
  if (ingestRun.code !== 0) {
    throw new Error(`relgraph ingest failed (exit ${ingestRun.code}); the store cannot be benchmarked:\n${ingestRun.stderr.slice(-2_000)}`);
  }
  const reported = /([\d,]+) records\/s/.exec(ingestRun.stdout);
  const redis = createClient({ url: redisUrl });
  await redis.connect();
  const rehash = await awaitKeyspaceRehash(redis, REHASH_TIMEOUT_MS);
  log(
    rehash.seconds === 0
      ? "bench: Redis's keyspace is not being resized"
      : `bench: Redis resized its keyspace at the end of the load; its rehash ${rehash.settled ? "ended" : "was still under way"} after ${rehash.seconds.toFixed(1)} s`,
  );
  const ingestion: Ingestion = {
    records: dataset.records,
    seconds: ingestRun.seconds,
    recordsPerSecond: dataset.records / ingestRun.seconds,
    reportedRecordsPerSecond: reported ? Number(reported[1]!.replaceAll(",", "")) : null,
    rehash,
  };
  const userIds = await lookUpUserIds(redis, dataset);
  log("bench: measuring Redis memory of friend sets …");
  const memory = await measureRedisMemory(redis);
  const redisVersion = /redis_version:(\S+)/.exec(await redis.sendCommand<string>(["INFO", "server"]))?.[1] ?? "?";
  await redis.close();

  const apiKey = `bench-${randomBytes(12).toString("hex")}`;
  const relgraphPort = await freePort();
  const profileFlags = options.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${options.cpuProfDir}`] : [];
  if (options.cpuProfDir) await mkdir(options.cpuProfDir, { recursive: true });
  const relgraph = await start(process.execPath, [...profileFlags, MAIN, "serve"], {
    env: { REDIS_URL: redisUrl, API_KEYS: apiKey, DEV_KEY_NETWORK: "1", PORT: String(relgraphPort), HOST: "127.0.0.1", LOG_LEVEL: "warn", ...ONE_CLIENT_SHARE },
    ready: /relgraph listening on/,
  });
  let peer: Managed | null = null;
  let peerPort = 0;
  if (options.via.includes("peer")) {
    peerPort = await freePort();
    peer = await start(process.execPath, [PEER], { env: { PORT: String(peerPort), REDIS_URL: redisUrl }, ready: /peer listening/ });
  }

  const wallets = dataset.wallets.map((w) => w.wallet);
  const authorizations = {
    profile: await signAuthorizations(wallets, "profile"),
    relationshipGraph: await signAuthorizations(wallets, "relationshipGraph"),
  };
  const targets: BenchTargets = {
    durationSeconds: options.durationSeconds,
    warmupSeconds: options.warmupSeconds,
    connections: options.connections,
    redis: { port: redisPort, pid: redisServer.pid },
    relgraph: {
      port: relgraphPort,
      pid: relgraph.pid,
      apiKey,
      emptyCaches: () => dropTracking(redisUrl),
      diagnose: () => {
        const exit = relgraph.exited();
        return exit === null ? "" : `; relgraph has exited (${exit}), its last output:\n${relgraph.output().slice(-1_500)}`;
      },
    },
    peer: peer ? { port: peerPort, pid: peer.pid } : null,
    grpc: createGrpcClient(relgraphPort, apiKey),
    connectNode: createConnectClient(relgraphPort, apiKey),
  };

  const header = headerLines(options, dataset, redisVersion, heapFlags, cores);
  for (const line of header) log(line);
  const ops: OpResult[] = [];
  for (const id of options.only) {
    const plan = planOp(id, { dataset, userIds, authorizations });
    log(`bench: ${plan.title} — ${plan.sample}`);
    ops.push(await measureOp(plan, options.via, targets, log));
  }
  let protocols: ProtocolsResult | null = null;
  if (options.protocols) {
    const pair = dataset.pairs["median-median"][0];
    if (!pair) throw new Error("the dataset has no median × median pair to measure the protocols with");
    log("bench: protocols under h2load (issue 16) …");
    protocols = await measureProtocols({
      relgraph: { port: relgraphPort, apiKey },
      addresses: [pair.a.address, pair.b.address],
      limit: PAGE_SIZE,
      durationSeconds: options.durationSeconds,
      warmupSeconds: options.warmupSeconds,
      work,
      log,
    });
  }
  let privateAnswers: PrivateResult | null = null;
  if (options.private) {
    log("bench: private answers (issue 35) …");
    const mutualFriendPaths = planOp("mf-mm", { dataset, userIds, authorizations }).paths;
    privateAnswers = await measurePrivate({
      redisUrl,
      work,
      wallets: dataset.wallets,
      friendPool: Array.from({ length: Math.min(options.users, 5_000) }, (_, i) => `u${i + 1}`),
      mutualFriendPaths,
      durationSeconds: options.durationSeconds,
      shares: options.size === "small" ? 400 : 2_000,
      chromium: options.chromium,
      log,
    });
  }
  const living = options.living.length === 0 ? null : await measureLiving({
    ids: options.living,
    work,
    redisUrl,
    users: options.users,
    seed: options.seed,
    changeRecords: options.changeRecords,
    storedEdges: dataset.storedEdges,
    durationSeconds: options.durationSeconds,
    warmupSeconds: options.warmupSeconds,
    connections: options.connections,
    relgraph: { port: relgraphPort, apiKey },
    redisPid: redisServer.pid,
    reads: {
      "mf-mm-live": planOp("mf-mm", { dataset, userIds, authorizations }).paths,
      "rec-live": planOp("rec", { dataset, userIds, authorizations }).paths,
    },
    wallets: dataset.wallets.map((w, i) => ({ relationId: w.relationId, address: w.address, authorization: authorizations.relationshipGraph[i]! })),
    trials: options.trials,
    startSecondServer: async () => {
      const port = await freePort();
      const second = await start(process.execPath, [MAIN, "serve"], {
        env: { REDIS_URL: redisUrl, API_KEYS: apiKey, DEV_KEY_NETWORK: "1", PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn", ...ONE_CLIENT_SHARE },
        ready: /relgraph listening on/,
      });
      return { port, stop: () => second.stop() };
    },
    log,
  });
  targets.grpc.close();
  targets.connectNode.close();
  const relgraphExit = relgraph.exited();
  // A clean stop is what makes node --cpu-prof write its profile.
  await relgraph.stop();
  await peer?.stop();
  await redisServer.stop();

  const checks = evaluateTargets(ops, ingestion, memory, living);
  process.stdout.write(`${renderReport({ header, note: sharedCoresNote(cores.reported), ops, ingestion, memory, living, targets: checks })}\n`);
  if (protocols) process.stdout.write(`\n${renderProtocols(protocols)}\n`);
  if (privateAnswers) process.stdout.write(`\n${renderPrivate(privateAnswers)}\n`);
  if (chain) process.stdout.write(`\n${renderChain(chain)}\n`);
  if (options.cpuProfDir) process.stdout.write(`CPU profiles of relgraph: ${options.cpuProfDir} (summarize with node dist/bench/tools/cpuprofile-summary.js FILE)\n`);
  const file = await writeResults(options, startedAt, { dataset, ingestion, memory, ops, living, protocols, privateAnswers, chain, checks, redisVersion, heapFlags, cores });
  process.stdout.write(`Results: ${file}\n`);
  if (relgraphExit === null) return 0;
  process.stderr.write(`bench: relgraph exited during the run (${relgraphExit}); see the problems listed in the report\n`);
  return 1;
}

/** The commit the bench measures, and how far the working tree is from it (read-only git commands). */
function sourceState(): { commit: string; uncommittedFiles: number } {
  try {
    const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { stdio: ["ignore", "pipe", "ignore"] }).toString().trim();
    const status = execFileSync("git", ["status", "--porcelain"], { stdio: ["ignore", "pipe", "ignore"] }).toString();
    return { commit, uncommittedFiles: status.split("\n").filter(Boolean).length };
  } catch {
    return { commit: "unknown", uncommittedFiles: 0 };
  }
}

/** relationId → UserId for every user the bench queries, read once from relgraph's index. */
async function lookUpUserIds(redis: ReturnType<typeof createClient>, dataset: Dataset): Promise<Map<string, number>> {
  const relationIds = [
    ...new Set(Object.values(dataset.pairs).flatMap((pairs) => pairs.flatMap((p) => [p.a.relationId, p.b.relationId]))),
  ];
  const ids = relationIds.length === 0 ? [] : await redis.hmGet(RELATION_ID_INDEX, relationIds);
  const map = new Map<string, number>();
  relationIds.forEach((relationId, i) => {
    const id = ids[i];
    if (id != null) map.set(relationId, Number(id));
  });
  return map;
}

function headerLines(
  options: BenchOptions,
  dataset: Dataset,
  redisVersion: string,
  heapFlags: string[],
  cores: { reported: number; effective: number },
): string[] {
  const cpus = os.cpus();
  const d = dataset.degrees;
  const source = sourceState();
  const b = dataset.bands;
  return [
    `relgraph bench, size ${options.size}: ${options.users.toLocaleString("en-US")} generated users + ${dataset.wallets.length} wallet users, seed "${options.seed}", ` +
      `${options.durationSeconds} s per measurement after ${options.warmupSeconds} s warm-up, ${options.connections} connections/calls in flight (gRPC: over ${GRPC_CHANNELS} grpc-js channels)`,
    `Machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? "?"}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, Redis ${redisVersion}; relgraph, Redis, the peer and the load generator are separate processes on these cores.`,
    `relgraph: commit ${source.commit}${source.uncommittedFiles > 0 ? ` with ${source.uncommittedFiles} uncommitted file(s)` : ""}, built into dist/ by npm run bench.`,
    `Calibration: ${cores.reported} threads spinning together got ${cores.effective.toFixed(2)} cores of CPU time${cores.effective < cores.reported * 0.8 ? " — this machine delivers less than its core count" : ""}.`,
    sharedCoresNote(cores.reported),
    `Dataset: ${dataset.records.toLocaleString("en-US")} records, ${dataset.friendEdges.toLocaleString("en-US")} friend edges; degree mean ${d.mean.toFixed(1)}, median ${d.median}, p99 ${d.p99}, max ${d.max}; ${d.atLeastHubDegree} users ≥ ${BENCH_DATASET.hubDegree} friends.`,
    `Bands: median ${b.median.minDegree}–${b.median.maxDegree} (${b.median.users} users), p99 ${b.p99.minDegree}–${b.p99.maxDegree} (${b.p99.users}), hubs ${b.hub.minDegree}–${b.hub.maxDegree} (${b.hub.users}${d.atLeastHubDegree < 2 ? `: fewer than 2 users reach ${BENCH_DATASET.hubDegree}, so the ${BENCH_DATASET.fallbackHubs} best connected` : ""}).`,
    ...(heapFlags.length > 0 ? [`relgraph ingest ran with ${heapFlags.join(" ")}: its validator holds the whole load in memory.`] : []),
  ];
}

async function writeResults(
  options: BenchOptions,
  startedAt: Date,
  parts: {
    dataset: Dataset;
    ingestion: Ingestion;
    memory: RedisMemory;
    ops: OpResult[];
    living: LivingResult | null;
    protocols: ProtocolsResult | null;
    privateAnswers: PrivateResult | null;
    chain: ChainResult | null;
    checks: ReturnType<typeof evaluateTargets>;
    redisVersion: string;
    heapFlags: string[];
    cores: { reported: number; effective: number };
  },
): Promise<string> {
  const { dataset } = parts;
  const json = {
    startedAt: startedAt.toISOString(),
    options,
    machine: { ...machineOf(parts.cores), redis: parts.redisVersion },
    note: sharedCoresNote(parts.cores.reported),
    source: sourceState(),
    dataset: {
      records: dataset.records,
      bytes: dataset.bytes,
      users: dataset.users,
      friendEdges: dataset.friendEdges,
      degrees: dataset.degrees,
      bands: dataset.bands,
      pairs: Object.fromEntries(
        Object.entries(dataset.pairs).map(([band, pairs]) => [band, pairs.map((p) => ({ a: p.a.relationId, b: p.b.relationId, degrees: [p.a.degree, p.b.degree], mutual: p.mutual }))]),
      ),
      wallets: dataset.wallets.map((w) => ({ relationId: w.relationId, address: w.address, degree: w.degree })),
    },
    ingestion: { ...parts.ingestion, nodeFlags: parts.heapFlags },
    redisMemory: parts.memory,
    operations: parts.ops.map((op) => ({ ...op, ratios: ratiosOf(op) })),
    living: parts.living,
    protocols: parts.protocols,
    privateAnswers: parts.privateAnswers,
    chain: parts.chain,
    targets: parts.checks,
  };
  return writeJson(options, startedAt, json);
}

function machineOf(cores: { reported: number; effective: number }) {
  return { cores: cores.reported, effectiveCores: cores.effective, cpu: os.cpus()[0]?.model.trim(), memoryBytes: os.totalmem(), node: process.version };
}

/** Writes the run's figures to bench/results (or --results) and returns the file's path. */
async function writeJson(options: BenchOptions, startedAt: Date, json: object): Promise<string> {
  await mkdir(options.resultsDir, { recursive: true });
  const stamp = startedAt.toISOString().replace(/[:.]/g, "-");
  const file = path.join(options.resultsDir, `${options.size}-${stamp}.json`);
  await writeFile(file, `${JSON.stringify(json, null, 2)}\n`);
  return file;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    // main's finally has already stopped every process it started.
    process.exit(1);
  },
);

/**
 * Empties relgraph's caches from outside: kills its tracking connections, which makes it drop
 * everything it cached (src/store/redis/tracking.ts), and waits until it tracks again.
 */
async function dropTracking(redisUrl: string): Promise<void> {
  const redis = createClient({ url: redisUrl });
  await redis.connect();
  const tracking = async () =>
    (await redis.sendCommand<string>(["CLIENT", "LIST"]))
      .split("\n")
      .filter((line) => line.includes(` name=${TRACKING_CLIENT_NAME} `))
      .map((line) => ({ id: /\bid=(\d+)/.exec(line)?.[1] ?? "", tracking: /\bflags=\S*t/.test(line) }));
  try {
    const killed = await tracking();
    for (const { id } of killed) await redis.sendCommand(["CLIENT", "KILL", "ID", id]);
    for (let attempt = 0; attempt < 100; attempt++) {
      const now = await tracking();
      if (now.length >= killed.length && now.every((client) => client.tracking && !killed.some((k) => k.id === client.id))) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error("relgraph did not track Redis again within 5 s of losing its tracking connections");
  } finally {
    await redis.close();
  }
}
