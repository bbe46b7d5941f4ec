import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import type { Wallet, HDNodeWallet } from "ethers";
import { SiweMessage } from "siwe";
import { runKeygen } from "../../src/cli/commands/crypto.js";
import type { PublicKeyNetwork } from "../../src/crypto/key-network.js";
import { readPublicKeyNetwork } from "../../src/crypto/key-network-file.js";
import { NETWORK_FILE, shareFileName } from "../../src/crypto/keygen.js";

/**
 * Runs a key network as separate `relgraph keynode` processes for tests. It needs the built CLI
 * (`npm run build`), or RELGRAPH_CLI pointing at another entry that dispatches `keynode`.
 */

/** The built CLI the processes run. */
// Resolved from the repository root, where tests and `npm run bench` run, so it holds compiled too.
export const RELGRAPH_CLI = process.env.RELGRAPH_CLI ?? resolve("dist/src/cli/main.js");

/** A running network of key-node processes. */
export interface KeyNodeProcesses {
  /** The dealt network, with each node's URL replaced by the address its process listens on. */
  network: PublicKeyNetwork;
  /** Directory holding key-network.json and the share files. */
  dir: string;
  /** Each running node's process id, by node index. */
  pids: Map<number, number>;
  /** Stops node i (SIGTERM, then SIGKILL) and waits for its exit. */
  stop(index: number): Promise<void>;
  /** Stops every node and removes the directory. */
  close(): Promise<void>;
}

/** Options of startKeyNodes. */
export interface StartKeyNodesOptions {
  threshold: number;
  nodes: number;
  /** Extra environment for the node processes (SIWE_DOMAINS, SIWE_MAX_AGE_SECONDS, …). */
  env?: Record<string, string>;
}

/** Deals a network with `relgraph keygen` and starts one `relgraph keynode` process per node on free ports. */
export async function startKeyNodes(options: StartKeyNodesOptions): Promise<KeyNodeProcesses> {
  if (!existsSync(RELGRAPH_CLI)) throw new Error(`${RELGRAPH_CLI} does not exist: run npm run build first`);
  const dir = await mkdtemp(join(tmpdir(), "relgraph-keynodes-"));
  const children = new Map<number, ChildProcess>();
  const stop = async (index: number) => {
    const child = children.get(index);
    children.delete(index);
    if (child !== undefined) await terminate(child);
  };
  const close = async () => {
    await Promise.all([...children.keys()].map(stop));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const silent = { stdin: process.stdin, stdout: sink(), stderr: sink() };
    const code = await runKeygen(
      ["--threshold", String(options.threshold), "--nodes", String(options.nodes), "--out", dir],
      silent,
    );
    if (code !== 0) throw new Error(`relgraph keygen exited with ${code}`);
    const dealt = await readPublicKeyNetwork(join(dir, NETWORK_FILE));
    const urls = await Promise.all(
      dealt.nodes.map(async (node) => {
        const child = spawn(
          process.execPath,
          [RELGRAPH_CLI, "keynode", "--share", join(dir, shareFileName(node.index)), "--port", "0", "--host", "127.0.0.1"],
          { env: { ...process.env, LOG_LEVEL: "warn", ...options.env }, stdio: ["ignore", "pipe", "pipe"] },
        );
        children.set(node.index, child);
        return listeningUrl(child);
      }),
    );
    const network = { ...dealt, nodes: dealt.nodes.map((node, k) => ({ ...node, url: urls[k] as string })) };
    const pids = new Map([...children].map(([index, child]) => [index, child.pid as number]));
    return { network, dir, pids, stop, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A signed SIWE authorization of `wallet`, valid for an hour. */
export async function signAuthorization(
  wallet: Wallet | HDNodeWallet,
  statement = "Access to User Profile.",
): Promise<{ sig: string; message: string }> {
  const now = Date.now();
  const message = new SiweMessage({
    domain: "relgraph.test",
    address: wallet.address,
    statement,
    uri: "https://relgraph.test/login",
    version: "1",
    chainId: 1,
    nonce: `n${Math.random().toString(36).slice(2, 12)}`,
    issuedAt: new Date(now - 1000).toISOString(),
    expirationTime: new Date(now + 3600_000).toISOString(),
  }).prepareMessage();
  return { sig: await wallet.signMessage(message), message };
}

/** Resolves with the URL a keynode process prints once it listens; rejects if it exits first. */
function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolveUrl, reject) => {
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      const match = / listening on (\S+)$/.exec(line);
      if (match) resolveUrl(match[1] as string);
    });
    child.once("exit", (code) => reject(new Error(`keynode exited with ${code} before listening: ${stderr}`)));
  });
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}

function sink(): Writable {
  return new Writable({ write: (_chunk, _encoding, done) => done() });
}
