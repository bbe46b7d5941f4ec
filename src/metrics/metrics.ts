import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { GraphStore } from "../store/store.js";

/** Latency buckets in seconds: relgraph answers in tens of microseconds to a few hundred milliseconds. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** relgraph's Prometheus metrics, served at GET /metrics. */
export interface RelgraphMetrics {
  registry: Registry;
  /** Counts one finished request and its latency. `code` is the contract's code, or the HTTP/gRPC status. */
  observeRequest(operation: string, protocol: string, code: string, seconds: number): void;
  /**
   * How far the change feed's applied position trails the stream, in seconds: set by the feed
   * consumer (`relgraph follow`) as it applies entries.
   */
  changeFeedLag: Gauge;
}

/** Creates the metrics, on a registry of their own (so tests and several servers in one process do not collide). */
export function createMetrics(): RelgraphMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "relgraph_" });
  const requests = new Counter({
    name: "relgraph_requests_total",
    help: "Requests answered, by operation, protocol and code.",
    labelNames: ["operation", "protocol", "code"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "relgraph_request_duration_seconds",
    help: "Time to answer a request, by operation and protocol.",
    labelNames: ["operation", "protocol"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const changeFeedLag = new Gauge({
    name: "relgraph_change_feed_lag_seconds",
    help: "How far the applied change feed trails the stream, in seconds.",
    registers: [registry],
  });
  return {
    registry,
    changeFeedLag,
    observeRequest(operation, protocol, code, seconds) {
      requests.inc({ operation, protocol, code });
      latency.observe({ operation, protocol }, seconds);
    },
  };
}

/**
 * Wraps a store so that each call's latency and failures are counted, by method: a cross-cutting
 * concern kept outside the engines, as a wrapper.
 */
export function withStoreMetrics(store: GraphStore, metrics: RelgraphMetrics): GraphStore {
  const latency = new Histogram({
    name: "relgraph_store_call_duration_seconds",
    help: "Time of one store call, by method.",
    labelNames: ["method"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [metrics.registry],
  });
  const errors = new Counter({
    name: "relgraph_store_errors_total",
    help: "Store calls that failed, by method.",
    labelNames: ["method"] as const,
    registers: [metrics.registry],
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
            latency.observe({ method: name }, (performance.now() - started) / 1000);
            return value;
          },
          (error: unknown) => {
            errors.inc({ method: name });
            throw error;
          },
        );
      };
    },
  });
}
