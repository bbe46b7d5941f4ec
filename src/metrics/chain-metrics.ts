import { Gauge, Registry, collectDefaultMetrics } from "prom-client";
import { registerScrapedCounters } from "./metrics.js";

/** What `relgraph index --metrics-port` reports, read at each scrape. */
export interface IndexMetricsSource {
  stats(): {
    head: number | null;
    indexed: number | null;
    blocks: number;
    records: number;
    reorgs: number;
    blocksUndone: number;
    retries: number;
  };
  /** Requests to the RPC endpoints that failed (no answer, 429, 5xx, malformed), since the start. */
  rpcErrors(): number;
}

/** The chain indexer's Prometheus metrics, on a registry of their own. */
export function createIndexMetrics(source: IndexMetricsSource): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "relgraph_index_" });
  const gauges: [string, string, (stats: ReturnType<IndexMetricsSource["stats"]>) => number | null][] = [
    ["relgraph_index_head_block", "The chain's newest block, as the RPC last said.", (stats) => stats.head],
    ["relgraph_index_indexed_block", "The last block applied to the store.", (stats) => stats.indexed],
    ["relgraph_index_lag_blocks", "Blocks between the chain's head and the last block applied.", (stats) => (stats.head === null ? null : stats.head - (stats.indexed ?? -1))],
  ];
  for (const [name, help, read] of gauges) {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const value = read(source.stats());
        if (value !== null) this.set(value);
      },
    });
  }
  const counters: [string, string, () => number][] = [
    ["relgraph_index_blocks_total", "Blocks applied by this indexer.", () => source.stats().blocks],
    ["relgraph_index_records_total", "Change records applied by this indexer.", () => source.stats().records],
    ["relgraph_index_reorgs_undone_total", "Reorgs undone back to their common ancestor.", () => source.stats().reorgs],
    ["relgraph_index_blocks_undone_total", "Blocks undone by those reorgs.", () => source.stats().blocksUndone],
    ["relgraph_index_rpc_errors_total", "RPC requests that failed and were retried, over every endpoint.", () => source.rpcErrors()],
    ["relgraph_index_retries_total", "Units that failed before being applied and were tried again: an error answer or an answer refused, a chain that moved while read, the store unavailable.", () => source.stats().retries],
  ];
  registerScrapedCounters(registry, counters);
  return registry;
}
