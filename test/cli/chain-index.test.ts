import { isDeepStrictEqual } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDescription } from "../server/reference.js";
import { startRedisCluster, startRedisServer, type TestRedisCluster, type TestRedisServer } from "../support/redis-servers.js";
import { startAnvil, type TestAnvil } from "../chain/support/anvil.js";
import { accounts, deploy, waitReceipt } from "../chain/support/contracts.js";
import { makeHistory, type HistoryState, type TestContracts } from "../chain/support/history.js";
import { chainOracle } from "../chain/support/oracle.js";
import { rest, runRelgraph, startIndex, startServe, waitUntil, type IndexProcess, type RedisEnv, type ServeProcess } from "../chain/support/processes.js";
import { freePort } from "../support/ports.js";
import { startRpcProxy, type RpcProxy } from "../chain/support/rpc-proxy.js";

/*
 * `relgraph index` end to end: a real anvil with the test contracts, real redis-server processes
 * (and a Redis Cluster), the indexer as a process killed and restarted, and every outcome read
 * back through `relgraph serve`'s REST answers, against an oracle built from the chain itself.
 */

let anvil: TestAnvil;
let users: string[];
let contracts: TestContracts;
/** Who owns what after the histories so far, so that the next one sends nothing that reverts. */
let history: HistoryState;
const started: { stop(): Promise<void> }[] = [];

beforeAll(async () => {
  anvil = await startAnvil();
  const all = await accounts(anvil);
  users = all.slice(1);
  contracts = {
    nft: await deploy(anvil, "Collectible", all[0]!),
    multi: await deploy(anvil, "MultiToken", all[0]!),
    coin: await deploy(anvil, "Coin", all[0]!),
    book: await deploy(anvil, "Guestbook", all[0]!),
  };
  history = await makeHistory(anvil, contracts, users, 90, 37);
});
afterAll(async () => {
  for (const process of started.reverse()) await process.stop();
  await anvil?.stop();
});

async function redis(): Promise<{ env: RedisEnv; server: TestRedisServer }> {
  const server = await startRedisServer();
  started.push(server);
  return { env: { REDIS_URL: server.url }, server };
}

/** Every anvil account (but the deployer) as a user, so that REST answers for its address. */
async function ingestUsers(env: RedisEnv): Promise<void> {
  const lines = users.map((address, i) => JSON.stringify({ type: "user", relationId: `acct${i + 1}`, name: `account ${i + 1}`, avatar: "", addresses: [address] }));
  const result = await runRelgraph(env as Record<string, string>, ["ingest", "-"], `${lines.join("\n")}\n`);
  expect(result.code, result.stderr).toBe(0);
}

async function serve(env: RedisEnv): Promise<ServeProcess> {
  const server = await startServe(env);
  started.push(server);
  return server;
}

async function head(): Promise<number> {
  return Number.parseInt(await anvil.rpc<string>("eth_blockNumber"), 16);
}

/**
 * What relgraph serves, for every user: the contracts each pair of users interacted with in
 * common, and for each user the NFT collections and contracts their recommendations share.
 */
async function served(server: ServeProcess): Promise<{ mutual: Record<string, string[]>; reasons: Record<string, Record<string, [number, number]>> }> {
  const mutual: Record<string, string[]> = {};
  const reasons: Record<string, Record<string, [number, number]>> = {};
  for (const [i, a] of users.entries()) {
    for (const b of users.slice(i + 1)) {
      const answer = await rest<string[]>(server, "/api/v1/mutualContractInteraction", { address: `${a},${b}`, limit: 100 });
      expect(answer.code, answer.desc).toBe("0");
      mutual[`${a} ${b}`] = answer.data;
    }
    const answer = await rest<{ relationId: { relationId: string }; address: string[]; description: string }[]>(server, "/api/v1/multiDimensionalRecommendation", { address: a, limit: 100 });
    expect(answer.code, answer.desc).toBe("0");
    reasons[a] = Object.fromEntries(
      answer.data.map((item) => {
        const counts = parseDescription(item.description);
        return [item.address[0]!, [counts[1]!, counts[2]!]];
      }),
    );
  }
  return { mutual, reasons };
}

