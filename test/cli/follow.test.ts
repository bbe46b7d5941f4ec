import { spawn } from "node:child_process";
import { Writable } from "node:stream";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runFollow } from "../../src/cli/commands/follow.js";
import type { CommandIo } from "../../src/cli/io.js";
import { JOURNAL } from "../../src/store/redis/keys.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { addr, createFileBox } from "../ingest/helpers.js";
import { RELGRAPH_CLI } from "../support/keynodes.js";
import { startRedisCluster, startRedisServer, type TestRedisCluster, type TestRedisServer } from "../support/redis-servers.js";
import {
  add,
  connectCommands,
  drained,
  entriesOf,
  groupState,
  record,
  records,
  startFollow,
  waitUntil,
  type Commands,
  type Follower,
  type RedisEnv,
} from "../feed/helpers.js";

/*
 * `relgraph follow` as operators run it: a process of dist/ on a real redis-server or a real
 * 3-node cluster, fed with XADD, its effect read back through the store.
 */

const STREAM = "relgraph:changes";
const REJECTED = `${STREAM}:rejected`;
const A = addr("a1");
const B = addr("b1");

function user(relationId: string, addresses: string[] = []): object {
  return { type: "user", relationId, addresses };
}

/** The relationIds a user's set holds, sorted; null for an unknown user. */
async function setOf(store: GraphStore, kind: "friends" | "following" | "followers", relationId: string): Promise<string[] | null> {
  const [id] = await store.resolveRelationIds([relationId]);
  if (id == null) return null;
  return (await store.relationIds(await store.userSet(kind, id))).sort();
}

async function known(store: GraphStore, relationIds: string[]): Promise<number> {
  return (await store.resolveRelationIds(relationIds)).filter((id) => id !== null).length;
}

async function stop(follower: Follower): Promise<number | null> {
  follower.child.kill("SIGTERM");
  return follower.exited;
}

const running: Follower[] = [];
function follow(env: RedisEnv, args: string[]): Follower {
  const follower = startFollow(env, args);
  running.push(follower);
  return follower;
}
// After each test, not all: a follower left running by a failed test would take the next tests' entries.
afterEach(() => {
  for (const follower of running.splice(0)) if (follower.child.exitCode === null && follower.child.signalCode === null) follower.child.kill("SIGKILL");
});

describe("relgraph follow, its command line", () => {
  const io = () => {
    let err = "";
    let out = "";
    const sink = (add: (text: string) => void) =>
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          add(chunk.toString());
          done();
        },
      });
    const captured: CommandIo & { out(): string; err(): string } = { stdout: sink((t) => (out += t)), stderr: sink((t) => (err += t)), out: () => out, err: () => err };
    return captured;
  };

  it("prints help, refuses bad options, and needs a Redis", async () => {
    const help = io();
    expect(await runFollow(["--help"], help)).toBe(0);
    expect(help.out()).toMatch(/^Usage: relgraph follow \[--stream KEY\] \[--group NAME\] \[--consumer NAME\]/);
    const bad = io();
    expect(await runFollow(["--batch", "0"], bad)).toBe(2);
    expect(await runFollow(["--from", "later"], bad)).toBe(2);
    expect(await runFollow(["--frobnicate"], bad)).toBe(2);
    expect(await runFollow(["--linger", "-1"], bad)).toBe(2);
    expect(await runFollow(["--linger", "1001"], bad)).toBe(2);
    expect(bad.err()).toContain('--linger must be an integer from 0 to 1000 (ms), got "1001"');
    expect(bad.err()).toContain('Run "relgraph follow --help" for usage.');
    const saved = [process.env.REDIS_URL, process.env.REDIS_CLUSTER_NODES];
    delete process.env.REDIS_URL;
    delete process.env.REDIS_CLUSTER_NODES;
    try {
      const none = io();
      expect(await runFollow([], none)).toBe(2);
      expect(none.err()).toContain("set REDIS_URL or REDIS_CLUSTER_NODES");
    } finally {
      if (saved[0] !== undefined) process.env.REDIS_URL = saved[0];
      if (saved[1] !== undefined) process.env.REDIS_CLUSTER_NODES = saved[1];
    }
  });
});

