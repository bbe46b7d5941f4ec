import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { RELGRAPH_CLI } from "./keynodes.js";

/*
 * relgraph commands as real processes (the built CLI), the way operators run them: every line a
 * process writes, stdout and stderr alike, is kept, so a test can read the whole log.
 */

/** A relgraph process started for a test. */
export interface RelgraphProcess {
  child: ChildProcess;
  /** Every line written so far, stdout and stderr interleaved as they arrived. */
  output: string[];
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after a grace period; resolves once the process has exited. Idempotent. */
  stop(): Promise<void>;
}

/** A `relgraph serve` process that said where it listens. */
export interface ServeProcess extends RelgraphProcess {
  /** http://127.0.0.1:PORT */
  url: string;
}

const STOP_GRACE_MS = 10_000;
const SERVE_START_TIMEOUT_MS = 60_000;

/** Starts `relgraph <args>` with `env` on top of the test's environment. */
export function startRelgraphProcess(args: readonly string[], env: Record<string, string> = {}): RelgraphProcess {
  if (!existsSync(RELGRAPH_CLI)) throw new Error(`${RELGRAPH_CLI} does not exist: run npm run build first`);
  const child = spawn(process.execPath, [RELGRAPH_CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  // "close", not "exit": it comes once stdout and stderr are drained, so `output` is whole by then.
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  createInterface({ input: child.stdout! }).on("line", (line) => output.push(line));
  createInterface({ input: child.stderr! }).on("line", (line) => output.push(line));
  let stopped: Promise<void> | null = null;
  const stop = () =>
    (stopped ??= (async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    })());
  return { child, output, exited, stop };
}

/** A relgraph command that logs JSON lines (index, follow), each line kept as it is parsed. */
export interface LoggingProcess {
  child: ChildProcess;
  /** Every line it logged so far; a line that is not JSON as `{ msg: line }`. */
  logs: Record<string, unknown>[];
  exited: Promise<number | null>;
}

/**
 * Starts `relgraph <command> <args>` on the store `env` names (no REDIS_URL or REDIS_CLUSTER_NODES
 * from the test's own environment), with a short write lease, so that one killed in a test is
 * replaced within a second.
 */
export function startLoggingCommand(command: string, args: readonly string[], env: Record<string, string>): LoggingProcess {
  const child = spawn(process.execPath, [RELGRAPH_CLI, command, ...args], {
    env: { ...process.env, REDIS_URL: "", REDIS_CLUSTER_NODES: "", LOG_LEVEL: "info", WRITE_LEASE_MS: "800", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: Record<string, unknown>[] = [];
  createInterface({ input: child.stderr! }).on("line", (line) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ msg: line });
    }
  });
  child.stdout!.resume();
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, logs, exited };
}

/**
 * Starts `relgraph serve` on a free loopback port and resolves once it says where it listens; rejects
 * (with everything it wrote) when it exits first.
 */
export async function startServeProcess(env: Record<string, string> = {}, args: readonly string[] = []): Promise<ServeProcess> {
  const running = startRelgraphProcess(["serve", ...args], { PORT: "0", HOST: "127.0.0.1", ...env });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not listen within ${SERVE_START_TIMEOUT_MS} ms:\n${running.output.join("\n")}`)), SERVE_START_TIMEOUT_MS);
    const poll = setInterval(() => {
      for (const line of running.output) {
        const match = /^relgraph listening on (\S+) /.exec(line);
        if (match) {
          clearInterval(poll);
          clearTimeout(timer);
          resolve(match[1]!);
          return;
        }
      }
    }, 20);
    void running.exited.then((code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}:\n${running.output.join("\n")}`));
    });
  }).catch(async (error: unknown) => {
    await running.stop();
    throw error;
  });
  return { ...running, url };
}

/**
 * Runs `relgraph serve` until it listens or exits, and returns everything it wrote meanwhile: for
 * tests of what a start (or a refused start) logs.
 */
export async function serveLog(env: Record<string, string>): Promise<{ listened: boolean; output: string[] }> {
  try {
    const served = await startServeProcess(env);
    await served.stop();
    return { listened: true, output: served.output };
  } catch (error) {
    return { listened: false, output: [(error as Error).message] };
  }
}