/** The same, from the chain: oracle lines turned into the answers relgraph should give. */
function expected(lines: readonly string[]): Awaited<ReturnType<typeof served>> {
  const sets = (kind: string) => {
    const map = new Map<string, Set<string>>(users.map((user) => [user, new Set()]));
    for (const line of lines) {
      const [type, address, contract] = line.split(" ") as [string, string, string];
      if (type === kind) map.get(address)?.add(contract);
    }
    return map;
  };
  const contractsOf = sets("interaction");
  const nftsOf = sets("nft");
  const common = (x: Set<string>, y: Set<string>) => [...x].filter((item) => y.has(item)).sort();
  const mutual: Record<string, string[]> = {};
  const reasons: Record<string, Record<string, [number, number]>> = {};
  for (const [i, a] of users.entries()) {
    for (const b of users.slice(i + 1)) mutual[`${a} ${b}`] = common(contractsOf.get(a)!, contractsOf.get(b)!);
    reasons[a] = {};
    for (const b of users) {
      if (b === a) continue;
      const counts: [number, number] = [common(contractsOf.get(a)!, contractsOf.get(b)!).length, common(nftsOf.get(a)!, nftsOf.get(b)!).length];
      if (counts[0] + counts[1] > 0) reasons[a][b] = counts;
    }
  }
  return { mutual, reasons };
}

const oracle = (upTo?: number) => chainOracle(anvil, users, { nft: contracts.nft, multi: contracts.multi, others: [contracts.coin, contracts.book] }, { upTo });

/** Waits until relgraph serves exactly what the chain says up to block `upTo`. */
async function servesTheChain(server: ServeProcess, upTo?: number): Promise<void> {
  const want = expected(await oracle(upTo));
  let got: Awaited<ReturnType<typeof served>> | null = null;
  try {
    await waitUntil("relgraph to serve what the chain holds", async () => {
      got = await served(server);
      return isDeepStrictEqual(got, want);
    }, 20_000);
  } catch (error) {
    expect(got).toEqual(want);
    throw error;
  }
}

async function stopIndex(indexer: IndexProcess): Promise<number | null> {
  if (indexer.child.exitCode === null) indexer.child.kill("SIGTERM");
  return indexer.exited;
}

