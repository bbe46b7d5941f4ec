import { Readable } from "node:stream";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { runIngest } from "../../src/cli/commands/ingest.js";
import { createClient } from "redis";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import { captureIo } from "../support/cli-io.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";
import { addr, createFileBox, dump, userLine, type FileBox } from "../ingest/helpers.js";


const ENV_KEYS = ["REDIS_URL", "REDIS_CLUSTER_NODES"] as const;
let savedEnv: Record<string, string | undefined>;
let box: FileBox;

beforeEach(async () => {
  savedEnv = Object.fromEntries(ENV_KEYS.map((key) => [key, process.env[key]]));
  for (const key of ENV_KEYS) delete process.env[key];
  box = await createFileBox();
});

afterEach(async () => {
  for (const key of ENV_KEYS) {
    if (savedEnv[key] === undefined) delete process.env[key];
    else process.env[key] = savedEnv[key];
  }
  await box.remove();
});

const A = addr("a1");
const B = addr("b1");
const K = addr("c0001");
const GOOD = [
  userLine("u1", [A], { social: { username: "Alice" } }),
  userLine("u2", [B]),
  { type: "friend", a: "u1", b: "u2", description: "met" },
  { type: "follow", from: "u2", to: "u1" },
  { type: "interaction", address: A, contract: K },
  { type: "release", relationId: "u1", peers: "*" },
];

describe("relgraph ingest, without a store configured", () => {
  it("prints help", async () => {
    const io = captureIo();
    expect(await runIngest(["--help"], io)).toBe(0);
    expect(io.out()).toMatch(/^Usage: relgraph ingest/);
  });

  it("refuses to run without files or with unknown options", async () => {
    const io = captureIo();
    expect(await runIngest([], io)).toBe(2);
    expect(await runIngest(["--frobnicate", "a.jsonl"], io)).toBe(2);
    expect(await runIngest(["--max-errors", "none", "a.jsonl"], io)).toBe(2);
    expect(io.err()).toContain('Run "relgraph ingest --help" for usage.');
  });

  it("prints file:line: reason for each invalid record and exits 1", async () => {
    const path = await box.write("bad.jsonl", [...GOOD, { type: "follow", from: "u1", to: "u3" }, "not json"]);
    const io = captureIo();
    expect(await runIngest([path], io)).toBe(1);
    const lines = box.relative(io.err().trimEnd().split("\n"));
    expect(lines[0]).toBe('bad.jsonl:7: unknown relationId "u3": not in this load and not stored');
    expect(lines[1]).toMatch(/^bad\.jsonl:8: invalid JSON: /);
    expect(lines[2]).toBe("relgraph ingest: 2 errors in the load; nothing was written");
  });

  it("validates with --dry-run, and refuses to pretend it loaded into the embedded store", async () => {
    const path = await box.write("good.jsonl", GOOD);
    const dry = captureIo();
    expect(await runIngest(["--dry-run", path], dry)).toBe(0);
    expect(dry.out()).toMatch(/^valid: 6 records \(2 users\) from 1 file in [\d.]+ s, [\d,]+ records\/s; nothing written \(--dry-run\)\n$/);
    const io = captureIo();
    expect(await runIngest([path], io)).toBe(1);
    expect(io.err()).toContain("no store is configured: set REDIS_URL or REDIS_CLUSTER_NODES. Nothing was written.");
  });

  it("names stdin as the source of a load read from -, and counts in the singular when it is one", async () => {
    const io = { ...captureIo(), stdin: Readable.from([`${JSON.stringify(GOOD[0])}\n`]) };
    expect(await runIngest(["--dry-run", "-"], io)).toBe(0);
    expect(io.out()).toMatch(/^valid: 1 record \(1 user\) from stdin in [\d.]+ s, [\d,]+ records\/s; nothing written \(--dry-run\)\n$/);
  });
});

