import { rmSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { quantile } from "../measurements/living.js";
import { anvilBinary } from "../processes/anvil.js";
import { freePort, installCleanup, run, start, stopAll } from "../processes/processes.js";
import { compileContracts } from "../workload/chain-contracts.js";

/*
 * How soon is a new block visible to readers? A private anvil mining each transaction as it comes,
 * `relgraph index --confirmations 0` and `relgraph serve` on one redis-server. Each sample: a user
 * calls a contract it never called, which an anchor user already called; the time from the mined
 * block to the first Mutual contract interaction answer (REST) naming that contract.
 *
 *   npm run build && node dist/bench/tools/chain-latency.js [--samples N]
 */

const USAGE = `usage: node dist/bench/tools/chain-latency.js [--samples N]
  --samples N   blocks timed (default 150; at most 47 users times 8 contracts)
`;

const CLI = path.resolve("dist/src/cli/main.js");
const API_KEY = "chain-latency-bench";
const CONTRACTS = 8;

type Json = Record<string, unknown>;

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { samples: { type: "string", default: "150" }, help: { type: "boolean", default: false } } });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const samples = Math.min(Number(values.samples), 47 * CONTRACTS);
  const work = await mkdtemp(path.join(os.tmpdir(), "relgraph-chain-latency-"));
  installCleanup(() => rmSync(work, { recursive: true, force: true }));
  try {
    const anvilPort = await freePort();
    await start(anvilBinary(), ["--host", "127.0.0.1", "--port", String(anvilPort), "--accounts", "50"], { ready: /Listening on/ });
    const url = `http://127.0.0.1:${anvilPort}`;
    const rpc = async <T>(method: string, params: unknown[] = []): Promise<T> => {
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
      const answer = (await response.json()) as { result?: T; error?: { message: string } };
      if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
      return answer.result as T;
    };
    const users = (await rpc<string[]>("eth_accounts")).map((account) => account.toLowerCase());
    const book = compileContracts().get("Guestbook")!;
    const contracts: string[] = [];
    for (let k = 0; k < CONTRACTS; k++) {
      const hash = await rpc<string>("eth_sendTransaction", [{ from: users[0], data: book.bytecode }]);
      contracts.push((await rpc<Json>("eth_getTransactionReceipt", [hash])).contractAddress as string);
    }
    const sign = book.abi.encodeFunctionData("sign", []);
    const anchor = users[1]!;
    // A second user who called them all: its answer with the anchor tells when the indexer has caught up.
    const witness = users[49]!;
    for (const from of [anchor, witness]) for (const contract of contracts) await rpc("eth_sendTransaction", [{ from, to: contract, data: sign }]);

    const redisPort = await freePort();
    await start("redis-server", ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { ready: /Ready to accept/ });
    const env = { REDIS_URL: `redis://127.0.0.1:${redisPort}` };
    const usersFile = path.join(work, "users.jsonl");
    await writeFile(usersFile, users.map((address, i) => JSON.stringify({ type: "user", relationId: `u${i}`, name: `u${i}`, avatar: "", addresses: [address] })).join("\n"));
    const loaded = await run(process.execPath, [CLI, "ingest", usersFile], { ...env, LOG_LEVEL: "warn" }, "ingest: ");
    if (loaded.code !== 0) throw new Error(`relgraph ingest exited ${loaded.code}`);
    await start(process.execPath, [CLI, "index", "--rpc", url, "--confirmations", "0"], { env: { ...env, LOG_LEVEL: "info" }, ready: /"msg":"indexing"/ });
    const servePort = await freePort();
    await start(process.execPath, [CLI, "serve", "--port", String(servePort)], { env: { ...env, HOST: "127.0.0.1", API_KEYS: API_KEY, DEV_KEY_NETWORK: "1", LOG_LEVEL: "warn" }, ready: /relgraph listening on/ });
    const mutual = async (a: string, b: string): Promise<string[]> => {
      const response = await fetch(`http://127.0.0.1:${servePort}/api/v1/mutualContractInteraction?address=${a},${b}&limit=100`, { headers: { ApiKey: API_KEY } });
      const body = (await response.json()) as { code: string; data: string[] };
      return body.code === "0" ? body.data : [];
    };
    const caughtUp = Date.now() + 30_000;
    while ((await mutual(anchor, witness)).length < CONTRACTS && Date.now() < caughtUp) await new Promise((resolve) => setTimeout(resolve, 50));

    const latencies: number[] = [];
    for (let i = 0; i < samples; i++) {
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
    process.stdout.write(`${JSON.stringify({ samples: latencies.length, p50Ms: ms(0.5), p90Ms: ms(0.9), p99Ms: ms(0.99), maxMs: Math.round(Math.max(...latencies)) }, null, 2)}\n`);
    return 0;
  } finally {
    await stopAll();
  }
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`chain-latency: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
