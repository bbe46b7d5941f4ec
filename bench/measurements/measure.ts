import { gets, httpAtRate, httpSaturate, type HttpTarget } from "../load/http-load.js";
import { closedLoop, openLoop, type LoadResult } from "../load/load.js";
import type { Via } from "../options.js";
import type { OpPlan } from "./ops.js";
import { cpuSeconds, machineBusySeconds } from "../processes/processes.js";
import { redisBenchmark } from "../processes/redis-benchmark.js";
import { CONNECT_POST_HEADERS, connectPosts, probeConnectPost, type RpcClient } from "../load/rpc-clients.js";

/** Where everything runs, for one bench run. */
export interface BenchTargets {
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  redis: { port: number; pid: number };
  relgraph: {
    port: number;
    pid: number;
    apiKey: string;
    /**
     * Empties relgraph's in-process caches from outside: drops its tracking connections, which makes
     * it forget everything it cached (src/store/redis/tracking.ts).
     */
    emptyCaches(): Promise<void>;
    /** "" while relgraph runs; once it has exited, how it ended and the tail of its output. */
    diagnose(): string;
  };
  peer: { port: number; pid: number } | null;
  grpc: RpcClient;
  /** @connectrpc/connect-node's client, for the connect-node path. */
  connectNode: RpcClient;
}

/** One measured row: one operation over one path. */
export interface Row {
  via: Via;
  /** Successful requests per second at saturation. */
  rps: number;
  p50SatMs: number;
  p99SatMs: number;
  /** The fixed rate of the part-load run (about half of rps); null when there was none. */
  offeredRps: number | null;
  p50HalfMs: number | null;
  p99HalfMs: number | null;
  /** How late the pacer itself sent requests at part load (p99): the load generator's share of p99HalfMs. */
  sendLagP99Ms: number | null;
  /** CPU of the serving process (relgraph, or the peer) per request at saturation. */
  serverCpuUs: number | null;
  /** CPU of redis-server per request at saturation. */
  redisCpuUs: number | null;
  /** CPU of the bench's own process (the load generator) per request at saturation. */
  clientCpuUs: number | null;
  /**
   * Cores used during saturation by processes other than relgraph/the peer, Redis and the bench:
   * other work on a shared machine, which makes that row's figures low.
   */
  otherCores: number | null;
  concurrency: number;
  requests: number;
  errors: number;
  firstError?: string;
}

/** One operation's results over every path it was measured on. */
export interface OpResult {
  id: OpPlan["id"];
  title: string;
  sample: string;
  /** Mean items per answer over the sampled queries (REST), e.g. the mean page size. */
  meanItems: number | null;
  /** Problems found when checking answers before the load. */
  problems: string[];
  rows: Row[];
}

/** Measures one operation over each requested path, in the order redis, peer, rest, grpc, connect, connect-node. */
export async function measureOp(plan: OpPlan, vias: readonly Via[], targets: BenchTargets, log: (line: string) => void): Promise<OpResult> {
  const result: OpResult = { id: plan.id, title: plan.title, sample: plan.sample, meanItems: null, problems: [], rows: [] };
  const concurrency = plan.concurrency ?? targets.connections;
  const relgraphHttp: HttpTarget = {
    baseUrl: `http://127.0.0.1:${targets.relgraph.port}`,
    requests: gets(plan.paths),
    headers: { ApiKey: targets.relgraph.apiKey },
  };
  try {
    result.meanItems = await checkRest(plan, relgraphHttp, result.problems);
  } catch (error) {
    // relgraph not answering at all: nothing else of this operation can be measured.
    result.problems.push(`rest check: ${describeFailure(error)}${targets.relgraph.diagnose()}`);
    return result;
  }

  for (const via of plan.vias.filter((v) => vias.includes(v))) {
    log(`  ${plan.id} via ${via} …`);
    try {
      if (plan.coldStart) await targets.relgraph.emptyCaches();
      const row = await measureVia(plan, via, concurrency, relgraphHttp, targets, result.problems);
      if (row) result.rows.push(row);
    } catch (error) {
      result.problems.push(`${via}: ${describeFailure(error)}${targets.relgraph.diagnose()}`);
    }
  }
  return result;
}

