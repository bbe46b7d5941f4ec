import { cpuSeconds, run } from "./processes.js";

/** redis-benchmark's figures for one command, run at saturation (it has no rate option). */
export interface RedisBenchmarkResult {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** redis-server CPU per command, in microseconds. */
  redisCpuUs: number;
}

/**
 * The physical limit (issue item 3a): `redis-benchmark` sending the same command relgraph's query
 * sends, with the real key names, from `clients` connections. redis-benchmark repeats one command
 * line, so each sampled command gets an equal share of the requests; the rate is their combined
 * requests over their combined time, and p50/p99 are the worst of the runs.
 */
export async function redisBenchmark(
  port: number,
  redisPid: number,
  commands: readonly string[][],
  clients: number,
  seconds: number,
): Promise<RedisBenchmarkResult> {
  const chosen = commands.slice(0, 4);
  // A short probe sizes each run to take about its share of `seconds`.
  const probe = await once(port, chosen[0]!, clients, 2_000);
  const perCommand = Math.max(2_000, Math.round((probe.rps * seconds) / chosen.length));
  let requests = 0;
  let busySeconds = 0;
  let p50Ms = 0;
  let p99Ms = 0;
  const cpuBefore = await cpuSeconds(redisPid);
  for (const command of chosen) {
    const result = await once(port, command, clients, perCommand);
    requests += perCommand;
    busySeconds += perCommand / result.rps;
    p50Ms = Math.max(p50Ms, result.p50Ms);
    p99Ms = Math.max(p99Ms, result.p99Ms);
  }
  const cpu = (await cpuSeconds(redisPid)) - cpuBefore;
  return { rps: requests / busySeconds, p50Ms, p99Ms, requests, redisCpuUs: (cpu / requests) * 1e6 };
}

async function once(port: number, command: readonly string[], clients: number, n: number) {
  const args = ["-h", "127.0.0.1", "-p", String(port), "-c", String(clients), "-n", String(n), "--csv", ...command];
  const result = await run("redis-benchmark", args, {}, "redis-benchmark: ");
  // --csv prints a header line, then "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms".
  const row = result.stdout.trim().split("\n").at(-1)?.split('","').map((cell) => cell.replaceAll('"', ""));
  const rps = Number(row?.[1]);
  if (result.code !== 0 || !row || !Number.isFinite(rps) || rps <= 0) {
    throw new Error(`redis-benchmark failed (exit ${result.code}): ${result.stdout}\n${result.stderr}`);
  }
  return { rps, p50Ms: Number(row[4]), p99Ms: Number(row[6]) };
}
