import type { LivingResult } from "./measurements/living.js";
import type { OpResult, Row } from "./measurements/measure.js";
import type { OpId, Via } from "./options.js";
import type { RedisMemory } from "./processes/redis-memory.js";
import type { KeyspaceRehash } from "./processes/redis-rehash.js";

/** Ingestion through `relgraph ingest`. */
export interface Ingestion {
  records: number;
  /** Wall time of the whole command, node start-up included. */
  seconds: number;
  recordsPerSecond: number;
  /** The rate relgraph itself printed (its timer starts after start-up). */
  reportedRecordsPerSecond: number | null;
  /** The wait, after the load and before any measurement, for Redis to end the rehash of its resized keyspace (processes/redis-rehash.ts). */
  rehash?: KeyspaceRehash;
}

/** One target of the issue and whether this run meets it. */
export interface TargetCheck {
  name: string;
  goal: string;
  actual: number | null;
  /** `actual` as printed: never rounded onto the other side of the goal. */
  shown: string;
  pass: boolean | null;
}

/** The ratios the issue asks for, per operation: c/a, c/b, d/c, e/c, and the same by server CPU. */
export interface Ratios {
  restOverRedis: number | null;
  restOverPeer: number | null;
  grpcOverRest: number | null;
  connectOverRest: number | null;
  /** @connectrpc/connect-node's client over REST, by req/s: bounded by that client's own CPU. */
  connectNodeOverRest: number | null;
  /**
   * d/c and e/c by relgraph's CPU per request (REST's µs over the protocol's): what one core of
   * relgraph would serve, whatever the load generator costs on the shared cores.
   */
  grpcOverRestByCpu: number | null;
  connectOverRestByCpu: number | null;
}

/** Said in every report: the figures are relative, measured on one small machine. */
export function sharedCoresNote(cores: number): string {
  return (
    `The load generator (this process: autocannon, the HTTP pacer, the grpc-js and connect-node clients; redis-benchmark as its own process) ` +
    `shares the ${cores} cores with relgraph and Redis, so absolute figures are lower bounds and the ratios are the robust part.`
  );
}

const D_OVER_C = 0.6;
/** Issue 14: change records per second through ingest and the feed (goal 1M, GraphJet's edge rate). */
const CHANGE_RATE = 200_000;
/** Issue 14: reads while 1,000 changes/s flow, over the same reads with none. */
const UNDER_CHANGES_RATIO = 0.8;
/** Issue 14: p99 from the XADD of a narrowed release to another instance's first answer without it (goal 50 ms). */
const WITHDRAWAL_P99_MS = 1_000;

/**
 * The withdrawal p99 the target is judged on: a trial whose peer never went counts as never, so
 * failed trials make the figure infinite rather than leaving them out of it.
 */
function withdrawalP99(living: LivingResult | null): number | null | undefined {
  const w = living?.withdrawal;
  if (!w) return null;
  if (w.failures.length > 0) return Number.POSITIVE_INFINITY;
  return w.p99Ms;
}
/** Other processes using more than this many cores during a row make its figures suspect. */
const NOISY_CORES = 0.2;
const E_OVER_C = 0.5;

/** The paired row of an operation, if measured. */
export function rowOf(ops: readonly OpResult[], op: OpId, via: Via): Row | undefined {
  return ops.find((o) => o.id === op)?.rows.find((r) => r.via === via);
}

/** c/a, c/b, d/c, e/c of one operation, by req/s at saturation. */
export function ratiosOf(op: OpResult): Ratios {
  const rps = (via: Via) => op.rows.find((r) => r.via === via)?.rps ?? null;
  const cpu = (via: Via) => op.rows.find((r) => r.via === via)?.serverCpuUs ?? null;
  const over = (x: number | null, y: number | null) => (x !== null && y !== null && y > 0 ? x / y : null);
  return {
    restOverRedis: over(rps("rest"), rps("redis")),
    restOverPeer: over(rps("rest"), rps("peer")),
    grpcOverRest: over(rps("grpc"), rps("rest")),
    connectOverRest: over(rps("connect"), rps("rest")),
    connectNodeOverRest: over(rps("connect-node"), rps("rest")),
    grpcOverRestByCpu: over(cpu("rest"), cpu("grpc")),
    connectOverRestByCpu: over(cpu("rest"), cpu("connect")),
  };
}