async function measureVia(
  plan: OpPlan,
  via: Via,
  concurrency: number,
  relgraphHttp: HttpTarget,
  targets: BenchTargets,
  problems: string[],
): Promise<Row | null> {
  const { durationSeconds: seconds } = targets;
  switch (via) {
    case "redis": {
      if (!plan.redisCommands) return null;
      const r = await redisBenchmark(targets.redis.port, targets.redis.pid, plan.redisCommands, concurrency, seconds);
      return {
        via,
        rps: r.rps,
        p50SatMs: r.p50Ms,
        p99SatMs: r.p99Ms,
        offeredRps: null,
        p50HalfMs: null,
        p99HalfMs: null,
        sendLagP99Ms: null,
        serverCpuUs: null,
        redisCpuUs: r.redisCpuUs,
        clientCpuUs: null,
        otherCores: null,
        concurrency,
        requests: r.requests,
        errors: 0,
      };
    }
    case "peer": {
      if (!plan.redisCommands || !targets.peer) return null;
      const peer: HttpTarget = {
        baseUrl: `http://127.0.0.1:${targets.peer.port}`,
        requests: gets(plan.redisCommands.map((command) => `/sinter?keys=${command.slice(1).join(",")}`)),
        headers: {},
      };
      await checkPeer(peer, problems);
      return loadRow(via, concurrency, targets, targets.peer.pid, {
        saturate: (s) => httpSaturate(peer, concurrency, s),
        atRate: (rate, s) => httpAtRate(peer, concurrency, s, rate),
      });
    }
    case "rest":
      return loadRow(via, concurrency, targets, targets.relgraph.pid, {
        saturate: (s) => httpSaturate(relgraphHttp, concurrency, s),
        atRate: (rate, s) => httpAtRate(relgraphHttp, concurrency, s, rate),
      });
    case "connect": {
      const connect: HttpTarget = {
        baseUrl: relgraphHttp.baseUrl,
        requests: connectPosts(plan.rpc.name, plan.rpc.requests),
        headers: { ...CONNECT_POST_HEADERS, ApiKey: targets.relgraph.apiKey },
      };
      await checkFirstAnswer(plan, via, () => probeConnectPost(connect.baseUrl, targets.relgraph.apiKey, plan.rpc.name, connect.requests[0]!), problems);
      return loadRow(via, concurrency, targets, targets.relgraph.pid, {
        saturate: (s) => httpSaturate(connect, concurrency, s),
        atRate: (rate, s) => httpAtRate(connect, concurrency, s, rate),
      });
    }
    case "grpc":
    case "connect-node": {
      const client = via === "grpc" ? targets.grpc : targets.connectNode;
      await checkFirstAnswer(plan, via, () => client.probe(plan.rpc.name, plan.rpc.requests[0]!), problems);
      const call = client.caller(plan.rpc.name, plan.rpc.requests);
      return loadRow(via, concurrency, targets, targets.relgraph.pid, {
        saturate: (s) => closedLoop(call, concurrency, s),
        atRate: (rate, s) => openLoop(call, rate, s),
      });
    }
  }
}

/**
 * Warm-up, then saturation (with CPU of the server, Redis and the bench itself read around it),
 * then part load at half the saturated rate.
 */
async function loadRow(
  via: Via,
  concurrency: number,
  targets: BenchTargets,
  serverPid: number,
  drive: { saturate: (seconds: number) => Promise<LoadResult>; atRate: (rate: number, seconds: number) => Promise<LoadResult> },
): Promise<Row> {
  await drive.saturate(targets.warmupSeconds);
  const before = {
    machine: await machineBusySeconds(),
    server: await cpuSeconds(serverPid),
    redis: await cpuSeconds(targets.redis.pid),
    client: process.cpuUsage(),
  };
  const saturated = await drive.saturate(targets.durationSeconds);
  const server = (await cpuSeconds(serverPid)) - before.server;
  const redis = (await cpuSeconds(targets.redis.pid)) - before.redis;
  const clientUsage = process.cpuUsage(before.client);
  const client = (clientUsage.user + clientUsage.system) / 1e6;
  const machine = (await machineBusySeconds()) - before.machine;
  const served = saturated.requests;
  const perRequest = (cpu: number) => (served > 0 ? (cpu / served) * 1e6 : null);
  const half = saturated.rps > 0 ? await drive.atRate(saturated.rps / 2, targets.durationSeconds) : null;
  const errors = saturated.errors + (half?.errors ?? 0);
  return {
    via,
    rps: saturated.rps,
    p50SatMs: saturated.p50Ms,
    p99SatMs: saturated.p99Ms,
    offeredRps: half?.offeredRps ?? null,
    p50HalfMs: half?.p50Ms ?? null,
    p99HalfMs: half?.p99Ms ?? null,
    sendLagP99Ms: half?.sendLagP99Ms ?? null,
    serverCpuUs: perRequest(server),
    redisCpuUs: perRequest(redis),
    clientCpuUs: perRequest(client),
    otherCores: Math.max(0, machine - server - redis - client) / saturated.seconds,
    concurrency,
    requests: served,
    errors,
    firstError: saturated.firstError ?? half?.firstError,
  };
}

function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
  return `${error.message.split("\n")[0]}${cause}`;
}

/** Sends every sampled query once over REST: checks the envelope and counts items per answer. */
async function checkRest(plan: OpPlan, target: HttpTarget, problems: string[]): Promise<number | null> {
  const counts: number[] = [];
  const mismatches: string[] = [];
  for (const [i, path] of plan.paths.entries()) {
    const response = await fetch(target.baseUrl + path, { headers: target.headers });
    const body = (await response.json()) as { code?: string; desc?: string; data?: unknown };
    if (response.status !== 200 || body.code !== "0") {
      problems.push(`rest: ${response.status} ${body.code ?? ""} ${body.desc ?? ""} for ${path.slice(0, 120)}`);
      continue;
    }
    const items = Array.isArray(body.data) ? body.data.length : body.data == null ? 0 : 1;
    counts.push(items);
    const expected = plan.expected?.[i];
    if (expected !== undefined && expected !== items) mismatches.push(`query ${i}: ${items} items, expected ${expected}`);
  }
  if (mismatches.length > 0) {
    problems.push(`rest answers differ from the records for ${mismatches.length} of ${plan.paths.length} queries (${mismatches.slice(0, 3).join("; ")})`);
  }
  return counts.length > 0 ? counts.reduce((a, b) => a + b, 0) / counts.length : null;
}

async function checkPeer(target: HttpTarget, problems: string[]): Promise<void> {
  const response = await fetch(target.baseUrl + target.requests[0]!.path);
  const body = (await response.json()) as { data?: unknown[] };
  if (response.status !== 200 || !Array.isArray(body.data)) problems.push(`peer: unexpected answer ${response.status}`);
}

/** Sends the first sampled query once over an RPC path and checks its item count against the records. */
async function checkFirstAnswer(plan: OpPlan, via: Via, probe: () => Promise<number>, problems: string[]): Promise<void> {
  const items = await probe();
  const expected = plan.expected?.[0];
  if (expected !== undefined && items !== expected) problems.push(`${via}: first answer has ${items} items, expected ${expected}`);
}
