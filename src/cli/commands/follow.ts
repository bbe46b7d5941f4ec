import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { pino } from "pino";
import type { CommandIo } from "../io.js";
import { describe, usage } from "../output.js";
import { createStore } from "../../store/index.js";
import { redisCommandConfig } from "../redis-config.js";
import { createFeedMetrics } from "../../metrics/metrics.js";
import { serveMetrics } from "../../metrics/serve-metrics.js";
import { createFeedConsumer, DEFAULT_LINGER_MS, type FeedConsumer, type FeedProgress } from "../../feed/consumer.js";
import { connectFeedStream, DEFAULT_MAX_REJECTED, type FeedStream } from "../../feed/stream.js";

/** The stream `relgraph follow` reads unless told otherwise. */
export const DEFAULT_STREAM = "relgraph:changes";
/** The consumer group `relgraph follow` joins unless told otherwise. */
export const DEFAULT_GROUP = "relgraph";
/** How often `--trim` trims: often enough that each trim is small, rarely enough to cost nothing. */
const TRIM_EVERY_MS = 1_000;
/** --linger's largest value: a second is the contract's whole freshness bound. */
const MAX_LINGER_MS = 1_000;

const FOLLOW_HELP = `Usage: relgraph follow [--stream KEY] [--group NAME] [--consumer NAME] [options]

Applies the change feed: consumes a Redis Stream through a consumer group on the configured Redis
(REDIS_URL) or Redis Cluster (REDIS_CLUSTER_NODES), until SIGINT or SIGTERM. Each entry holds a field
"record" (one JSON record) or "records" (JSON Lines), in the ingestion format. An entry is
acknowledged only once applied. An invalid entry is not applied: it goes to KEY:rejected with its
reason (which keeps the newest --max-rejected records), and the feed goes on. Run several consumers in one group to share the work: they take turns
under the store's write lease, so entries apply in stream order whichever consumer applies them,
and entries a consumer held when it died are taken over by the next one once its lease has expired
(WRITE_LEASE_MS).

Options:
  --stream KEY            the stream (default ${DEFAULT_STREAM})
  --group NAME            the consumer group, created if missing (default ${DEFAULT_GROUP})
  --consumer NAME         this consumer's name in the group, stable across restarts so that a
                          restarted consumer resumes its own entries at once (default HOST-PID)
  --from ID               where a group created now starts: 0, the whole stream (default); $, only
                          entries added from now on; or after the entry with that id
  --batch N               most entries applied as one unit (default 10000); a unit also holds
                          about 64 MiB of records at most, judged by the entries read before
  --linger MS             on a busy stream (a unit applied in the last 100 ms), how long a unit
                          waits, once, for more entries before it is applied (default ${DEFAULT_LINGER_MS}; 0 never):
                          fewer, larger units cost less CPU, and a change waits up to MS longer
  --max-deliveries N      reject an entry delivered N times without being applied (default 5)
  --max-rejected N        records KEY:rejected keeps, the oldest making room (default ${DEFAULT_MAX_REJECTED})
  --trim                  delete the entries every group of the stream has acknowledged, at most
                          once a second (by default the stream keeps every entry: trim it yourself)
  --metrics-port PORT     serve Prometheus metrics at http://HOST:PORT/metrics (HOST as serve's,
                          default 0.0.0.0; 0 picks a free port, logged): the feed's lag in
                          seconds, entries waiting, and entries, records and rejections applied
  -h, --help              show this help

Progress goes to stderr as JSON lines (pino): records applied, records/s, entries rejected, and the
group's lag (entries not yet delivered, and delivered but not yet acknowledged).

Exit status: 0 stopped by SIGINT/SIGTERM, after applying and acknowledging the unit in hand; 1 the
stream or store cannot be opened; 2 usage or configuration error.
`;

