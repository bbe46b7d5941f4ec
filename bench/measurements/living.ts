import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "redis";
import { createRelgraphClient, type RelationshipGraphEntry } from "../../src/client/index.js";
import { changeMix, friendChurn } from "../workload/changes.js";
import type { StoredEdges } from "../workload/dataset.js";
import { measureFeed } from "./feed.js";
import { gets, httpSaturate, type HttpTarget } from "../load/http-load.js";
import type { LoadResult } from "../load/load.js";
import type { LivingId } from "../options.js";
import { cpuSeconds, run, start, type Managed } from "../processes/processes.js";
import type { Authorization } from "../workload/siwe-auth.js";

/*
 * Issue 14's "Speed" table: what relgraph does while its graph changes. Change throughput through
 * `relgraph ingest` and through the feed, reads while 1,000 changes/s flow against the same reads with
 * none, and how long a narrowed release takes to show on another server instance. Each runs on the
 * bench's own store after the read-only operations, so their figures are of the unchanged dataset.
 */

const MAIN = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));
/** The stream the bench's feed measurements use (emptied first); not relgraph's default. */
const STREAM = "relgraph:bench-changes";
/** Background change rate of the "while changes flow" measurements (the figure). */
export const CHURN_PER_SECOND = 1_000;
/** Ticks per second of the background writer: entries of CHURN_PER_SECOND / TICKS records each. */
const CHURN_TICKS = 100;
/** Every this many feed entries, one carries a single `record` (the rest `records` batches). */
const SINGLE_RECORD_EVERY = 10;
const FEED_RECORDS_PER_ENTRY = 1_000;
/** How long a withdrawal trial waits for the peer to go (or come back) before calling it lost. */
const TRIAL_TIMEOUT_MS = 10_000;

/** Change throughput through one path. */
export interface Throughput {
  records: number;
  seconds: number;
  recordsPerSecond: number;
  /** The rate relgraph printed itself (ingest only). */
  reportedRecordsPerSecond: number | null;
  entries: number | null;
  rejected: number | null;
}

/** One read measured with no changes, then while changes flow. */
export interface UnderChanges {
  id: "mf-mm-live" | "rec-live";
  /** Mean of the read-only runs before and after the one under changes (caches warm across runs: A-B-A cancels it). */
  readOnlyRps: number;
  /** The two read-only runs: apart, they show how much the figure drifts with caches warming. */
  readOnlyBeforeRps: number;
  readOnlyAfterRps: number;
  underChangesRps: number;
  ratio: number | null;
  readOnlyP99Ms: number;
  underChangesP99Ms: number;
  /** Change records offered per second during the measurement, and applied per second by relgraph follow. */
  offeredChangesPerSecond: number;
  appliedChangesPerSecond: number;
  /** Entries not yet acknowledged when the measurement ended (lag + pending): how far follow fell behind. */
  backlogAtEnd: number;
  /** Cores used by relgraph follow and by redis-server while the reads ran under changes: the writers' share of the machine. */
  followCores: number | null;
  redisCores: number | null;
  errors: number;
}

/** Withdrawal latency over its trials. */
export interface Withdrawal {
  trials: number;
  /** XADD of the narrowed release → first answer of the second instance without the peer, ms. */
  latenciesMs: number[];
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  /** XADD of the restored release → first answer with the peer again (the other direction), ms. */
  restoreP50Ms: number | null;
  restoreMaxMs: number | null;
  /** Time one query took (no decryption), median: the resolution of the latencies. */
  pollMs: number | null;
  /** Trials whose peer was still shown after TRIAL_TIMEOUT_MS, or that could not run. */
  failures: string[];
}

/** Every living-graph figure of one run (null where not selected). */
export interface LivingResult {
  ingest: Throughput | null;
  feed: Throughput | null;
  underChanges: UnderChanges[];
  withdrawal: Withdrawal | null;
  problems: string[];
}