describe("relgraph follow on standalone Redis", () => {
  let server: TestRedisServer;
  let env: RedisEnv;
  let redis: Commands;
  let store: GraphStore;
  beforeAll(async () => {
    server = await startRedisServer();
    env = { REDIS_URL: server.url };
    redis = await connectCommands(env);
    store = await createRedisStore({ url: server.url });
  });
  afterAll(async () => {
    await store?.close();
    await redis?.close();
    await server?.stop();
  });
  const reset = () => redis.send(STREAM, ["FLUSHALL"]);

  it("applies and acknowledges entries, rejects invalid ones with their reasons, applies the valid ones after them, and stops on SIGTERM", async () => {
    await reset();
    const ids = {
      u1: await add(redis, STREAM, record(user("u1", [A]))),
      u2: await add(redis, STREAM, records([user("u2", [B]), { type: "friend", a: "u1", b: "u2", description: "met" }])),
      notJson: await add(redis, STREAM, { record: "not json" }),
      neither: await add(redis, STREAM, { other: "x" }),
      both: await add(redis, STREAM, { ...record(user("u7")), ...records([user("u8")]) }),
      unknown: await add(redis, STREAM, record({ type: "follow", from: "u1", to: "u9" })),
      taken: await add(redis, STREAM, records([user("u3", [A]), { type: "follow", from: "u3", to: "u2" }])),
      dependent: await add(redis, STREAM, record({ type: "follow", from: "u3", to: "u1" })),
      after: await add(redis, STREAM, record({ type: "follow", from: "u2", to: "u1" })),
    };
    const follower = follow(env, ["--consumer", "c1"]);
    await drained(redis, STREAM);

    expect(await setOf(store, "friends", "u1")).toEqual(["u2"]);
    expect(await setOf(store, "followers", "u1")).toEqual(["u2"]);
    expect(await setOf(store, "following", "u3")).toBeNull();
    expect(await known(store, ["u7", "u8"])).toBe(0);

    const rejected = await entriesOf(redis, REJECTED);
    expect(rejected.map((entry) => entry.fields.entry)).toEqual([ids.notJson, ids.neither, ids.both, ids.unknown, ids.taken, ids.dependent]);
    const reasons = Object.fromEntries(rejected.map((entry) => [entry.fields.entry, entry.fields.reason]));
    expect(reasons[ids.notJson]).toMatch(/^invalid JSON: /);
    expect(reasons[ids.neither]).toBe('the entry has neither a "record" nor a "records" field');
    expect(reasons[ids.both]).toBe('the entry has both a "record" and a "records" field; send one');
    expect(reasons[ids.unknown]).toBe('unknown relationId "u9": not in this load and not stored');
    expect(reasons[ids.taken]).toBe(`line 1: address ${A} already belongs to user "u1" (${ids.u1}:1)`);
    expect(reasons[ids.dependent]).toBe('unknown relationId "u3": not in this load and not stored');
    // The original fields travel with the reason.
    expect(rejected[0]!.fields.record).toBe("not json");
    expect(rejected[1]!.fields.other).toBe("x");

    // Entries added while it runs are applied too.
    await add(redis, STREAM, record({ type: "follow", from: "u1", to: "u2" }));
    await drained(redis, STREAM);
    expect(await setOf(store, "following", "u1")).toEqual(["u2"]);

    expect(await stop(follower)).toBe(0);
    expect(follower.stopped()).toMatchObject({ entries: 4, records: 5, rejected: 6 });
    expect(follower.logs.some((line) => line.msg === "progress" && typeof line.recordsPerSecond === "number" && line.lag === 0)).toBe(true);
  });

  it("--linger sets how long a unit waits for more entries on a busy stream: with 0, a steady flow's entries go one or two a unit", async () => {
    /** Units applied (one XACK each) while 40 entries arrive about 20 ms apart. */
    const unitsWith = async (linger: string): Promise<number> => {
      await reset();
      await redis.send(STREAM, ["XGROUP", "CREATE", STREAM, "relgraph", "0", "MKSTREAM"]);
      const follower = follow(env, ["--consumer", `linger-${linger}`, "--linger", linger]);
      await waitUntil("the follower is reading", () => follower.logs.some((line) => line.msg === "following"));
      await redis.send(STREAM, ["CONFIG", "RESETSTAT"]);
      const names = Array.from({ length: 40 }, (_, k) => `linger${linger}_${k}`);
      for (const name of names) {
        await add(redis, STREAM, record(user(name)));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await drained(redis, STREAM);
      expect(await stop(follower)).toBe(0);
      expect(await known(store, names)).toBe(40);
      const stats = await redis.send<string>(STREAM, ["INFO", "commandstats"]);
      return Number(/cmdstat_xack:calls=(\d+)/.exec(stats)?.[1] ?? 0);
    };
    const eager = await unitsWith("0");
    const lingering = await unitsWith("300");
    // Relative, so that a slow machine (larger units either way) does not fail it.
    expect(eager).toBeGreaterThanOrEqual(10);
    expect(lingering).toBeGreaterThan(0);
    expect(lingering).toBeLessThan(eager / 2);
  });

  it("with --trim, deletes the entries every group has acknowledged, and none that a group still needs", async () => {
    await reset();
    const length = () => redis.send<number>(STREAM, ["XLEN", STREAM]);
    for (const group of ["relgraph", "audit", "late"]) await redis.send(STREAM, ["XGROUP", "CREATE", STREAM, group, "0", "MKSTREAM"]);
    const ids: string[] = [];
    for (let k = 1; k <= 6; k++) ids.push(await add(redis, STREAM, record(user(`t${k}`))));
    // Another group's consumer read three and acknowledged two; a third group has read nothing.
    await redis.send(STREAM, ["XREADGROUP", "GROUP", "audit", "auditor", "COUNT", "3", "STREAMS", STREAM, ">"]);
    await redis.send(STREAM, ["XACK", STREAM, "audit", ids[0]!, ids[1]!]);

    const follower = follow(env, ["--consumer", "c1", "--trim"]);
    await drained(redis, STREAM);
    expect(await known(store, ids.map((_, k) => `t${k + 1}`))).toBe(6);
    // Past a trim after the last unit and an idle round's: "late" still needs everything.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await length()).toBe(6);

    await redis.send(STREAM, ["XGROUP", "DESTROY", STREAM, "late"]);
    // "audit" still holds its third entry: it and everything after stay.
    await waitUntil("the acknowledged entries are trimmed", async () => (await length()) === 4);
    expect((await entriesOf(redis, STREAM)).map((entry) => entry.id)).toEqual(ids.slice(2));

    await redis.send(STREAM, ["XACK", STREAM, "audit", ids[2]!]);
    await redis.send(STREAM, ["XREADGROUP", "GROUP", "audit", "auditor", "COUNT", "10", "STREAMS", STREAM, ">"]);
    await redis.send(STREAM, ["XACK", STREAM, "audit", ...ids.slice(3)]);
    // The last entry delivered stays, as what both groups read up to.
    await waitUntil("all but the last entry are trimmed", async () => (await length()) === 1);
    expect((await entriesOf(redis, STREAM)).map((entry) => entry.id)).toEqual([ids[5]]);

    expect(await stop(follower)).toBe(0);
    expect(follower.stopped()).toMatchObject({ entries: 6, rejected: 0, trimmed: 5 });
  });

  it("takes entries in the ingestion format as `relgraph ingest` takes a file: a byte-order mark, CRLF, blank lines", async () => {
    await reset();
    // `records "$(cat changes.jsonl)"` of a file saved with a BOM and CRLF, which ingest loads.
    await add(redis, STREAM, { records: `\uFEFF${JSON.stringify(user("u1", [A]))}\r\n${JSON.stringify(user("u2", [B]))}\r\n` });
    await add(redis, STREAM, { record: `\uFEFF${JSON.stringify({ type: "friend", a: "u1", b: "u2" })}` });
    await add(redis, STREAM, { records: `\r\n${JSON.stringify(user("u3"))}\r\n\r\n` });
    await add(redis, STREAM, record({ type: "follow", from: "u2", to: "u1" }));
    const follower = follow(env, ["--consumer", "c1"]);
    await drained(redis, STREAM);

    expect(await setOf(store, "friends", "u1")).toEqual(["u2"]);
    expect(await setOf(store, "followers", "u1")).toEqual(["u2"]);
    expect(await known(store, ["u3"])).toBe(1);
    expect(await entriesOf(redis, REJECTED)).toEqual([]);
    expect(await stop(follower)).toBe(0);
    expect(follower.stopped()).toMatchObject({ entries: 4, records: 5, rejected: 0 });
  });

  it("applies a `records` of no record as nothing, as `relgraph ingest` loads an empty file, and acknowledges it without rejecting it", async () => {
    await reset();
    await add(redis, STREAM, record(user("u1", [A])));
    await add(redis, STREAM, { records: "" });
    await add(redis, STREAM, { records: "\r\n\n" });
    await add(redis, STREAM, record(user("u2", [B])));
    const follower = follow(env, ["--consumer", "c1"]);
    await drained(redis, STREAM);
    expect(await known(store, ["u1", "u2"])).toBe(2);
    // A unit of nothing but an empty entry is acknowledged too.
    await add(redis, STREAM, { records: "" });
    await drained(redis, STREAM);
    expect(await entriesOf(redis, REJECTED)).toEqual([]);
    expect(await stop(follower)).toBe(0);
    expect(follower.stopped()).toMatchObject({ entries: 5, records: 2, rejected: 0 });
  });

  it("never reads or acknowledges anything while the store refuses writes, and applies it all once it accepts them; its metrics show the lag", async () => {
    await reset();
    await redis.send(STREAM, ["XGROUP", "CREATE", STREAM, "relgraph", "0", "MKSTREAM"]);
    const names: string[] = [];
    for (let k = 0; k < 10; k++) {
      const batch = Array.from({ length: 20 }, (_, j) => user(`o${k}_${j}`));
      names.push(...batch.map((item) => (item as { relationId: string }).relationId));
      await add(redis, STREAM, records([...batch, { type: "friend", a: `o${k}_0`, b: `o${k}_1` }]));
    }
    // Redis now refuses every write that needs memory, the write lease's included.
    await redis.send(STREAM, ["CONFIG", "SET", "maxmemory", "1"]);
    const follower = follow(env, ["--consumer", "patient", "--metrics-port", "0"]);
    let scrape: () => Promise<string> = async () => "";
    try {
      await waitUntil("the consumer retries", () => follower.logs.some((line) => line.msg === "cannot read the stream; retrying"));
      const port = follower.logs.find((line) => line.msg === "serving metrics")?.port;
      expect(port).toBeTypeOf("number");
      scrape = async () => (await fetch(`http://127.0.0.1:${String(port)}/metrics`)).text();
      expect(await known(store, names)).toBe(0);
      expect(await groupState(redis, STREAM)).toEqual({ pending: 0, lag: 10 });
      // The first entry has waited since it was added, and every one is waiting.
      const stalled = await scrape();
      expect(Number(/^relgraph_change_feed_lag_seconds (\S+)$/m.exec(stalled)?.[1])).toBeGreaterThan(0);
      expect(stalled).toMatch(/^relgraph_change_feed_entries_waiting\{state="undelivered"\} 10$/m);
      expect(stalled).toMatch(/^relgraph_change_feed_records_total 0$/m);
    } finally {
      await redis.send(STREAM, ["CONFIG", "SET", "maxmemory", "0"]);
    }
    await drained(redis, STREAM);
    expect(await known(store, names)).toBe(names.length);
    // The group is drained once the store's write acknowledges the entries; the consumer counts them
    // a round trip later, after its own XACK of the unit.
    let caughtUp = "";
    await waitUntil("the metrics count every entry", async () => /^relgraph_change_feed_entries_total 10$/m.test((caughtUp = await scrape())));
    expect(caughtUp).toMatch(/^relgraph_change_feed_lag_seconds 0$/m);
    expect(caughtUp).toMatch(/^relgraph_change_feed_entries_waiting\{state="undelivered"\} 0$/m);
    expect(caughtUp).toMatch(/^relgraph_change_feed_entries_total 10$/m);
    expect(caughtUp).toMatch(/^relgraph_change_feed_records_total 210$/m);
    expect(caughtUp).toContain("relgraph_follow_process_cpu_seconds_total");
    expect(await stop(follower)).toBe(0);
    expect(follower.stopped()).toMatchObject({ entries: 10, records: 10 * 21, rejected: 0 });
  });

  it("a consumer killed with SIGKILL while it applies a unit leaves it to the next, which completes it and goes on in stream order", async () => {
    await reset();
    await redis.send(STREAM, ["XGROUP", "CREATE", STREAM, "relgraph", "0", "MKSTREAM"]);
    const names: string[] = [];
    for (let k = 0; k < 30; k++) {
      const batch = Array.from({ length: 300 }, (_, j) => user(`k${k}_${j}`));
      names.push(...batch.map((item) => (item as { relationId: string }).relationId));
      await add(redis, STREAM, records([...batch, { type: "friend", a: `k${k}_0`, b: `k${k}_1` }]));
    }
    // The last entry undoes what the first one did: applied out of order, the edge would survive.
    await add(redis, STREAM, record({ op: "delete", type: "friend", a: "k0_0", b: "k0_1" }));
    // One unit of the first 30 entries (9,000 users), so that it is applied for long enough to be
    // caught between its journal's commit and its end, watched every 2 ms: the writer applies a
    // unit of 3,000 users in a few tens of milliseconds, which a 50 ms poll could miss every time.
    const doomed = follow(env, ["--consumer", "doomed", "--batch", "30"]);
    await waitUntil(
      "the doomed consumer's first unit is journalled",
      async () => (await redis.send<string | null>(JOURNAL, ["GET", JOURNAL]))?.includes('"committed"') === true,
      2,
    );
    doomed.child.kill("SIGKILL");
    await doomed.exited;

    const heir = follow(env, ["--consumer", "heir"]);
    await drained(redis, STREAM);
    expect(await known(store, names)).toBe(names.length);
    expect(await setOf(store, "friends", "k0_0")).toEqual([]);
    expect(await setOf(store, "friends", "k29_0")).toEqual(["k29_1"]);
    expect(await stop(heir)).toBe(0);
    expect(heir.logs.some((line) => typeof line.msg === "string" && line.msg.startsWith("completed an interrupted write"))).toBe(true);
    expect(await entriesOf(redis, REJECTED)).toEqual([]);
  });

  it("completes a load a killed `relgraph ingest` left half applied when it starts, on a quiet stream", async () => {
    await reset();
    const box = await createFileBox();
    try {
      const names = Array.from({ length: 9_000 }, (_, j) => `q${j}`);
      const file = await box.write("load.jsonl", [...names.map((name) => user(name)), { type: "friend", a: "q0", b: "q8999" }]);
      const ingest = spawn(process.execPath, [RELGRAPH_CLI, "ingest", file], { env: { ...process.env, ...env, WRITE_LEASE_MS: "800" }, stdio: "ignore" });
      const exited = new Promise((resolve) => ingest.once("exit", resolve));
      // Killed between its journal's commit and its end, watched every 2 ms (as above).
      await waitUntil(
        "the ingest's load is journalled",
        async () => (await redis.send<string | null>(JOURNAL, ["GET", JOURNAL]))?.includes('"committed"') === true,
        2,
      );
      ingest.kill("SIGKILL");
      await exited;
      expect(await redis.send(JOURNAL, ["GET", JOURNAL])).not.toBeNull();

      // Nothing in the stream: the follower has no entry to apply, and completes the load all the same.
      const follower = follow(env, ["--consumer", "c1"]);
      await waitUntil("the journal is cleared", async () => (await redis.send(JOURNAL, ["GET", JOURNAL])) === null);
      expect(await known(store, names)).toBe(names.length);
      expect(await setOf(store, "friends", "q0")).toEqual(["q8999"]);
      expect(await stop(follower)).toBe(0);
      expect(follower.logs.some((line) => typeof line.msg === "string" && line.msg.startsWith("completed an interrupted write"))).toBe(true);
    } finally {
      await box.remove();
    }
  });

  it("on SIGTERM, finishes and acknowledges the unit in hand, leaves the rest unread, and exits 0", async () => {
    await reset();
    await redis.send(STREAM, ["XGROUP", "CREATE", STREAM, "relgraph", "0", "MKSTREAM"]);
    const entryUsers: string[][] = [];
    for (let k = 0; k < 40; k++) {
      const batch = Array.from({ length: 500 }, (_, j) => `t${k}_${j}`);
      entryUsers.push(batch);
      await add(redis, STREAM, records(batch.map((name) => user(name))));
    }
    const follower = follow(env, ["--consumer", "c1", "--batch", "5"]);
    await waitUntil("a unit is in hand", async () => (await groupState(redis, STREAM))!.pending > 0);
    expect(await stop(follower)).toBe(0);
    const state = await groupState(redis, STREAM);
    const applied = Number(follower.stopped()?.entries);
    expect(state).toEqual({ pending: 0, lag: 40 - applied });
    expect(applied).toBeGreaterThan(0);
    expect(await known(store, entryUsers.slice(0, applied).flat())).toBe(applied * 500);
    expect(await known(store, entryUsers.slice(applied).flat())).toBe(0);
  });

  it("shares one stream between two consumers, each entry applied by one of them", async () => {
    await reset();
    const first = follow(env, ["--consumer", "first", "--metrics-port", "0"]);
    const second = follow(env, ["--consumer", "second", "--metrics-port", "0"]);
    await waitUntil("both consumers wait for entries", async () => {
      const clients = await redis.send<string>(STREAM, ["CLIENT", "LIST"]);
      return clients.split("\n").filter((line) => line.includes("cmd=xread")).length === 2;
    });
    // Entries applied so far by one consumer, from its own metrics.
    const applied = async (follower: Follower) => {
      const port = follower.logs.find((line) => line.msg === "serving metrics")?.port;
      if (typeof port !== "number") return 0;
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return Number(/^relgraph_change_feed_entries_total (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    // Whichever consumer wins the write lease applies what is new, so who gets work depends on the
    // scheduler: entries keep coming, three at a time, until each has applied some (on a loaded
    // machine one can lose many rounds in a row), within a bound that fails the test.
    const names: string[] = [];
    while (names.length < 900 && ((await applied(first)) === 0 || (await applied(second)) === 0)) {
      for (let i = 0; i < 3; i++) {
        const name = `s${names.length}`;
        names.push(name);
        await add(redis, STREAM, record(user(name)));
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await drained(redis, STREAM);
    expect(await known(store, names)).toBe(names.length);
    expect(await Promise.all([stop(first), stop(second)])).toEqual([0, 0]);
    const counts = [first, second].map((follower) => Number(follower.stopped()?.entries));
    expect(counts[0]! + counts[1]!).toBe(names.length);
    expect(counts[0]).toBeGreaterThan(0);
    expect(counts[1]).toBeGreaterThan(0);
  });

  it("rejects an entry delivered --max-deliveries times without being applied, and applies the rest its dead consumer held", async () => {
    await reset();
    await redis.send(STREAM, ["XGROUP", "CREATE", STREAM, "relgraph", "0", "MKSTREAM"]);
    const poison = await add(redis, STREAM, record(user("p1")));
    const innocent = await add(redis, STREAM, record(user("p2")));
    // A consumer that read both and died; the first had already stopped four consumers before it.
    await redis.send(STREAM, ["XREADGROUP", "GROUP", "relgraph", "ghost", "COUNT", "10", "STREAMS", STREAM, ">"]);
    await redis.send(STREAM, ["XCLAIM", STREAM, "relgraph", "ghost", "0", poison, "RETRYCOUNT", "5"]);

    const heir = follow(env, ["--consumer", "heir", "--max-deliveries", "5"]);
    await drained(redis, STREAM);
    expect(await known(store, ["p1", "p2"])).toBe(1);
    expect(await known(store, ["p2"])).toBe(1);
    const rejected = await entriesOf(redis, REJECTED);
    expect(rejected).toHaveLength(1);
    expect(rejected[0]!.fields).toMatchObject({ entry: poison, record: JSON.stringify(user("p1")) });
    expect(rejected[0]!.fields.reason).toMatch(/^not applied after 5 deliveries/);
    expect(await stop(heir)).toBe(0);
    expect(heir.stopped()).toMatchObject({ entries: 1, rejected: 1, claimed: 1 });
    void innocent;
  });
});

describe("relgraph follow on a Redis Cluster", () => {
  let cluster: TestRedisCluster;
  let env: RedisEnv;
  let redis: Commands;
  let store: GraphStore;
  beforeAll(async () => {
    cluster = await startRedisCluster();
    env = { REDIS_CLUSTER_NODES: cluster.nodes.join(",") };
    redis = await connectCommands(env);
    store = await createRedisStore({ clusterNodes: cluster.nodes });
  });
  afterAll(async () => {
    await store?.close();
    await redis?.close();
    await cluster?.stop();
  });

  it("applies entries, rejects to a stream in another slot, takes over a dead consumer's entries, and trims what it acknowledged", async () => {
    const stream = "feed:cluster";
    await redis.send(stream, ["XGROUP", "CREATE", stream, "relgraph", "0", "MKSTREAM"]);
    await add(redis, stream, records([user("c1", [A]), user("c2", [B]), { type: "friend", a: "c1", b: "c2" }]));
    const bad = await add(redis, stream, record({ type: "friend", a: "c1", b: "c1" }));
    await add(redis, stream, record({ type: "follow", from: "c2", to: "c1" }));
    // A consumer that read all three and died.
    await redis.send(stream, ["XREADGROUP", "GROUP", "relgraph", "ghost", "COUNT", "10", "STREAMS", stream, ">"]);
    // Newer than the ghost's, so applied after them: the friendship the ghost held ends here.
    await add(redis, stream, record(user("c3")));
    await add(redis, stream, record({ op: "delete", type: "friend", a: "c2", b: "c1" }));

    const follower = follow(env, ["--stream", stream, "--consumer", "heir", "--trim"]);
    await drained(redis, stream);
    expect(await setOf(store, "friends", "c1")).toEqual([]);
    expect(await setOf(store, "following", "c2")).toEqual(["c1"]);
    expect(await known(store, ["c3"])).toBe(1);
    const rejected = await entriesOf(redis, `${stream}:rejected`);
    expect(rejected.map((entry) => [entry.fields.entry, entry.fields.reason])).toEqual([[bad, "a user cannot be their own friend"]]);
    // --trim: all acknowledged, so only the last entry delivered stays.
    await waitUntil("the stream is trimmed", async () => (await redis.send<number>(stream, ["XLEN", stream])) === 1);
    expect(await stop(follower)).toBe(0);
    expect(follower.stopped()).toMatchObject({ entries: 4, records: 6, rejected: 1, claimed: 3, trimmed: 4 });
  });
});
