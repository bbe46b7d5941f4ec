import { Counter, Gauge, Registry } from "prom-client";
import type { CacheStats, GraphStore } from "../store/store.js";
import { keyedCounter, keyedHistogram } from "./keyed-series.js";
import { collectProcessMetrics } from "./process-metrics.js";

/** Latency buckets in seconds: relgraph answers in tens of microseconds to a few hundred milliseconds. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** relgraph's Prometheus metrics, served at GET /metrics. */
export interface RelgraphMetrics {
  registry: Registry;
  /** Counts one finished request and its latency. `code` is the contract's code, or the HTTP/gRPC status. */
  observeRequest(operation: string, protocol: string, code: string, seconds: number): void;
}

/** Creates the metrics, on a registry of their own (so tests and several servers in one process do not collide). */
export function createMetrics(): RelgraphMetrics {
  const registry = new Registry();
  collectProcessMetrics(registry, "relgraph_");
  // Every request is counted and timed: keyed-series.ts says why these are not prom-client's own.
  const requests = keyedCounter(registry, {
    name: "relgraph_requests_total",
    help: "Requests answered, by operation, protocol and code.",
    labelNames: ["operation", "protocol", "code"],
  });
  const latency = keyedHistogram(registry, {
    name: "relgraph_request_duration_seconds",
    help: "Time to answer a request, by operation and protocol.",
    labelNames: ["operation", "protocol"],
    buckets: LATENCY_BUCKETS,
  });
  return {
    registry,
    observeRequest(operation, protocol, code, seconds) {
      requests.inc([operation, protocol, code]);
      latency.observe([operation, protocol], seconds);
    },
  };
}

/**
 * Wraps a store so that each call's latency and failures are counted, by method: a cross-cutting
 * concern kept outside the engines, as a wrapper.
 */
export function withStoreMetrics(store: GraphStore, metrics: RelgraphMetrics): GraphStore {
  // Several store calls per request: keyed series, as for requests.
  const latency = keyedHistogram(metrics.registry, {
    name: "relgraph_store_call_duration_seconds",
    help: "Time of one store call, by method.",
    labelNames: ["method"],
    buckets: LATENCY_BUCKETS,
  });
  const errors = keyedCounter(metrics.registry, {
    name: "relgraph_store_errors_total",
    help: "Store calls that failed, by method.",
    labelNames: ["method"],
  });
  return new Proxy(store, {
    get(target, name, receiver) {
      const member = Reflect.get(target, name, receiver) as unknown;
      if (typeof member !== "function" || typeof name !== "string" || name === "close") return member;
      return (...args: unknown[]) => {
        const started = performance.now();
        const result = (member as (...a: unknown[]) => unknown).apply(target, args);
        if (!(result instanceof Promise)) return result;
        return result.then(
          (value) => {
            latency.observe([name], (performance.now() - started) / 1000);
            return value;
          },
          (error: unknown) => {
            errors.inc([name]);
            throw error;
          },
        );
      };
    },
  });
}

/**
 * The read caches' lookups, read from the store at each scrape: relgraph_cache_lookups_total by
 * cache and result (hit or miss), whose rates give each cache's hit rate, and relgraph_cache_entries.
 */
export function registerCacheMetrics(metrics: RelgraphMetrics, stats: () => CacheStats): void {
  new Counter({
    name: "relgraph_cache_lookups_total",
    help: "Read-cache lookups by cache and result (hit or miss); hit rate = rate(hit) / rate(hit + miss).",
    labelNames: ["cache", "result"] as const,
    registers: [metrics.registry],
    collect() {
      this.reset();
      for (const [cache, { hits, misses }] of Object.entries(stats())) {
        this.inc({ cache, result: "hit" }, hits);
        this.inc({ cache, result: "miss" }, misses);
      }
    },
  });
  new Gauge({
    name: "relgraph_cache_entries",
    help: "Entries each read cache holds (setMembers: UserIds over all cached sets).",
    labelNames: ["cache"] as const,
    registers: [metrics.registry],
    collect() {
      for (const [cache, { entries }] of Object.entries(stats())) this.set({ cache }, entries);
    },
  });
}

/** The change-feed consumer's counters since it started that its metrics report (feed/consumer.ts's FeedStats holds them). */
export type FeedCounters = Record<"entries" | "records" | "rejected" | "claimed", number>;

/** Where `relgraph follow` stands, as its metrics read it at each scrape. */
export interface FeedMetricsSource {
  /** The consumer's counters. */
  stats(): FeedCounters;
  /** The stream's lag now: entries not yet delivered and not yet acknowledged, and the XADD time (ms) of the oldest one not applied; null when the group does not exist. */
  lag(): Promise<{ undelivered: number | null; pending: number; oldestUnappliedMs: number | null } | null>;
}

/**
 * The change feed's metrics, on a registry of their own: `relgraph follow --metrics-port` serves
 * them. relgraph_change_feed_lag_seconds is how long the oldest entry not yet applied has waited
 * since its XADD (0 when caught up): it grows while the feed falls behind or stands still.
 */
export function createFeedMetrics(source: FeedMetricsSource): Registry {
  const registry = new Registry();
  collectProcessMetrics(registry, "relgraph_follow_");
  let last: Awaited<ReturnType<FeedMetricsSource["lag"]>> = null;
  let measured: Promise<void> | null = null;
  /** One measurement per scrape, shared by the gauges below; a scrape while Redis is away keeps the last one. */
  const measure = () =>
    (measured ??= source
      .lag()
      .then((lag) => void (last = lag), () => undefined)
      .finally(() => setImmediate(() => (measured = null))));
  new Gauge({
    name: "relgraph_change_feed_lag_seconds",
    help: "How long the oldest stream entry not yet applied has waited since it was added, in seconds (0 when caught up).",
    registers: [registry],
    async collect() {
      await measure();
      const oldest = last?.oldestUnappliedMs;
      this.set(oldest == null ? 0 : Math.max(0, (Date.now() - oldest) / 1000));
    },
  });
  new Gauge({
    name: "relgraph_change_feed_entries_waiting",
    help: "Stream entries not yet applied: undelivered (not yet read by the group) and pending (read, not yet acknowledged).",
    labelNames: ["state"] as const,
    registers: [registry],
    async collect() {
      await measure();
      this.set({ state: "pending" }, last?.pending ?? 0);
      if (last?.undelivered != null) this.set({ state: "undelivered" }, last.undelivered);
    },
  });
  registerScrapedCounters(registry, [
    ["relgraph_change_feed_entries_total", "Stream entries applied and acknowledged by this consumer.", () => source.stats().entries],
    ["relgraph_change_feed_records_total", "Records of the entries this consumer applied.", () => source.stats().records],
    ["relgraph_change_feed_rejected_total", "Entries this consumer sent to the rejected stream.", () => source.stats().rejected],
    ["relgraph_change_feed_claimed_total", "Entries this consumer took over from others.", () => source.stats().claimed],
  ]);
  return registry;
}

/**
 * Counters whose totals a long-running command keeps itself (the feed's consumer, the chain indexer):
 * each is read at scrape time rather than incremented as things happen.
 */
export function registerScrapedCounters(registry: Registry, counters: readonly [name: string, help: string, read: () => number][]): void {
  for (const [name, help, read] of counters) {
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  }
}