describe("relgraph ingest into Redis", () => {
  let server: TestRedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("loads files, leaves the same state when loaded again, and writes nothing from a bad load", async () => {
    process.env.REDIS_URL = server.url;
    const users = await box.write("users.jsonl", GOOD.slice(0, 2));
    const relations = await box.write("relations.jsonl", GOOD.slice(2));
    const io = captureIo();
    expect(await runIngest([relations, users], io)).toBe(0);
    expect(io.out()).toMatch(/^ingested 6 records \(2 users\) from 2 files in [\d.]+ s, [\d,]+ records\/s into redis\n$/);

    const store = await createRedisStore({ url: server.url });
    try {
      const first = await dump(store, ["u1", "u2"]);
      expect(first.u1).toMatchObject({ friends: ["u2"], followers: ["u2"], contracts: [K], release: "*" });
      expect(await store.resolve([{ kind: "social", value: "alice" }])).not.toEqual([null]);

      expect(await runIngest([users, relations], captureIo())).toBe(0);
      expect(await dump(store, ["u1", "u2"])).toEqual(first);

      // A second load may refer to stored users; a bad line anywhere keeps all of it out.
      const more = await box.write("more.jsonl", [userLine("u3", [addr("c3")]), { type: "friend", a: "u3", b: "u1" }, { type: "friend", a: "u3", b: "u3" }]);
      const bad = captureIo();
      expect(await runIngest([more], bad)).toBe(1);
      expect(box.relative(bad.err().split("\n"))[0]).toBe("more.jsonl:3: a user cannot be their own friend");
      expect(await store.resolveRelationIds(["u3"])).toEqual([null]);
      expect(await dump(store, ["u1", "u2"])).toEqual(first);
    } finally {
      await store.close();
    }
  });

  it("fails with Redis's reason when Redis refuses a load halfway, leaving every user answerable and none of the load visible", async () => {
    // A server of its own: its memory limit must not reach the other tests.
    const full = await startRedisServer();
    const redis = createClient({ url: full.url });
    await redis.connect();
    try {
      process.env.REDIS_URL = full.url;
      const USERS = 2_000;
      const name = (i: number) => `u${i}`;
      const users = await box.write("users.jsonl", Array.from({ length: USERS }, (_, i) => userLine(name(i), [addr(`e${i}`)])));
      expect(await runIngest([users], captureIo())).toBe(0);

      // Room for a small share of the load below (about 15% of its friend sets), which also moves
      // every user's address to a new one: a write applied halfway would leave users unanswerable.
      const used = Number(/used_memory:(\d+)/.exec(await redis.info("memory"))![1]);
      await redis.configSet({ maxmemory: String(used + 256 * 1024), "maxmemory-policy": "noeviction" });
      let seed = 7;
      const random = () => (seed = (seed * 48271) % 2147483647) % USERS;
      const moved = Array.from({ length: USERS }, (_, i) => userLine(name(i), [addr(`f${i}`)]));
      const friends = Array.from({ length: 200_000 }, () => {
        const a = random();
        return { type: "friend", a: name(a), b: name((a + 1 + (random() % (USERS - 1))) % USERS) };
      });
      const io = captureIo();
      expect(await runIngest([await box.write("friends.jsonl", [...moved, ...friends])], io)).toBe(1);
      expect(io.err()).toMatch(/^relgraph ingest: .*OOM command not allowed/m);
      expect(io.err()).not.toMatch(/\n\s+at /);

      // Every user is still answerable by the address it had, and none of the load shows.
      const store = await createRedisStore({ url: full.url });
      try {
        const sampled = Array.from({ length: USERS / 20 }, (_, k) => k * 20);
        const byOld = await store.resolve(sampled.map((i) => ({ kind: "address" as const, value: addr(`e${i}`) })));
        expect(byOld.every((id) => id !== null)).toBe(true);
        const byNew = await store.resolve(sampled.map((i) => ({ kind: "address" as const, value: addr(`f${i}`) })));
        expect(byNew.every((id) => id === null)).toBe(true);
        for (const id of byOld) expect(await store.userSet("friends", id!)).toEqual([]);
      } finally {
        await store.close();
      }

      // With room again, the next run of any load finds nothing half done and applies cleanly.
      await redis.configSet({ maxmemory: "0" });
      const next = captureIo();
      expect(await runIngest([await box.write("one.jsonl", [userLine("late", [addr("fe")])])], next)).toBe(0);
      expect(next.err()).not.toContain("interrupted");
      expect(await redis.keys("rg:journal*")).toEqual([]);
    } finally {
      await redis.close();
      await full.stop();
    }
  });

  it("reports an unreachable store without a stack trace", async () => {
    process.env.REDIS_URL = "redis://127.0.0.1:1";
    const path = await box.write("good.jsonl", GOOD);
    const io = captureIo();
    expect(await runIngest([path], io)).toBe(1);
    expect(io.err()).toMatch(/^relgraph ingest: /);
    expect(io.err()).not.toMatch(/\n\s+at /);
  });
});