/** `relgraph follow [...]`; argv holds the arguments after "follow". Resolves with the exit code once stopped. */
export async function runFollow(argv: string[], io: CommandIo): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        stream: { type: "string" },
        group: { type: "string" },
        consumer: { type: "string" },
        from: { type: "string" },
        batch: { type: "string" },
        linger: { type: "string" },
        "max-deliveries": { type: "string" },
        "max-rejected": { type: "string" },
        "metrics-port": { type: "string" },
        trim: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    return usage(io, "follow", (error as Error).message);
  }
  if (values.help) {
    io.stdout.write(FOLLOW_HELP);
    return 0;
  }
  const numbers: Record<string, number> = {};
  for (const [flag, fallback, max] of [
    ["batch", "10000", 1_000_000],
    ["max-deliveries", "5", 1_000],
    ["max-rejected", String(DEFAULT_MAX_REJECTED), 100_000_000],
  ] as const) {
    const text = values[flag] ?? fallback;
    if (!/^[1-9]\d{0,8}$/.test(text) || Number(text) > max) return usage(io, "follow", `--${flag} must be an integer from 1 to ${max}, got "${text}"`);
    numbers[flag] = Number(text);
  }
  const linger = values.linger ?? String(DEFAULT_LINGER_MS);
  if (!/^\d{1,4}$/.test(linger) || Number(linger) > MAX_LINGER_MS) return usage(io, "follow", `--linger must be an integer from 0 to ${MAX_LINGER_MS} (ms), got "${linger}"`);
  const metricsPort = values["metrics-port"];
  if (metricsPort !== undefined && (!/^\d{1,5}$/.test(metricsPort) || Number(metricsPort) > 65_535)) {
    return usage(io, "follow", `--metrics-port must be a port from 0 to 65535, got "${metricsPort}"`);
  }
  const from = values.from ?? "0";
  if (!/^(\$|0|\d+(-\d+)?)$/.test(from)) return usage(io, "follow", `--from must be 0, $ or a stream id, got "${from}"`);
  for (const flag of ["stream", "group", "consumer"] as const) {
    if (values[flag] === "") return usage(io, "follow", `--${flag} must not be empty`);
  }

  const config = redisCommandConfig(io, "follow");
  if (config === null) return 2;
  const redis = config.redisClusterNodes.length > 0 ? { clusterNodes: config.redisClusterNodes } : { url: config.redisUrl ?? "" };
  const key = values.stream ?? DEFAULT_STREAM;
  const group = values.group ?? DEFAULT_GROUP;
  const consumer = values.consumer ?? `${hostname()}-${process.pid}`;
  const logger = pino({ level: config.logLevel, base: { consumer } }, io.stderr);

  let stream: FeedStream;
  let store;
  try {
    // The feed reads only to validate, in bulk: read caches would only hear of every key it writes.
    store = await createStore(config, { readCaches: false });
  } catch (error) {
    io.stderr.write(`relgraph follow: cannot open the store: ${describe(error)}\n`);
    return 1;
  }
  try {
    stream = await connectFeedStream({ redis, key, group, consumer, maxRejected: numbers["max-rejected"] });
  } catch (error) {
    await store.close();
    io.stderr.write(`relgraph follow: cannot open the stream: ${describe(error)}\n`);
    return 1;
  }

  const feed = createFeedConsumer({
    store,
    stream,
    startId: from,
    unitEntries: numbers.batch,
    readCount: Math.min(1_000, numbers.batch!),
    maxDeliveries: numbers["max-deliveries"],
    lingerMs: Number(linger),
    trimEveryMs: values.trim ? TRIM_EVERY_MS : undefined,
    logger,
    onProgress: progressLogger(logger),
  });
  let metricsServer: Server | null = null;
  if (metricsPort !== undefined) {
    try {
      metricsServer = await serveFeedMetrics(feed, stream, config.host, Number(metricsPort));
    } catch (error) {
      await Promise.all([stream.close(), store.close()]);
      io.stderr.write(`relgraph follow: cannot serve metrics on port ${metricsPort}: ${describe(error)}\n`);
      return 1;
    }
    logger.info({ port: (metricsServer.address() as AddressInfo).port, path: "/metrics" }, "serving metrics");
  }
  const stop = (signal: NodeJS.Signals) => {
    logger.info({ signal }, "stopping after the unit in hand");
    feed.stop();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  logger.info({ stream: key, group, engine: store.engine, from }, "following");
  try {
    const stats = await feed.run();
    logger.info({ entries: stats.entries, records: stats.records, rejected: stats.rejected, claimed: stats.claimed, trimmed: stats.trimmed }, "stopped");
    return 0;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    metricsServer?.closeAllConnections();
    await Promise.all([stream.close(), store.close(), metricsServer && new Promise((resolve) => metricsServer.close(resolve))]);
  }
}

/** Serves the feed's Prometheus metrics (metrics.ts) at GET /metrics. */
function serveFeedMetrics(feed: FeedConsumer, stream: FeedStream, host: string, port: number): Promise<Server> {
  const registry = createFeedMetrics({
    stats: () => feed.stats(),
    async lag() {
      const [lag, oldest] = await Promise.all([stream.lag(), stream.oldestUnapplied()]);
      return lag && { ...lag, oldestUnappliedMs: oldest === null ? null : Number(oldest.split("-")[0]) };
    },
  });
  return serveMetrics(registry, host, port);
}

/** Logs a progress line whenever something moved since the last one. */
function progressLogger(logger: pino.Logger): (progress: FeedProgress) => void {
  let last = "";
  return (progress) => {
    const fields = {
      records: progress.records,
      recordsPerSecond: Math.round(progress.recordsPerSecond),
      entries: progress.entries,
      rejected: progress.rejected,
      claimed: progress.claimed,
      trimmed: progress.trimmed,
      lag: progress.lag?.undelivered ?? null,
      pending: progress.lag?.pending ?? null,
      lastEntryAgeMs: progress.lastEntryAgeMs,
    };
    const state = JSON.stringify([fields.records, fields.rejected, fields.claimed, fields.trimmed, fields.lag, fields.pending]);
    if (state === last) return;
    last = state;
    logger.info(fields, "progress");
  };
}
