import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { keyedCounter, keyedHistogram } from "../../src/metrics/keyed-series.js";

const BUCKETS = [0.001, 0.01, 0.1, 1];
const OBSERVED: [string, string, number][] = [
  ["/api/v1/mutualFriend", "rest", 0.0004],
  ["/api/v1/mutualFriend", "rest", 0.001], // on a bound: counted in that bucket, as prom-client does
  ["/api/v1/mutualFriend", "rest", 0.05],
  ["/relgraph.v1.RelationService/MutualFriend", "grpc", 2.5], // past the last bound: +Inf only
  ["/api/v1/mutualFriend", "rest", 0.5],
  ["/relgraph.v1.RelationService/MutualFriend", "grpc", 0],
];

describe("keyed series", () => {
  it("render exactly what prom-client's own Histogram renders for the same observations", async () => {
    const own = new Registry();
    const reference = new Histogram({ name: "t_seconds", help: "h", labelNames: ["operation", "protocol"], buckets: BUCKETS, registers: [own] });
    const keyedRegistry = new Registry();
    const keyed = keyedHistogram(keyedRegistry, { name: "t_seconds", help: "h", labelNames: ["operation", "protocol"], buckets: BUCKETS });
    for (const [operation, protocol, seconds] of OBSERVED) {
      reference.observe({ operation, protocol }, seconds);
      keyed.observe([operation, protocol], seconds);
    }
    expect(await keyedRegistry.metrics()).toBe(await own.metrics());
    keyedRegistry.resetMetrics();
    own.resetMetrics();
    expect(await keyedRegistry.metrics()).toBe(await own.metrics());
  });

  it("count exactly what prom-client's own Counter counts, at every scrape", async () => {
    const own = new Registry();
    const reference = new Counter({ name: "t_total", help: "h", labelNames: ["operation", "code"], registers: [own] });
    const keyedRegistry = new Registry();
    const keyed = keyedCounter(keyedRegistry, { name: "t_total", help: "h", labelNames: ["operation", "code"] });
    for (const [operation, code] of [["/a", "0"], ["/a", "0"], ["/b", "0"], ["/a", "16"]]) {
      reference.inc({ operation: operation!, code: code! });
      keyed.inc([operation!, code!]);
      expect(await keyedRegistry.metrics()).toBe(await own.metrics());
    }
    keyedRegistry.resetMetrics();
    own.resetMetrics();
    expect(await keyedRegistry.metrics()).toBe(await own.metrics());
  });
});
