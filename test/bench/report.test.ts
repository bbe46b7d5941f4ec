import { describe, expect, it } from "vitest";
import type { OpResult, Row } from "../../bench/measurements/measure.js";
import type { Via } from "../../bench/options.js";
import { evaluateTargets, renderReport } from "../../bench/report.js";

/*
 * A figure printed beside its verdict must not read as the opposite verdict: a run whose d/c was
 * 0.5993 printed "0.60 FAIL" against a goal of 0.6.
 */

function row(via: Via, rps: number, serverCpuUs: number): Row {
  return {
    via,
    rps,
    p50SatMs: 1,
    p99SatMs: 2,
    offeredRps: rps / 2,
    p50HalfMs: 1,
    p99HalfMs: 5,
    sendLagP99Ms: 1,
    serverCpuUs,
    redisCpuUs: 10,
    clientCpuUs: 20,
    otherCores: 0,
    concurrency: 50,
    requests: rps * 5,
    errors: 0,
  };
}

function mutualFriend(rows: Row[]): OpResult {
  return { id: "mf-mm", title: "Mutual friend, median × median", sample: "50 pairs", meanItems: 5, problems: [], rows };
}

const report = (op: OpResult) => {
  const targets = evaluateTargets([op], null, null);
  return { targets, text: renderReport({ header: [], note: "", ops: [op], ingestion: null, memory: null, targets }) };
};

describe("the bench report", () => {
  it("prints a failing figure with the decimals that keep it below its goal", () => {
    const { targets, text } = report(mutualFriend([row("rest", 11_999.6, 80), row("grpc", 7_191.4, 130)]));
    const rest = targets.find((t) => t.name === "mutual friend median×median, REST req/s")!;
    expect(rest).toMatchObject({ pass: false, shown: "11,999.6" });
    const dOverC = targets.find((t) => t.name.startsWith("d/c"))!;
    expect(dOverC.pass).toBe(false);
    expect(dOverC.shown).toBe("0.599");
    expect(text).toMatch(/\b0\.599 FAIL\b/);
    expect(text).not.toMatch(/\b0\.60 FAIL\b/);
  });

  it("prints figures clear of their goal with the usual rounding", () => {
    const { targets, text } = report(mutualFriend([row("rest", 12_400.4, 80), row("grpc", 7_564.2, 130)]));
    expect(targets.find((t) => t.name === "mutual friend median×median, REST req/s")).toMatchObject({ pass: true, shown: "12,400" });
    expect(targets.find((t) => t.name.startsWith("d/c"))).toMatchObject({ pass: true, shown: "0.61" });
    expect(text).toMatch(/\b0\.61 PASS\b/);
  });

  it("keeps a figure that only rounding would lift to its goal below it, and one exactly at its goal as met", () => {
    const atGoal = report(mutualFriend([row("rest", 12_000, 80), row("grpc", 7_200, 130)]));
    expect(atGoal.targets.find((t) => t.name.startsWith("d/c"))).toMatchObject({ pass: true, shown: "0.6" });
    const justUnder = report(mutualFriend([row("rest", 12_000, 80), row("grpc", 7_199.99, 130)]));
    const dOverC = justUnder.targets.find((t) => t.name.startsWith("d/c"))!;
    expect(dOverC.pass).toBe(false);
    expect(Number(dOverC.shown)).toBeLessThan(0.6);
    const hairUnder = report(mutualFriend([row("rest", 1e9, 80), row("grpc", 6e8 - 1, 130)]));
    expect(Number(hairUnder.targets.find((t) => t.name.startsWith("d/c"))!.shown)).toBeLessThan(0.6);
  });
});
