import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { quantile } from "./living.js";
import { anvilBinary } from "../processes/anvil.js";
import { freePort, run, start, type Managed } from "../processes/processes.js";
import { compileContracts } from "../workload/chain-contracts.js";

/*
 * How soon is a new block visible to readers? A private anvil mining each transaction as it comes,
 * `relgraph index --confirmations 0` and `relgraph serve` on one redis-server. Each sample: a user
 * calls a contract it never called, which an anchor user already called; the time from the mined
 * block to the first Mutual contract interaction answer (REST) naming that contract.
 */

const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));
const API_KEY = "chain-freshness-bench";
const CONTRACTS = 8;
/** anvil's accounts: the deployer, the anchor, the witness and the users who call. */
const ACCOUNTS = 50;
/** The most samples: each user calls each contract once, so that every sample is a new pair. */
export const MAX_FRESHNESS_SAMPLES = (ACCOUNTS - 3) * CONTRACTS;

/** Time from a mined block to its interaction in a REST answer, in ms. */
export interface FreshnessResult {
  samples: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

type Json = Record<string, unknown>;

/** Measures `samples` blocks (at most MAX_FRESHNESS_SAMPLES); stops every process it started. */
export async function measureChainFreshness(samples: number, log: (line: string) => void = () => {}): Promise<FreshnessResult> {
  const count = Math.min(samples, MAX_FRESHNESS_SAMPLES);
  const work = await mkdtemp(path.join(os.tmpdir(), "relgraph-chain-freshness-"));
  const started: Managed[] = [];
  const keep = (managed: Managed) => (started.push(managed), managed);
  try {
    const anvilPort = await freePort();
    keep(await start(anvilBinary(), ["--host", "127.0.0.1", "--port", String(anvilPort), "--accounts", String(ACCOUNTS)], { ready: /Listening on/ }));
    const url = `http://127.0.0.1:${anvilPort}`;
    const rpc = async <T>(method: string, params: unknown[] = []): Promise<T> => {
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
      const answer = (await response.json()) as { result?: T; error?: { message: string } };
      if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
      return answer.result as T;
    };
    // anvil mines a transaction as it comes, yet may answer for it before its receipt is kept.
    const receipt = async (hash: string): Promise<Json> => {
      for (let attempt = 0; attempt < 500; attempt++) {
        const kept = await rpc<Json | null>("eth_getTransactionReceipt", [hash]);
        if (kept) return kept;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error(`transaction ${hash} has no receipt after 5 s`);
    };
    const users = (await rpc<string[]>("eth_accounts")).map((account) => account.toLowerCase());
    const book = compileContracts().get("Guestbook")!;
    const contracts: string[] = [];
    for (let k = 0; k < CONTRACTS; k++) {
      const hash = await rpc<string>("eth_sendTransaction", [{ from: users[0], data: book.bytecode }]);
      contracts.push((await receipt(hash)).contractAddress as string);
    }
    const sign = book.abi.encodeFunctionData("sign", []);
    const anchor = users[1]!;
    // A second user who called them all: its answer with the anchor tells when the indexer has caught up.
    const witness = users[ACCOUNTS - 1]!;
    for (const from of [anchor, witness]) for (const contract of contracts) await rpc("eth_sendTransaction", [{ from, to: contract, data: sign }]);

    const redisPort = await freePort();
    keep(await start("redis-server", ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { ready: /Ready to accept/ }));
    const env = { REDIS_URL: `redis://127.0.0.1:${redisPort}` };
    const usersFile = path.join(work, "users.jsonl");
    await writeFile(usersFile, users.map((address, i) => JSON.stringify({ type: "user", relationId: `u${i}`, name: `u${i}`, avatar: "", addresses: [address] })).join("\n"));
    const loaded = await run(process.execPath, [CLI, "ingest", usersFile], { ...env, LOG_LEVEL: "warn" }, "ingest: ");
    if (loaded.code !== 0) throw new Error(`relgraph ingest exited ${loaded.code}`);
    keep(await start(process.execPath, [CLI, "index", "--rpc", url, "--confirmations", "0"], { env: { ...env, LOG_LEVEL: "info" }, ready: /"msg":"indexing"/ }));
    const servePort = await freePort();
    keep(
      await start(process.execPath, [CLI, "serve", "--port", String(servePort)], {
        env: { ...env, HOST: "127.0.0.1", API_KEYS: API_KEY, DEV_KEY_NETWORK: "1", LOG_LEVEL: "warn" },
        ready: /relgraph listening on/,
      }),
    );
    const mutual = async (a: string, b: string): Promise<string[]> => {
      const response = await fetch(`http://127.0.0.1:${servePort}/api/v1/mutualContractInteraction?address=${a},${b}&limit=100`, { headers: { ApiKey: API_KEY } });
      const body = (await response.json()) as { code: string; data: string[] };
      return body.code === "0" ? body.data : [];
    };
    const caughtUp = Date.now() + 30_000;
    while ((await mutual(anchor, witness)).length < CONTRACTS && Date.now() < caughtUp) await new Promise((resolve) => setTimeout(resolve, 50));

    log(`bench: chain freshness, ${count} blocks …`);
    const latencies: number[] = [];
    for (let i = 0; i < count; i++) {
      const user = users[2 + Math.floor(i / CONTRACTS)]!;
      const contract = contracts[i % CONTRACTS]!;
      await rpc("eth_sendTransaction", [{ from: user, to: contract, data: sign }]);
      // anvil answers once the block is mined: the clock starts at a block that exists.
      const mined = performance.now();
      for (;;) {
        if ((await mutual(user, anchor)).includes(contract)) break;
        if (performance.now() - mined > 30_000) throw new Error(`block of sample ${i} not visible after 30 s`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      latencies.push(performance.now() - mined);
    }
    const ms = (q: number) => Math.round(quantile(latencies, q)!);
    return { samples: latencies.length, p50Ms: ms(0.5), p90Ms: ms(0.9), p99Ms: ms(0.99), maxMs: Math.round(Math.max(...latencies)) };
  } finally {
    for (const managed of started.reverse()) await managed.stop();
    await rm(work, { recursive: true, force: true });
  }
}
