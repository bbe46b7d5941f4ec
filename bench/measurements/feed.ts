/*
 * The change feed's throughput: push change records into a stream, let `relgraph follow` (a real
 * process) drain it, and count records per second from its first read to the group's last
 * acknowledgement. measureFeed is the hook `npm run bench` calls on its store of the bench
 * dataset (users u1 … uN); run directly (node dist/bench/measurements/feed.js --users N --records M), this file
 * makes its own private redis-server and graph first.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createClient, createCluster } from "redis";
import { freePort, installCleanup, run, start, stopAll } from "../processes/processes.js";
import { createPrng } from "../../src/synthetic/prng.js";

const MAIN = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

/** Options of measureFeed. */
export interface FeedBenchOptions {
  /** The store the feed applies to, as relgraph's environment names it, holding users u1 … u`users`. */
  env: { REDIS_URL: string } | { REDIS_CLUSTER_NODES: string };
  users: number;
  /** Change records to push. */
  records: number;
  /** Records per stream entry, as JSON Lines in `records` (1: one record in `record`). Default 1,000. */
  recordsPerEntry?: number;
  /** `relgraph follow` processes sharing the stream. Default 1. */
  consumers?: number;
  /** Default "bench". */
  seed?: string;
  /** Default "relgraph:bench-changes", emptied first. */
  stream?: string;
  /** Extra arguments of `relgraph follow`, e.g. ["--batch", "20000"]. */
  followArgs?: string[];
  /** The records to push (JSON Lines); default changeRecords (friend and follow adds). */
  lines?: Iterable<string>;
  /** Every this many entries, one carries a single record in `record` (0, the default: never). */
  singleRecordEvery?: number;
  /**
   * "drain" (default): push everything, then start the consumers and time their draining.
   * "live": start the consumers first and time from the first XADD to the last acknowledgement,
   * as a feed that is written while it is followed sees it.
   */
  mode?: "drain" | "live";
  log?: (line: string) => void;
}

/** The outcome: records/s from the consumers' first read to the group's last acknowledgement. */
export interface FeedBenchResult {
  records: number;
  entries: number;
  consumers: number;
  /** Seconds XADD took for every entry, before the consumers started. */
  pushSeconds: number;
  seconds: number;
  recordsPerSecond: number;
  /** Entries the consumers rejected (0 when all went well). */
  rejected: number;
}