/** Every target of the issue, evaluated on this run (null where it was not measured). */
export function evaluateTargets(
  ops: readonly OpResult[],
  ingestion: Ingestion | null,
  memory: RedisMemory | null,
  living: LivingResult | null = null,
): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const check = (name: string, goal: string, actual: number | null | undefined, meets: (value: number) => boolean) =>
    checks.push({
      name,
      goal,
      actual: actual ?? null,
      shown: actual == null ? "–" : shownAgainst(actual, meets, fmtDigits(actual), fmtWith),
      pass: actual == null ? null : meets(actual),
    });
  const atLeast = (name: string, goal: number, actual: number | null | undefined, unit: string) =>
    check(name, `≥ ${fmt(goal)}${unit}`, actual, (value) => value >= goal);
  const atMost = (name: string, goal: number, actual: number | null | undefined, unit: string) =>
    check(name, `≤ ${fmt(goal)}${unit}`, actual, (value) => value <= goal);
  const mm = ops.find((o) => o.id === "mf-mm");
  const mmRatios = mm ? ratiosOf(mm) : null;
  atLeast("mutual friend median×median, REST req/s", 12_000, rowOf(ops, "mf-mm", "rest")?.rps, "");
  atMost("mutual friend median×median, REST p99 at half load", 10, rowOf(ops, "mf-mm", "rest")?.p99HalfMs, " ms");
  atLeast("mutual friend median×median, c/b (REST / peer)", 0.8, mmRatios?.restOverPeer, "");
  atLeast("mutual contract interaction, REST req/s", 20_000, rowOf(ops, "mci", "rest")?.rps, "");
  atLeast("mutual friend hub×hub, REST req/s", 2_500, rowOf(ops, "mf-hh", "rest")?.rps, "");
  atMost("mutual friend hub×hub, REST p99 at half load", 30, rowOf(ops, "mf-hh", "rest")?.p99HalfMs, " ms");
  atLeast("recommendation median user, REST req/s", 500, rowOf(ops, "rec", "rest")?.rps, "");
  atMost("recommendation median user, REST p99 at half load", 100, rowOf(ops, "rec", "rest")?.p99HalfMs, " ms");
  atLeast("d/c (gRPC / REST), mutual friend median×median", D_OVER_C, mmRatios?.grpcOverRest, "");
  atLeast("e/c (Connect / REST), mutual friend median×median", E_OVER_C, mmRatios?.connectOverRest, "");
  atLeast("ingestion records/s", 200_000, ingestion?.recordsPerSecond, "");
  atMost("Redis bytes per friend-set member", 20, memory?.bytesPerFriendMember, " B");
  // Issue 14's "Speed" table.
  atLeast("change throughput, relgraph ingest, records/s", CHANGE_RATE, living?.ingest?.recordsPerSecond, "");
  atLeast("change throughput, feed (relgraph follow), records/s", CHANGE_RATE, living?.feed?.recordsPerSecond, "");
  const ratioOf = (id: string) => living?.underChanges.find((u) => u.id === id)?.ratio;
  atLeast("mutual friend median×median REST while 1,000 changes/s flow / read-only", UNDER_CHANGES_RATIO, ratioOf("mf-mm-live"), "");
  atLeast("recommendation REST while 1,000 changes/s flow / read-only", UNDER_CHANGES_RATIO, ratioOf("rec-live"), "");
  atMost("withdrawal latency on another instance, p99", WITHDRAWAL_P99_MS, withdrawalP99(living), " ms");
  return checks;
}