describe("relgraph index", () => {
  it("exits 2 with a message on invalid arguments or without Redis", async () => {
    const { env } = await redis();
    for (const args of [["--rpc", "ftp://x"], ["--confirmations", "3", "--finalized", "--rpc", anvil.url], ["--rpc", anvil.url, "--contracts", "0x12"], []]) {
      const result = await runRelgraph(env as Record<string, string>, ["index", ...args]);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toMatch(/^relgraph index: /);
    }
    const noRedis = await runRelgraph({}, ["index", "--rpc", anvil.url]);
    expect(noRedis.code).toBe(2);
    expect(noRedis.stderr).toMatch(/no Redis is configured/);
  });

  it("follows the chain at 0 confirmations, undoes a reorg, serves metrics, and stops on SIGTERM", async () => {
    const { env } = await redis();
    await ingestUsers(env);
    const server = await serve(env);
    const metricsPort = await freePort();
    const indexer = startIndex(env, ["--rpc", anvil.url, "--confirmations", "0", "--metrics-port", String(metricsPort)]);
    try {
      await servesTheChain(server);
      const snapshot = await anvil.rpc<string>("evm_snapshot");
      const fork = structuredClone(history);
      await makeHistory(anvil, contracts, users, 12, 101, history);
      await servesTheChain(server);
      await anvil.rpc("evm_revert", [snapshot]);
      history = await makeHistory(anvil, contracts, users, 15, 102, fork);
      await servesTheChain(server);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).toMatch(new RegExp(`^relgraph_index_indexed_block ${await head()}$`, "m"));
      expect(metrics).toMatch(/^relgraph_index_reorgs_undone_total [1-9]/m);
      expect(metrics).toMatch(/^relgraph_index_lag_blocks 0$/m);
      expect(metrics).toMatch(/^relgraph_index_rpc_errors_total 0$/m);

      // A reorg onto a shorter branch: what the longer one held goes at once, not once the new
      // branch has outgrown it.
      const shorter = await anvil.rpc<string>("evm_snapshot");
      const kept = structuredClone(history);
      await makeHistory(anvil, contracts, users, 6, 103, history);
      await anvil.rpc("evm_mine");
      await anvil.rpc("evm_mine");
      await servesTheChain(server);
      const abandonedHead = await head();
      await anvil.rpc("evm_revert", [shorter]);
      history = kept;
      await waitReceipt(anvil, await contracts.book.send(users[1]!, "sign"));
      expect(await head()).toBeLessThan(abandonedHead);
      await servesTheChain(server);
    } finally {
      expect(await stopIndex(indexer)).toBe(0);
    }
    expect(indexer.logs.some((line) => line.msg === "stopped")).toBe(true);
  });

  it("resumes from the store after SIGKILL at random points: nothing lost, nothing applied twice", async () => {
    const { env } = await redis();
    await ingestUsers(env);
    const last = await head();
    // A provider some way off: each run still has blocks to read when it is killed, however fast
    // the indexer gets.
    const proxy: RpcProxy = await startRpcProxy(anvil.url);
    started.push({ stop: () => proxy.close() });
    proxy.faults.latencyMs = 25;
    const args = ["--rpc", proxy.url, "--confirmations", "0", "--to-block", String(last), "--unit-blocks", "2"];
    // A short lease: each run after a kill waits for the killed one's lease to expire before its first unit.
    const leaseMs = 500;
    for (let kill = 0; kill < 8; kill++) {
      const indexer = startIndex({ ...env, WRITE_LEASE_MS: String(leaseMs) }, args);
      // Once it runs, somewhere in its work: reading the chain, planning, or writing a unit.
      await waitUntil("the indexer to start", () => indexer.logs.some((line) => line.msg === "indexing") || indexer.child.exitCode !== null);
      expect(indexer.child.exitCode, JSON.stringify(indexer.logs)).toBeNull();
      await new Promise((resolve) => setTimeout(resolve, (kill === 0 ? 0 : leaseMs) + Math.random() * 300));
      indexer.child.kill("SIGKILL");
      await indexer.exited;
    }
    const indexer = startIndex({ ...env, WRITE_LEASE_MS: String(leaseMs) }, args);
    expect(await indexer.exited).toBe(0);
    // The kills cut the work short: the last run still had blocks to apply.
    expect(indexer.logs.find((line) => line.msg === "stopped")?.blocks).toBeGreaterThan(0);
    const server = await serve(env);
    await servesTheChain(server, last);
  });

  it("indexes into a Redis Cluster through failover, 429s and a capped eth_getLogs", async () => {
    const cluster: TestRedisCluster = await startRedisCluster();
    started.push(cluster);
    const env: RedisEnv = { REDIS_CLUSTER_NODES: cluster.nodes.join(",") };
    await ingestUsers(env);
    const proxy: RpcProxy = await startRpcProxy(anvil.url);
    started.push({ stop: () => proxy.close() });
    Object.assign(proxy.faults, { rateLimited: 4, retryAfter: "0", maxLogs: 3 });
    const last = await head();
    const indexer = startIndex(env, ["--rpc", `http://127.0.0.1:${await freePort()}`, "--rpc", proxy.url, "--confirmations", "0", "--to-block", String(last)]);
    expect(await indexer.exited).toBe(0);
    expect(proxy.counts["429"]).toBe(4);
    expect(proxy.counts.capped).toBeGreaterThan(0);
    // The cap narrows the log range, said at info; the range widening again after small answers is routine, at debug.
    expect(indexer.logs.some((line) => line.msg === "eth_getLogs range narrowed")).toBe(true);
    expect(indexer.logs.some((line) => line.msg === "eth_getLogs range widened")).toBe(false);
    const server = await serve(env);
    await servesTheChain(server, last);
  });
});
