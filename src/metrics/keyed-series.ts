import { Counter, type Metric, type Registry } from "prom-client";

/*
 * prom-client finds a labelled series by hashing its label object (sorting the keys, joining the
 * values) and validating it on every inc and observe, and a histogram's observe also converts its
 * arguments and walks the buckets through object keys: relgraph counts and times every request and
 * every store call, and that showed in a gRPC call's CPU profile (`node --cpu-prof`). Here a series is
 * found by one Map lookup of its label values joined, and prom-client only renders the totals when
 * /metrics is scraped, in its own text format (the same lines as its Counter and Histogram).
 */

/** Joins label values into a series key: NUL cannot occur in an HTTP path, a protocol or a code. */
const keyOf = (values: readonly string[]) => values.join("\u0000");

/** One histogram series: counts per bucket (the last one is +Inf), sum and count. */
interface HistogramSeries {
  labels: Record<string, string>;
  buckets: Float64Array;
  sum: number;
  count: number;
}

/** A histogram with fixed label names, observed by label values. */
export interface KeyedHistogram {
  observe(labelValues: readonly string[], value: number): void;
}

/**
 * A histogram registered on `registry` like prom-client's Histogram (the same name, help, buckets
 * and exposition), whose observe costs a Map lookup and a bucket search.
 */
export function keyedHistogram(registry: Registry, options: { name: string; help: string; labelNames: readonly string[]; buckets: readonly number[] }): KeyedHistogram {
  const { name, help, labelNames, buckets } = options;
  let series = new Map<string, HistogramSeries>();
  const metric = {
    name,
    help,
    type: "histogram",
    aggregator: "sum",
    labelNames,
    get() {
      const values: object[] = [];
      for (const s of series.values()) {
        let cumulative = 0;
        buckets.forEach((le, i) => {
          cumulative += s.buckets[i]!;
          values.push({ labels: { le }, sharedLabels: s.labels, value: cumulative, metricName: `${name}_bucket` });
        });
        values.push({ labels: { le: "+Inf" }, sharedLabels: s.labels, value: s.count, metricName: `${name}_bucket` });
        values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${name}_sum` });
        values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${name}_count` });
      }
      return Promise.resolve({ name, help, type: "histogram", values, aggregator: "sum" });
    },
    reset() {
      series = new Map();
    },
  };
  registry.registerMetric(metric as unknown as Metric);
  return {
    observe(labelValues, value) {
      const key = keyOf(labelValues);
      let s = series.get(key);
      if (s === undefined) {
        const labels: Record<string, string> = {};
        labelNames.forEach((label, i) => (labels[label] = labelValues[i]!));
        s = { labels, buckets: new Float64Array(buckets.length + 1), sum: 0, count: 0 };
        series.set(key, s);
      }
      let i = 0;
      while (i < buckets.length && value > buckets[i]!) i++;
      s.buckets[i]! += 1;
      s.sum += value;
      s.count += 1;
    },
  };
}

/** A counter with fixed label names, incremented by label values. */
export interface KeyedCounter {
  inc(labelValues: readonly string[]): void;
}

/** A prom-client Counter on `registry` whose increments are kept here and handed to it at each scrape. */
export function keyedCounter(registry: Registry, options: { name: string; help: string; labelNames: readonly string[] }): KeyedCounter {
  const counts = new Map<string, { labels: Record<string, string>; value: number }>();
  const counter = new Counter({
    ...options,
    registers: [registry],
    collect() {
      Counter.prototype.reset.call(this);
      for (const { labels, value } of counts.values()) this.inc(labels, value);
    },
  });
  // registry.resetMetrics() starts the counts over, as it does prom-client's own.
  counter.reset = () => counts.clear();
  return {
    inc(labelValues) {
      const key = keyOf(labelValues);
      const entry = counts.get(key);
      if (entry !== undefined) {
        entry.value += 1;
        return;
      }
      const labels: Record<string, string> = {};
      options.labelNames.forEach((label, i) => (labels[label] = labelValues[i]!));
      counts.set(key, { labels, value: 1 });
    },
  };
}