/** What the living measurements need from the bench run. */
export interface LivingContext {
  ids: readonly LivingId[];
  work: string;
  redisUrl: string;
  users: number;
  seed: string;
  /** Change records for the two throughput figures. */
  changeRecords: number;
  /** Edges of the stored graph for the change records to delete (Dataset.storedEdges). */
  storedEdges?: StoredEdges;
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  relgraph: { port: number; apiKey: string };
  redisPid: number;
  /** REST paths of the reads compared with and without changes. */
  reads: { "mf-mm-live": string[]; "rec-live": string[] };
  wallets: { relationId: string; address: string; authorization: Authorization }[];
  trials: number;
  /** Starts another `relgraph serve` on the same Redis; resolves with its port. */
  startSecondServer(): Promise<{ port: number; stop(): Promise<void> }>;
  log(line: string): void;
}

/** The two change-throughput runs: `relgraph ingest`, then the feed. */
export type ThroughputRun = "ingest" | "feed";

/**
 * The change records of one throughput run over the bench's dataset. The two runs delete different
 * halves of the sampled stored edges: the second's would be gone after the first. `spare` users
 * (the wallet users) are never touched.
 */
export function throughputChanges(
  run: ThroughputRun,
  source: { users: number; seed: string; changeRecords: number; storedEdges?: StoredEdges; spare: ReadonlySet<string> },
): Generator<string> {
  const half = run === "ingest" ? 0 : 1;
  const stored = source.storedEdges && {
    friends: source.storedEdges.friends.filter((_, i) => i % 2 === half),
    follows: source.storedEdges.follows.filter((_, i) => i % 2 === half),
  };
  return changeMix({ users: source.users, count: source.changeRecords, seed: `${source.seed}:${run}`, spare: source.spare, stored });
}

/** Runs the selected living-graph measurements in the order of the table. */
export async function measureLiving(context: LivingContext): Promise<LivingResult> {
  const result: LivingResult = { ingest: null, feed: null, underChanges: [], withdrawal: null, problems: [] };
  const spare = new Set(context.wallets.map((w) => w.relationId));
  const mix = (run: ThroughputRun) => throughputChanges(run, { ...context, spare });
  const attempt = async (what: string, body: () => Promise<void>) => {
    try {
      await body();
    } catch (error) {
      result.problems.push(`${what}: ${error instanceof Error ? error.message.split("\n").slice(0, 6).join(" | ") : String(error)}`);
    }
  };

  if (context.ids.includes("ingest-changes")) {
    await attempt("ingest-changes", async () => {
      context.log(`bench: ${context.changeRecords.toLocaleString("en-US")} change records through relgraph ingest …`);
      const file = path.join(context.work, "changes.jsonl");
      await writeFile(file, `${[...mix("ingest")].join("\n")}\n`);
      const ingest = await run(process.execPath, [MAIN, "ingest", file], { REDIS_URL: context.redisUrl }, "  ingest changes: ");
      if (ingest.code !== 0) throw new Error(`relgraph ingest of the changes failed (exit ${ingest.code}): ${ingest.stderr.slice(-1_000)}`);
      const reported = /([\d,]+) records\/s/.exec(ingest.stdout);
      result.ingest = {
        records: context.changeRecords,
        seconds: ingest.seconds,
        recordsPerSecond: context.changeRecords / ingest.seconds,
        reportedRecordsPerSecond: reported ? Number(reported[1]!.replaceAll(",", "")) : null,
        entries: null,
        rejected: null,
      };
    });
  }
  if (context.ids.includes("feed-changes")) {
    await attempt("feed-changes", async () => {
      context.log(`bench: ${context.changeRecords.toLocaleString("en-US")} change records through the feed (relgraph follow) …`);
      // Made before the clock starts: generating the synthetic records is the producer's work, and on
      // these 2 cores it would take CPU from the follower and Redis while the feed is timed.
      const lines = [...mix("feed")];
      const feed = await measureFeed({
        env: { REDIS_URL: context.redisUrl },
        users: context.users,
        records: context.changeRecords,
        lines,
        recordsPerEntry: FEED_RECORDS_PER_ENTRY,
        singleRecordEvery: SINGLE_RECORD_EVERY,
        stream: STREAM,
        mode: "live",
        log: context.log,
      });
      result.feed = {
        records: feed.records,
        seconds: feed.seconds,
        recordsPerSecond: feed.recordsPerSecond,
        reportedRecordsPerSecond: null,
        entries: feed.entries,
        rejected: feed.rejected,
      };
      if (feed.rejected > 0) result.problems.push(`feed-changes: ${feed.rejected} entries rejected (see ${STREAM}:rejected)`);
    });
  }

  const needsFollower = context.ids.some((id) => id === "mf-mm-live" || id === "rec-live" || id === "withdraw");
  if (!needsFollower) return result;
  const redis = createClient({ url: context.redisUrl });
  await redis.connect();
  let follower: Managed | null = null;
  try {
    await redis.del([STREAM, `${STREAM}:rejected`]);
    follower = await start(process.execPath, [MAIN, "follow", "--stream", STREAM, "--consumer", "bench-live", "--from", "$"], {
      // info: its ready line ("following") is logged at that level.
      env: { REDIS_URL: context.redisUrl, LOG_LEVEL: "info" },
      ready: /"msg":"following"/,
    });
    for (const id of ["mf-mm-live", "rec-live"] as const) {
      if (!context.ids.includes(id)) continue;
      await attempt(id, async () => {
        context.log(`bench: ${id}: REST read-only, then while ${CHURN_PER_SECOND.toLocaleString("en-US")} changes/s flow …`);
        result.underChanges.push(await measureUnderChanges(id, context, redis, spare, follower!.pid));
      });
    }
    if (context.ids.includes("withdraw")) {
      await attempt("withdraw", async () => {
        context.log(`bench: withdrawal latency, ${context.trials} trials on a second relgraph serve …`);
        result.withdrawal = await measureWithdrawal(context, redis);
      });
    }
    if (follower.exited() !== null) result.problems.push(`relgraph follow exited (${follower.exited()}): ${follower.output().slice(-1_000)}`);
  } finally {
    await follower?.stop();
    await redis.close();
  }
  return result;
}

