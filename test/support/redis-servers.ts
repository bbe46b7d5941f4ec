import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll } from "vitest";
import { freePort } from "./ports.js";

/*
 * Test harness: private redis-server processes on free loopback ports, each in its own temporary
 * directory, never the shared Redis on 6379. Every start has a stop that kills by pid, waits for
 * the exit and removes the directory.
 */

const run = promisify(execFile);
const STARTUP_TIMEOUT_MS = 15_000;

/** A redis-server started for a test. */
export interface TestRedisServer {
  /** redis://127.0.0.1:PORT */
  url: string;
  port: number;
  pid: number;
  /** Kills the server (if still running) and removes its directory. Idempotent. */
  stop(): Promise<void>;
}

/** A Redis Cluster of three masters started for a test. */
export interface TestRedisCluster {
  /** host:port of every master. */
  nodes: string[];
  pids: number[];
  /** Kills every node and removes their directories. Idempotent. */
  stop(): Promise<void>;
}

/** Starts a standalone redis-server on a free loopback port and waits until it answers; `extraArgs` go to its command line. */
export async function startRedisServer(extraArgs: readonly string[] = []): Promise<TestRedisServer> {
  const dir = await mkdtemp(join(tmpdir(), "relgraph-redis-"));
  try {
    const node = await startNode(dir, [...extraArgs]);
    return {
      url: `redis://127.0.0.1:${node.port}`,
      port: node.port,
      pid: node.pid,
      stop: once(async () => {
        await node.stop();
        await rm(dir, { recursive: true, force: true });
      }),
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Starts three cluster-enabled masters, joins them with `redis-cli --cluster create` (no
 * replicas) and waits until every node reports cluster_state:ok. A cluster that fails to form is
 * stopped and started afresh, up to CLUSTER_ATTEMPTS times: on a loaded machine the join has failed
 * once in many hundred starts, and a suite's tests should not fail for it.
 */
export async function startRedisCluster(): Promise<TestRedisCluster> {
  let lastError: unknown;
  for (let attempt = 0; attempt < CLUSTER_ATTEMPTS; attempt++) {
    try {
      return await startClusterOnce();
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

const CLUSTER_ATTEMPTS = 3;

async function startClusterOnce(): Promise<TestRedisCluster> {
  const dir = await mkdtemp(join(tmpdir(), "relgraph-redis-cluster-"));
  const started: RunningNode[] = [];
  const stop = once(async () => {
    await Promise.all(started.map((node) => node.stop()));
    await rm(dir, { recursive: true, force: true });
  });
  try {
    for (let i = 0; i < 3; i++) {
      const config = join(dir, `nodes-${i}.conf`);
      // The cluster bus listens on port + 10000, so that one must be free too.
      started.push(
        await startNode(dir, ["--cluster-enabled", "yes", "--cluster-config-file", config, "--cluster-node-timeout", "5000"], true),
      );
    }
    const nodes = started.map((node) => `127.0.0.1:${node.port}`);
    await run("redis-cli", ["--cluster", "create", ...nodes, "--cluster-replicas", "0", "--cluster-yes"], {
      timeout: STARTUP_TIMEOUT_MS,
    }).catch((error: Error & { stdout?: string }) => {
      // redis-cli says why on its standard output.
      throw new Error(`${error.message}\n${error.stdout ?? ""}`);
    });
    await waitFor(async () => {
      const infos = await Promise.all(started.map((node) => command(node.port, ["CLUSTER", "INFO"])));
      return infos.every((info) => info.includes("cluster_state:ok"));
    }, "cluster_state:ok on every node");
    return { nodes, pids: started.map((node) => node.pid), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

interface RunningNode {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

async function startNode(dir: string, extraArgs: string[], needsBusPort = false): Promise<RunningNode> {
  // A free port can be taken between probing and binding; try a few.
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await redisPort(needsBusPort);
    const child = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...extraArgs],
      { stdio: "ignore" },
    );
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    try {
      // Check the pid too: on a port race, whoever else answers there is not our server.
      const answers = async () => (await command(port, ["INFO", "server"])).includes(`process_id:${child.pid}\r`);
      await waitFor(answers, `redis-server on ${port}`, exited);
      return { port, pid: child.pid as number, stop: once(() => kill(child, exited)) };
    } catch (error) {
      lastError = error;
      await kill(child, exited);
    }
  }
  throw lastError;
}

async function kill(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
    process.kill(child.pid, "SIGKILL");
  }
  await exited;
}

/** A loopback port nobody listens on (and, for cluster nodes, whose bus port is free too). */
async function redisPort(needsBusPort: boolean): Promise<number> {
  for (;;) {
    const port = needsBusPort ? 20_000 + Math.floor(Math.random() * 30_000) : await freePort();
    if (port === 6379) continue;
    if (!needsBusPort) return port;
    if ((await canListen(port)) && (await canListen(port + 10_000))) return port;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** Sends one inline command over a fresh socket and returns the raw reply ("" when nobody answers). */
function command(port: number, args: string[]): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let reply = "";
    const done = () => {
      socket.destroy();
      resolve(reply.trim());
    };
    socket.setTimeout(1_000, done);
    socket.once("error", done);
    socket.on("data", (data) => {
      reply += data.toString();
      // A status (+) or error (-) line is complete at CRLF; a bulk reply ($len) once it has its payload.
      const header = reply.match(/^\$(\d+)\r\n/);
      if ((!header && reply.endsWith("\r\n")) || (header && reply.length >= header[0].length + Number(header[1]) + 2)) {
        done();
      }
    });
    socket.once("connect", () => socket.write(`${args.join(" ")}\r\n`));
  });
}

async function waitFor(check: () => Promise<boolean>, what: string, abort?: Promise<void>): Promise<void> {
  let aborted = false;
  void abort?.then(() => (aborted = true));
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline && !aborted) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let result: Promise<void> | null = null;
  return () => (result ??= fn());
}

/** A private redis-server and a node-redis client of it, shared by one test file's tests. */
export interface FileRedis {
  readonly server: TestRedisServer;
  readonly client: RedisClientType;
}

/** Starts a FileRedis before the file's tests and stops it after them; read its fields inside tests. */
export function redisForFile(): FileRedis {
  const handle = {} as { server: TestRedisServer; client: RedisClientType };
  beforeAll(async () => {
    handle.server = await startRedisServer();
    handle.client = createClient({ url: handle.server.url });
    await handle.client.connect();
  });
  afterAll(async () => {
    await handle.client?.close();
    await handle.server?.stop();
  });
  return handle;
}