/** The human-readable report. */
export function renderReport(input: {
  header: string[];
  note: string;
  ops: readonly OpResult[];
  ingestion: Ingestion | null;
  memory: RedisMemory | null;
  living?: LivingResult | null;
  targets: readonly TargetCheck[];
}): string {
  const lines: string[] = [...input.header, ""];
  const table: string[][] = [
    ["operation", "via", "conc", "req/s", "p50", "p99", "offered", "p50 @½", "p99 @½", "lag99 @½", "srv µs/req", "redis µs/req", "bench µs/req", "other cores", "errors", "target"],
  ];
  for (const op of input.ops) {
    for (const row of op.rows) {
      table.push([
        op.id,
        row.via,
        String(row.concurrency),
        fmt(row.rps),
        ms(row.p50SatMs),
        ms(row.p99SatMs),
        row.offeredRps === null ? "–" : fmt(row.offeredRps),
        ms(row.p50HalfMs),
        ms(row.p99HalfMs),
        ms(row.sendLagP99Ms),
        us(row.serverCpuUs),
        us(row.redisCpuUs),
        us(row.clientCpuUs),
        row.otherCores === null ? "–" : `${row.otherCores.toFixed(2)}${row.otherCores > NOISY_CORES ? "!" : ""}`,
        row.errors === 0 ? "0" : `${row.errors}!`,
        rowTargets(op.id, row.via, input.targets),
      ]);
    }
  }
  lines.push(...renderTable(table), "");
  lines.push("Latency in ms. Saturation: autocannon for HTTP (whole ms), a closed loop for RPC, redis-benchmark for redis. @½: at a fixed offered");
  lines.push("rate of half the saturated req/s, one paced open loop for every path (a minimal keep-alive client for HTTP), counting from when each");
  lines.push("request was due, so queueing is not hidden; lag99 = p99 of how late the pacer itself sent (the load generator's share).");
  lines.push("srv = the serving process (relgraph, or the peer), all threads; bench = this load generator; other cores = CPU used meanwhile");
  lines.push(`by every other process on the machine (/proc/stat), "!" above ${NOISY_CORES}: that row ran on a busy machine.`, "");

  const ratioTable: string[][] = [
    ["operation", "c/a rest/redis", "c/b rest/peer", `d/c grpc/rest (≥ ${D_OVER_C})`, `e/c connect/rest (≥ ${E_OVER_C})`, "connect-node/rest", "d/c by CPU", "e/c by CPU"],
  ];
  for (const op of input.ops) {
    const r = ratiosOf(op);
    ratioTable.push([
      op.id,
      ratio(r.restOverRedis),
      ratio(r.restOverPeer),
      ratio(r.grpcOverRest, D_OVER_C),
      ratio(r.connectOverRest, E_OVER_C),
      ratio(r.connectNodeOverRest),
      ratio(r.grpcOverRestByCpu),
      ratio(r.connectOverRestByCpu),
    ]);
  }
  lines.push(...renderTable(ratioTable), "");
  lines.push("Ratios by req/s at saturation; \"by CPU\" = relgraph's CPU µs per REST request over its µs per gRPC (Connect) request, i.e.");
  lines.push("what one core of relgraph serves over each protocol, independent of what each load generator costs on the shared cores.");
  lines.push("connect = Connect unary POSTs (binary, HTTP/1.1) from autocannon, REST's own load generator; connect-node = the same RPCs");
  lines.push("through @connectrpc/connect-node's client over HTTP/2, whose CPU per call (bench column) bounds its req/s here.", "");

  for (const op of input.ops) {
    lines.push(`${op.id}: ${op.title}. ${op.sample}.${op.meanItems === null ? "" : ` Mean items per answer: ${op.meanItems.toFixed(1)}.`}`);
    for (const problem of op.problems) lines.push(`  ! ${problem}`);
    for (const row of op.rows) if (row.firstError) lines.push(`  ! ${row.via}: ${row.firstError}`);
  }
  lines.push("");
  if (input.ingestion) {
    const i = input.ingestion;
    lines.push(
      `Ingestion: ${fmt(i.records)} records in ${i.seconds.toFixed(1)} s = ${fmt(i.recordsPerSecond)} records/s (whole command)` +
        (i.reportedRecordsPerSecond === null ? "" : `; relgraph reports ${fmt(i.reportedRecordsPerSecond)} records/s`) +
        (i.rehash && i.rehash.seconds > 0
          ? `; Redis's keyspace rehash after it ${i.rehash.settled ? "ended" : "was still under way"} ${i.rehash.seconds.toFixed(1)} s later, before any measurement`
          : ""),
    );
  }
  if (input.memory) {
    const m = input.memory;
    lines.push(
      `Redis memory: ${m.bytesPerFriendMember.toFixed(1)} B per friend-set member (Σ MEMORY USAGE / Σ SCARD over ${fmt(m.friendSets)} friend sets, ${fmt(m.friendMembers)} members);`,
    );
    for (const [encoding, e] of Object.entries(m.byEncoding)) {
      lines.push(`  ${encoding}: ${fmt(e.sets)} sets, ${fmt(e.members)} members, ${e.bytesPerMember.toFixed(1)} B/member`);
    }
    lines.push(
      `  INFO used_memory ${(m.usedMemory / 2 ** 20).toFixed(1)} MiB (dataset ${(m.usedMemoryDataset / 2 ** 20).toFixed(1)} MiB) = ${m.usedMemoryPerFriendMember.toFixed(1)} B per friend member if all charged to friends; set-max-intset-entries ${m.setMaxIntsetEntries}`,
    );
  }
  if (input.living) lines.push("", ...livingLines(input.living));
  lines.push("", "Targets:");
  const targetTable: string[][] = [["target", "goal", "actual", "result"]];
  for (const t of input.targets) {
    targetTable.push([t.name, t.goal, t.shown, t.pass === null ? "not measured" : t.pass ? "PASS" : "FAIL"]);
  }
  lines.push(...renderTable(targetTable), "", input.note);
  return lines.join("\n");
}