type Redis = ReturnType<typeof createClient>;

/**
 * Saturates one REST read with no changes, then again while a paced writer XADDs friend adds and
 * deletes at CHURN_PER_SECOND for the follower to apply: the ratio is what live writes cost readers
 * (cache invalidation, Redis shared with the writer, the follower's CPU on the same cores).
 */
async function measureUnderChanges(
  id: UnderChanges["id"],
  context: LivingContext,
  redis: Redis,
  spare: ReadonlySet<string>,
  followPid: number,
): Promise<UnderChanges> {
  const target: HttpTarget = {
    baseUrl: `http://127.0.0.1:${context.relgraph.port}`,
    requests: gets(context.reads[id]),
    headers: { ApiKey: context.relgraph.apiKey },
  };
  const saturate = (seconds: number): Promise<LoadResult> => httpSaturate(target, context.connections, seconds);
  await saturate(context.warmupSeconds);
  const readOnlyBefore = await saturate(context.durationSeconds);

  const churn = friendChurn({ users: context.users, count: Number.MAX_SAFE_INTEGER, seed: `${context.seed}:${id}`, spare });
  const writer = pacedWriter(redis, churn, CHURN_PER_SECOND);
  let under: LoadResult;
  let seconds: number;
  let offered: number;
  let applied: number;
  let followCores: number;
  let redisCores: number;
  try {
    await saturate(context.warmupSeconds);
    const startedAt = performance.now();
    const offeredBefore = writer.records();
    const ackBefore = await acknowledged(redis);
    const cpuBefore = { follow: await cpuSeconds(followPid), redis: await cpuSeconds(context.redisPid) };
    under = await saturate(context.durationSeconds);
    seconds = (performance.now() - startedAt) / 1000;
    followCores = ((await cpuSeconds(followPid)) - cpuBefore.follow) / seconds;
    redisCores = ((await cpuSeconds(context.redisPid)) - cpuBefore.redis) / seconds;
    offered = writer.records() - offeredBefore;
    applied = (await acknowledged(redis)) - ackBefore;
  } finally {
    // However the reads ended, the writer stops: it would otherwise XADD until the bench exits.
    await writer.stop();
  }
  const backlog = await backlogOf(redis);
  // Let the follower catch up before the second read-only run, so it runs with no writes at all.
  for (let i = 0; i < 500 && (await backlogOf(redis)) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const readOnlyAfter = await saturate(context.durationSeconds);
  const readOnlyRps = (readOnlyBefore.rps + readOnlyAfter.rps) / 2;
  return {
    id,
    readOnlyRps,
    readOnlyBeforeRps: readOnlyBefore.rps,
    readOnlyAfterRps: readOnlyAfter.rps,
    underChangesRps: under.rps,
    ratio: readOnlyRps > 0 ? under.rps / readOnlyRps : null,
    readOnlyP99Ms: Math.max(readOnlyBefore.p99Ms, readOnlyAfter.p99Ms),
    underChangesP99Ms: under.p99Ms,
    offeredChangesPerSecond: offered / seconds,
    appliedChangesPerSecond: applied / seconds,
    backlogAtEnd: backlog,
    followCores,
    redisCores,
    errors: readOnlyBefore.errors + readOnlyAfter.errors + under.errors,
  };
}

/**
 * XADDs `perSecond` records, CHURN_TICKS entries a second of perSecond / CHURN_TICKS records each
 * (`records` JSON Lines), on a clock that catches up rather than drifts. `records()` counts what was
 * sent; a tick's records are counted as they are sent.
 */
function pacedWriter(redis: Redis, lines: Iterator<string>, perSecond: number): { records(): number; stop(): Promise<void> } {
  const perTick = Math.max(1, Math.round(perSecond / CHURN_TICKS));
  let sent = 0;
  let stopped = false;
  const started = performance.now();
  const loop = (async () => {
    for (let tick = 0; !stopped; tick++) {
      const due = started + (tick * 1000) / CHURN_TICKS;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const batch: string[] = [];
      for (let i = 0; i < perTick; i++) batch.push(lines.next().value as string);
      await redis.xAdd(STREAM, "*", batch.length === 1 ? { record: batch[0]! } : { records: batch.join("\n") });
      sent += batch.length;
    }
  })();
  return {
    records: () => sent,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

/** Records the follower has acknowledged so far, from its stream: entries read and not pending, counted in records. */
async function acknowledged(redis: Redis): Promise<number> {
  // Every churn entry holds the same number of records, so entries acknowledged × records per entry.
  const groups = (await redis.sendCommand(["XINFO", "GROUPS", STREAM])) as unknown[][];
  const info = fields(groups[0] ?? []);
  const read = Number(info.get("entries-read") ?? 0);
  const pending = Number(info.get("pending") ?? 0);
  return (read - pending) * Math.max(1, Math.round(CHURN_PER_SECOND / CHURN_TICKS));
}

async function backlogOf(redis: Redis): Promise<number> {
  const groups = (await redis.sendCommand(["XINFO", "GROUPS", STREAM])) as unknown[][];
  const info = fields(groups[0] ?? []);
  return Number(info.get("lag") ?? 0) + Number(info.get("pending") ?? 0);
}

function fields(list: unknown[]): Map<string, unknown> {
  const map = new Map<string, unknown>();
  for (let i = 0; i + 1 < list.length; i += 2) map.set(String(list[i]), list[i + 1]);
  return map;
}

/**
 * For each trial: a wallet user's relationship graph on a SECOND `relgraph serve` (decrypted with the
 * project's client), a peer it shows, the XADD of a release naming every shown peer but that one, and
 * polls of the second instance until the peer is gone. Then the release is restored to "*" and polled
 * until the peer is back, so the next trial starts from the dataset's state.
 */
async function measureWithdrawal(context: LivingContext, redis: Redis): Promise<Withdrawal> {
  const second = await context.startSecondServer();
  const failures: string[] = [];
  const latencies: number[] = [];
  const restores: number[] = [];
  const polls: number[] = [];
  try {
    const client = createRelgraphClient({ baseUrl: `http://127.0.0.1:${second.port}`, apiKey: context.relgraph.apiKey });
    type Wallet = LivingContext["wallets"][number];
    type Answer = { at: number; data: Parameters<typeof client.decrypt>[0] };
    const query = async (wallet: Wallet): Promise<Answer> => {
      const began = performance.now();
      const page = await client.relationshipGraph({ address: wallet.address }, wallet.authorization, { limit: 100 });
      const at = performance.now();
      polls.push(at - began);
      return { at, data: page.data };
    };
    const peersOf = async (wallet: Wallet, answer: Answer) =>
      (await client.decrypt<RelationshipGraphEntry[]>(answer.data, wallet.authorization)).map((entry) => entry.relation.relationId);
    /**
     * Queries back to back from `since`, keeping every answer with its arrival time, while the newest
     * is decrypted in turn until one satisfies `done`; then bisects the answers in between for the
     * first that does. Decryption (threshold shares, pairings) takes far longer than a query, so the
     * figure's resolution is one query rather than one decryption. Bisection assumes that once an
     * answer satisfies `done`, later ones do too; the newest is checked again at the end, and a flip
     * back (a stale answer after a fresh one) is reported as a failure.
     */
    const firstAnswer = async (wallet: Wallet, since: number, done: (peers: string[]) => boolean): Promise<number | null> => {
      const answers: Answer[] = [];
      let stop = false;
      const poller = (async () => {
        while (!stop && performance.now() - since < TRIAL_TIMEOUT_MS) answers.push(await query(wallet));
      })();
      try {
        let lo = -1;
        let hi = -1;
        while (hi < 0) {
          if (answers.length <= lo + 1) {
            if (performance.now() - since >= TRIAL_TIMEOUT_MS) return null;
            await new Promise((resolve) => setTimeout(resolve, 1));
            continue;
          }
          const newest = answers.length - 1;
          if (done(await peersOf(wallet, answers[newest]!))) hi = newest;
          else lo = newest;
        }
        stop = true;
        await poller;
        while (hi - lo > 1) {
          const mid = (lo + hi) >> 1;
          if (done(await peersOf(wallet, answers[mid]!))) hi = mid;
          else lo = mid;
        }
        const last = answers[answers.length - 1]!;
        if (!done(await peersOf(wallet, last))) {
          failures.push(`${wallet.relationId}: an answer ${(last.at - answers[hi]!.at).toFixed(0)} ms after a fresh one was stale again`);
        }
        return answers[hi]!.at - since;
      } finally {
        stop = true;
        await poller;
      }
    };
    for (let trial = 0; trial < context.trials; trial++) {
      const wallet = context.wallets[trial % context.wallets.length]!;
      const before = await peersOf(wallet, await query(wallet));
      if (before.length === 0) {
        failures.push(`trial ${trial + 1}: ${wallet.relationId} shows no peers`);
        continue;
      }
      const peer = before[trial % before.length]!;
      const narrowed = before.filter((p) => p !== peer);
      const xadd = performance.now();
      await redis.xAdd(STREAM, "*", { record: JSON.stringify({ type: "release", relationId: wallet.relationId, peers: narrowed }) });
      const latency = await firstAnswer(wallet, xadd, (peers) => !peers.includes(peer));
      if (latency === null) failures.push(`trial ${trial + 1}: ${peer} still shown for ${wallet.relationId} after ${TRIAL_TIMEOUT_MS} ms`);
      else latencies.push(latency);
      const restore = performance.now();
      await redis.xAdd(STREAM, "*", { record: JSON.stringify({ type: "release", relationId: wallet.relationId, peers: "*" }) });
      const back = await firstAnswer(wallet, restore, (peers) => peers.includes(peer));
      if (back === null) failures.push(`trial ${trial + 1}: ${peer} not shown again for ${wallet.relationId} after ${TRIAL_TIMEOUT_MS} ms`);
      else restores.push(back);
    }
  } finally {
    await second.stop();
  }
  return {
    trials: context.trials,
    latenciesMs: latencies,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: latencies.length > 0 ? Math.max(...latencies) : null,
    restoreP50Ms: quantile(restores, 0.5),
    restoreMaxMs: restores.length > 0 ? Math.max(...restores) : null,
    pollMs: quantile(polls, 0.5),
    failures,
  };
}

/** The q-quantile of the values (nearest rank), or null when there are none. */
export function quantile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
