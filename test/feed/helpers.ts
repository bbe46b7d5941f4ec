import { createClient, createCluster } from "redis";
import { startLoggingCommand, type LoggingProcess } from "../support/relgraph-process.js";

/** Raw commands on a test Redis or cluster, routed by key. */
export interface Commands {
  send<T = unknown>(key: string, args: string[]): Promise<T>;
  close(): Promise<void>;
}

/** Where a test's Redis is, as relgraph's environment names it. */
export type RedisEnv = { REDIS_URL: string } | { REDIS_CLUSTER_NODES: string };

export async function connectCommands(env: RedisEnv): Promise<Commands> {
  if ("REDIS_CLUSTER_NODES" in env) {
    const cluster = createCluster({ rootNodes: env.REDIS_CLUSTER_NODES.split(",").map((node) => ({ url: `redis://${node}` })) });
    await cluster.connect();
    return { send: (key, args) => cluster.sendCommand(key, false, args), close: () => cluster.close() };
  }
  const client = createClient({ url: env.REDIS_URL });
  await client.connect();
  return { send: (_key, args) => client.sendCommand(args), close: () => client.close() };
}

/** `relgraph follow` as a process, its stderr JSON lines collected as they come. */
export interface Follower extends LoggingProcess {
  /** The counters of its last "stopped" line. */
  stopped(): Record<string, unknown> | undefined;
}

export function startFollow(env: RedisEnv, args: string[]): Follower {
  const follower = startLoggingCommand("follow", args, env);
  return { ...follower, stopped: () => [...follower.logs].reverse().find((line) => line.msg === "stopped") };
}

/** Polls until `check` holds; fails with `what` after 30 s. */
export async function waitUntil(what: string, check: () => Promise<boolean> | boolean, everyMs = 50): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`timed out waiting until ${what}`);
}

/** The group's pending count and lag, as XINFO GROUPS reports them. */
export async function groupState(redis: Commands, key: string, group = "relgraph"): Promise<{ pending: number; lag: number | null } | null> {
  let groups: unknown[][];
  try {
    groups = await redis.send<unknown[][]>(key, ["XINFO", "GROUPS", key]);
  } catch {
    return null;
  }
  for (const info of groups) {
    const map = new Map<string, unknown>();
    for (let i = 0; i + 1 < info.length; i += 2) map.set(String(info[i]), info[i + 1]);
    if (map.get("name") === group) return { pending: Number(map.get("pending")), lag: map.get("lag") == null ? null : Number(map.get("lag")) };
  }
  return null;
}

/** Waits until every entry of the stream was delivered to the group and acknowledged. */
export function drained(redis: Commands, key: string): Promise<void> {
  return waitUntil(`${key} is drained`, async () => {
    const state = await groupState(redis, key);
    return state !== null && state.pending === 0 && state.lag === 0;
  });
}

/** The entries of a stream as {id, fields by name}. */
export async function entriesOf(redis: Commands, key: string): Promise<{ id: string; fields: Record<string, string> }[]> {
  const reply = await redis.send<[string, string[]][]>(key, ["XRANGE", key, "-", "+"]);
  return reply.map(([id, flat]) => {
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
    return { id, fields };
  });
}

/** Appends one entry; resolves with its id. */
export function add(redis: Commands, key: string, fields: Record<string, string>): Promise<string> {
  return redis.send<string>(key, ["XADD", key, "*", ...Object.entries(fields).flat()]);
}

/** A record as the value of an entry's `record` field. */
export function record(value: object): Record<string, string> {
  return { record: JSON.stringify(value) };
}

/** Records as the value of an entry's `records` field (JSON Lines). */
export function records(values: object[]): Record<string, string> {
  return { records: values.map((value) => JSON.stringify(value)).join("\n") };
}