/** The living-graph section of the report: throughput, reads while changes flow, withdrawal latency. */
export function livingLines(living: LivingResult): string[] {
  const lines: string[] = ["Living graph (issue 14):"];
  const throughput: string[][] = [["change throughput", "records", "entries", "seconds", "records/s", "relgraph says", "rejected"]];
  for (const [name, t] of [
    ["relgraph ingest", living.ingest],
    ["feed (relgraph follow)", living.feed],
  ] as const) {
    if (!t) continue;
    throughput.push([
      name,
      fmt(t.records),
      t.entries === null ? "–" : fmt(t.entries),
      t.seconds.toFixed(2),
      fmt(t.recordsPerSecond),
      t.reportedRecordsPerSecond === null ? "–" : fmt(t.reportedRecordsPerSecond),
      t.rejected === null ? "–" : String(t.rejected),
    ]);
  }
  if (throughput.length > 1) lines.push(...renderTable(throughput), "");
  if (living.underChanges.length > 0) {
    const table: string[][] = [
      ["while changes flow", "read-only req/s", "before, after", "req/s", `ratio (≥ ${UNDER_CHANGES_RATIO})`, "p99 read-only", "p99", "changes/s offered", "applied", "backlog", "follow cores", "redis cores", "errors"],
    ];
    for (const u of living.underChanges) {
      table.push([
        u.id,
        fmt(u.readOnlyRps),
        `${fmt(u.readOnlyBeforeRps)}, ${fmt(u.readOnlyAfterRps)}`,
        fmt(u.underChangesRps),
        ratio(u.ratio, UNDER_CHANGES_RATIO),
        ms(u.readOnlyP99Ms),
        ms(u.underChangesP99Ms),
        fmt(u.offeredChangesPerSecond),
        fmt(u.appliedChangesPerSecond),
        String(u.backlogAtEnd),
        u.followCores === null ? "–" : u.followCores.toFixed(2),
        u.redisCores === null ? "–" : u.redisCores.toFixed(2),
        u.errors === 0 ? "0" : `${u.errors}!`,
      ]);
    }
    lines.push(...renderTable(table), "");
  }
  const w = living.withdrawal;
  if (w) {
    lines.push(
      `Withdrawal latency (XADD of a narrowed release → first answer of a second relgraph serve without the peer), ${w.latenciesMs.length}/${w.trials} trials: ` +
        `p50 ${ms(w.p50Ms)}, p99 ${ms(w.p99Ms)}, max ${ms(w.maxMs)} ms; restored release shown again: p50 ${ms(w.restoreP50Ms)}, max ${ms(w.restoreMaxMs)} ms; ` +
        `one query takes ${ms(w.pollMs)} ms (median), the resolution of these figures.`,
    );
    for (const failure of w.failures) lines.push(`  ! ${failure}`);
  }
  lines.push(
    "Change throughput: wall time of relgraph ingest (start-up included) on a mixed change file; the feed from the first XADD to the",
    "group's last acknowledgement, relgraph follow running (its records made before the clock starts, XADDed during it). Reads while",
    "changes flow: REST saturation with none, with friend adds and deletes XADDed at 1,000/s and applied by relgraph follow, then with",
    "none again (read-only = mean of the two); backlog = entries not yet acknowledged when it ended; follow/redis cores = their CPU",
    "during it. Withdrawal: the second instance is queried back to back and the answers decrypted afterwards by bisection (src/client),",
    "so the resolution is one query, not one decryption.",
  );
  for (const problem of living.problems) lines.push(`  ! ${problem}`);
  return lines;
}