/** Pushes the records, runs the consumers until the stream is drained, stops them, and reports. */
export async function measureFeed(options: FeedBenchOptions): Promise<FeedBenchResult> {
  const stream = options.stream ?? "relgraph:bench-changes";
  const perEntry = options.recordsPerEntry ?? 1_000;
  const consumers = options.consumers ?? 1;
  const log = options.log ?? (() => {});
  const redis = await connect(options.env);
  try {
    await redis.send(stream, ["DEL", stream]);
    await redis.send(`${stream}:rejected`, ["DEL", `${stream}:rejected`]);
    // The group starts at the beginning of the stream: the consumers read what is pushed now.
    await redis.send(stream, ["XGROUP", "CREATE", stream, "relgraph", "0", "MKSTREAM"]);
    const lines = options.lines ?? changeRecords(options.users, options.records, options.seed ?? "bench");
    const push = async () => {
      const pushStarted = performance.now();
      const entries = await pushChanges(redis.send, stream, lines, perEntry, options.singleRecordEvery ?? 0);
      const pushSeconds = (performance.now() - pushStarted) / 1000;
      log(`feed: pushed ${options.records.toLocaleString("en-US")} records in ${entries.toLocaleString("en-US")} entries in ${pushSeconds.toFixed(1)} s`);
      return { entries, pushSeconds };
    };
    const live = options.mode === "live";
    const pushed = live ? null : await push();

    const followers = await Promise.all(
      Array.from({ length: consumers }, (_, i) =>
        start(process.execPath, [MAIN, "follow", "--stream", stream, "--consumer", `bench-${i + 1}`, ...(options.followArgs ?? [])], {
          env: { REDIS_URL: "", REDIS_CLUSTER_NODES: "", ...options.env, LOG_LEVEL: "info" },
          ready: /"msg":"following"/,
        }),
      ),
    );
    // From here the consumers read: the clock runs until the group has acknowledged everything.
    const started = performance.now();
    const { entries, pushSeconds } = pushed ?? (await push());
    for (;;) {
      const state = await groupState(redis.send, stream);
      if (state.lag === 0 && state.pending === 0) break;
      const exited = followers.find((follower) => follower.exited() !== null);
      if (exited) throw new Error(`relgraph follow exited (${exited.exited()}):\n${exited.output().slice(-2_000)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const seconds = (performance.now() - started) / 1000;
    await Promise.all(followers.map((follower) => follower.stop()));
    const rejected = Number(await redis.send(`${stream}:rejected`, ["XLEN", `${stream}:rejected`]));
    return { records: options.records, entries, consumers, pushSeconds, seconds, recordsPerSecond: options.records / seconds, rejected };
  } finally {
    await redis.close();
  }
}

/**
 * Change records about the stored users u1 … uN: friend and follow edges between random users,
 * which every relgraph version accepts. Seeded: the same options give the same records.
 */
export function* changeRecords(users: number, count: number, seed: string): Generator<string> {
  const random = createPrng(`${seed}:feed`);
  const pick = () => 1 + random.int(users);
  for (let i = 0; i < count; i++) {
    const a = pick();
    let b = pick();
    if (b === a) b = (a % users) + 1;
    yield i % 2 === 0 ? `{"type":"friend","a":"u${a}","b":"u${b}"}` : `{"type":"follow","from":"u${a}","to":"u${b}"}`;
  }
}

type Send = (key: string, args: string[]) => Promise<unknown>;

/** XADDs the lines, `perEntry` to an entry, many entries in flight at once; resolves with the entry count. */
export async function pushChanges(send: Send, stream: string, lines: Iterable<string>, perEntry: number, singleRecordEvery = 0): Promise<number> {
  const window: Promise<unknown>[] = [];
  let entries = 0;
  let chunk: string[] = [];
  const flush = async () => {
    const fields = chunk.length === 1 ? ["record", chunk[0]!] : ["records", chunk.join("\n")];
    chunk = [];
    entries++;
    window.push(send(stream, ["XADD", stream, "*", ...fields]));
    if (window.length >= 256) await Promise.all(window.splice(0));
  };
  for (const line of lines) {
    chunk.push(line);
    const single = singleRecordEvery > 0 && entries % singleRecordEvery === singleRecordEvery - 1;
    if (chunk.length === perEntry || single) await flush();
  }
  if (chunk.length > 0) await flush();
  await Promise.all(window);
  return entries;
}

async function groupState(send: Send, stream: string): Promise<{ lag: number | null; pending: number }> {
  const groups = (await send(stream, ["XINFO", "GROUPS", stream])) as unknown[][];
  for (const info of groups) {
    const map = new Map<string, unknown>();
    for (let i = 0; i + 1 < info.length; i += 2) map.set(String(info[i]), info[i + 1]);
    if (map.get("name") === "relgraph") return { lag: map.get("lag") == null ? null : Number(map.get("lag")), pending: Number(map.get("pending")) };
  }
  throw new Error(`no group "relgraph" on ${stream}`);
}

async function connect(env: FeedBenchOptions["env"]): Promise<{ send: Send; close(): Promise<void> }> {
  if ("REDIS_CLUSTER_NODES" in env) {
    const cluster = createCluster({ rootNodes: env.REDIS_CLUSTER_NODES.split(",").map((node) => ({ url: `redis://${node}` })) });
    await cluster.connect();
    return { send: (key, args) => cluster.sendCommand(key, false, args), close: () => cluster.close() };
  }
  const client = createClient({ url: env.REDIS_URL });
  await client.connect();
  return { send: (_key, args) => client.sendCommand(args), close: () => client.close() };
}

/** Standalone: a private redis-server, `relgraph generate | relgraph ingest`, then measureFeed. */
async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      users: { type: "string", default: "10000" },
      records: { type: "string", default: "500000" },
      "per-entry": { type: "string", default: "1000" },
      consumers: { type: "string", default: "1" },
      batch: { type: "string" },
    },
  });
  const work = await mkdtemp(path.join(os.tmpdir(), "relgraph-feed-bench-"));
  installCleanup(() => {});
  try {
    const port = await freePort();
    await start("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", work], {
      ready: /Ready to accept connections/,
    });
    const env = { REDIS_URL: `redis://127.0.0.1:${port}` };
    const file = path.join(work, "graph.jsonl");
    const generated = await run(process.execPath, [MAIN, "generate", "--users", values.users, "--seed", "feed", "--out", file], {}, "  generate: ");
    if (generated.code !== 0) throw new Error("relgraph generate failed");
    const ingested = await run(process.execPath, [MAIN, "ingest", file], env, "  ingest: ");
    if (ingested.code !== 0) throw new Error("relgraph ingest failed");
    const result = await measureFeed({
      env,
      users: Number(values.users),
      records: Number(values.records),
      recordsPerEntry: Number(values["per-entry"]),
      consumers: Number(values.consumers),
      followArgs: values.batch === undefined ? [] : ["--batch", values.batch],
      log: (line) => process.stderr.write(`${line}\n`),
    });
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await stopAll();
    await rm(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`feed bench: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  });
}
