import { spawn } from "node:child_process";
import { RELGRAPH_CLI } from "../../support/keynodes.js";
import { freePort } from "../../support/ports.js";
import { startLoggingCommand, type LoggingProcess } from "../../support/relgraph-process.js";

/*
 * relgraph's own commands as processes, for the indexer's end-to-end tests: `relgraph index`,
 * `relgraph ingest -` and `relgraph serve`, each on the test's Redis or Redis Cluster.
 */

/** Where a test's Redis is, as relgraph's environment names it. */
export type RedisEnv = { REDIS_URL: string } | { REDIS_CLUSTER_NODES: string };

/** The ApiKey the test servers accept. */
export const API_KEY = "chain-test-key";

/** `relgraph index` as a process, its stderr JSON lines collected as they come. */
export type IndexProcess = LoggingProcess;

export function startIndex(env: RedisEnv & { WRITE_LEASE_MS?: string }, args: readonly string[]): IndexProcess {
  return startLoggingCommand("index", args, env);
}

/** Runs a relgraph command to its end; resolves with its exit code and output. */
export function runRelgraph(env: Record<string, string>, args: readonly string[], stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RELGRAPH_CLI, ...args], {
      env: { ...process.env, REDIS_URL: "", REDIS_CLUSTER_NODES: "", LOG_LEVEL: "warn", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? "");
  });
}

/** A `relgraph serve` on the test's store. */
export interface ServeProcess {
  url: string;
  stop(): Promise<void>;
}

export async function startServe(env: RedisEnv): Promise<ServeProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [RELGRAPH_CLI, "serve", "--port", String(port)], {
    env: { ...process.env, REDIS_URL: "", REDIS_CLUSTER_NODES: "", LOG_LEVEL: "warn", HOST: "127.0.0.1", API_KEYS: API_KEY, DEV_KEY_NETWORK: "1", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(child.pid!, "SIGKILL");
      await exited;
    }
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`relgraph serve exited: ${stderr}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok) return { url, stop };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`relgraph serve did not get ready: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** GET a REST route with the test ApiKey; resolves with the envelope. */
export async function rest<T>(server: ServeProcess, path: string, params: Record<string, string | number>): Promise<{ code: string; desc: string; data: T; cursor?: string }> {
  const query = new URLSearchParams(Object.entries(params).map(([key, value]) => [key, String(value)]));
  const response = await fetch(`${server.url}${path}?${query}`, { headers: { ApiKey: API_KEY } });
  return (await response.json()) as { code: string; desc: string; data: T; cursor?: string };
}

/** Polls until `check` holds; fails with `what` after `ms`. */
export async function waitUntil(what: string, check: () => Promise<boolean> | boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}
