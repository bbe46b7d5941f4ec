import { spawn, type ChildProcess } from "node:child_process";
import { anvilBinary } from "../../../bench/processes/anvil.js";
import { freePort } from "../../support/ports.js";

/*
 * Test harness: a private anvil (from the npm package @foundry-rs/anvil, whose platform package
 * ships the binary) on a free loopback port. It is spawned directly, not through the package's
 * node wrapper, so that its pid is anvil's own and stopping it kills the node itself.
 */

const STARTUP_TIMEOUT_MS = 20_000;

/** A running anvil. */
export interface TestAnvil {
  /** http://127.0.0.1:PORT */
  url: string;
  port: number;
  pid: number;
  /** Calls a JSON-RPC method on the node; rejects with the node's error message. */
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** Kills the node (if still running) and waits for its exit. Idempotent. */
  stop(): Promise<void>;
}

/** Starts anvil (automining, chain id 31337, its ten funded and unlocked accounts) and waits until it answers. */
export async function startAnvil(extraArgs: readonly string[] = []): Promise<TestAnvil> {
  const port = await freePort();
  const child = spawn(anvilBinary(), ["--host", "127.0.0.1", "--port", String(port), "--silent", ...extraArgs], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const rpc = <T>(method: string, params: unknown[] = []) => callRpc<T>(url, method, params);
  const stop = once(() => kill(child, exited));
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`anvil exited at start: ${stderr}`);
    try {
      await rpc("eth_chainId");
      break;
    } catch {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`anvil did not answer on ${url} within ${STARTUP_TIMEOUT_MS} ms: ${stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return { url, port, pid: child.pid!, rpc, stop };
}

/** One JSON-RPC call over HTTP; rejects with the error object's message. */
export async function callRpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  const answer = (await response.json()) as { result?: T; error?: { message: string } };
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
  return answer.result as T;
}

async function kill(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
    process.kill(child.pid, "SIGKILL");
    await exited;
  }
}

function once(work: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null;
  return () => (done ??= work());
}