/** The targets that apply to one row, with their result, e.g. "≥ 12,000 req/s FAIL". */
function rowTargets(op: OpId, via: Via, targets: readonly TargetCheck[]): string {
  if (via !== "rest") return "";
  const prefix = {
    "mf-mm": "mutual friend median×median, REST",
    "mf-hh": "mutual friend hub×hub, REST",
    mci: "mutual contract interaction, REST",
    rec: "recommendation median user, REST",
  }[op as string];
  if (!prefix) return "";
  return targets
    .filter((t) => t.name.startsWith(prefix))
    .map((t) => `${t.name.slice(prefix.length).trim()} ${t.goal} ${t.pass === null ? "?" : t.pass ? "PASS" : "FAIL"}`)
    .join("; ");
}

function renderTable(rows: readonly string[][]): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => (row[c] ?? "").length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, c) => (c < 2 || c === row.length - 1 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
      .join("  ")
      .trimEnd();
  return [line(rows[0]!), widths.map((w) => "-".repeat(w)).join("  "), ...rows.slice(1).map(line)];
}

function fmt(value: number): string {
  if (!Number.isFinite(value)) return "–";
  return fmtWith(value, fmtDigits(value));
}

/** Decimals fmt shows: none from 100 up, else up to two. */
function fmtDigits(value: number): number {
  return Math.abs(value) >= 100 ? 0 : 2;
}

function fmtWith(value: number, digits: number): string {
  return value.toLocaleString("en-US", { maximumFractionDigits: digits });
}

/**
 * `value` printed by `format` with `digits` decimals, or with more where rounding would move it to the
 * other side of the goal: d/c 0.5993 is not shown as "0.60" beside "≥ 0.6 FAIL".
 */
function shownAgainst(value: number, meets: (value: number) => boolean, digits: number, format: (value: number, digits: number) => string): string {
  const pass = meets(value);
  for (let shownDigits = digits; shownDigits <= 6; shownDigits++) {
    if (meets(Number(value.toFixed(shownDigits))) === pass) return format(value, shownDigits);
  }
  return String(value);
}

function ms(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return "–";
  return value >= 100 ? value.toFixed(0) : value.toFixed(2);
}

function us(value: number | null): string {
  return value === null || !Number.isFinite(value) ? "–" : value.toFixed(0);
}

function ratio(value: number | null, goal?: number): string {
  if (value === null) return "–";
  if (goal === undefined) return value.toFixed(2);
  const meets = (figure: number) => figure >= goal;
  return `${shownAgainst(value, meets, 2, (figure, digits) => figure.toFixed(digits))} ${meets(value) ? "PASS" : "FAIL"}`;
}
