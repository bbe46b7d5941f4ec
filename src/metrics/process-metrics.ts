import { Gauge, type Registry, collectDefaultMetrics } from "prom-client";

/**
 * prom-client's default process and Node.js metrics, under `prefix`, fit for Prometheus's own lint
 * (`promtool check metrics`). prom-client names three gauges like counters
 * (nodejs_active_handles_total, …_requests_total, …_resources_total); a `_total` suffix tells
 * Prometheus tooling to treat a series as monotonic, so rate() over these would be nonsense. They are
 * replaced by gauges of the same values named …_active_<kind>_now; the per-type gauges
 * (nodejs_active_<kind>{type}) stay as prom-client makes them.
 */
export function collectProcessMetrics(registry: Registry, prefix: string): void {
  collectDefaultMetrics({ register: registry, prefix });
  for (const [kind, count] of ACTIVE_COUNTS) {
    const misnamed = `${prefix}nodejs_active_${kind}_total`;
    if (registry.getSingleMetric(misnamed) === undefined) continue;
    registry.removeSingleMetric(misnamed);
    new Gauge({
      name: `${prefix}nodejs_active_${kind}_now`,
      help: `Number of active ${kind} now (prom-client's nodejs_active_${kind}_total, renamed: it is a gauge).`,
      registers: [registry],
      collect() {
        this.set(count());
      },
    });
  }
}

/** How many of each kind are active, as prom-client counts them for the gauges it misnames. */
const ACTIVE_COUNTS: readonly [kind: string, count: () => number][] = [
  ["handles", () => (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().length],
  ["requests", () => (process as unknown as { _getActiveRequests(): unknown[] })._getActiveRequests().length],
  ["resources", () => process.getActiveResourcesInfo().length],
];
