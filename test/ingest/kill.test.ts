import { spawn } from "node:child_process";
import { createClient, createCluster } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ingestFiles } from "../../src/ingest/ingest.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import { JOURNAL } from "../../src/store/redis/keys.js";
import type { GraphStore } from "../../src/store/store.js";
import { startRedisCluster, startRedisServer, type TestRedisCluster, type TestRedisServer } from "../support/redis-servers.js";
import { addr, createFileBox, dump, userLine, type FileBox } from "./helpers.js";

/*
 * `relgraph ingest` killed with SIGKILL at random points, as a real process against real Redis and
 * the real 3-node cluster. After each kill, every user that was answerable is still answerable, and
 * once the next run has gone, either none of the killed load is visible or all of it is.
 */

const USERS = 2_000;
const FRIENDS = 150_000;
const ERASED = ["u7", "u70", "u700"];
const name = (i: number) => `u${i}`;
const LEASE_MS = "600";

/** A small xorshift generator: the kill points are random, and the same on every run. */
function seeded(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

let box: FileBox;
let base: string;
let load: string;
let next: string;
/** States of sampled users with the next run only, and with the killed load and the next run. */
let without: Record<string, unknown>;
let withLoad: Record<string, unknown>;
const sample = [...Array.from({ length: 60 }, (_, k) => name(k * 33)), ...ERASED, "late"];

beforeAll(async () => {
  box = await createFileBox();
  const random = seeded(99);
  const pick = () => Math.floor(random() * USERS);
  base = await box.write("base.jsonl", [
    ...Array.from({ length: USERS }, (_, i) => userLine(name(i), [addr(`e${i}`)], { social: { username: `User${i}` } })),
    ...Array.from({ length: 4_000 }, () => {
      const a = pick();
      return { type: "friend", a: name(a), b: name((a + 1 + (pick() % (USERS - 1))) % USERS), description: "base" };
    }),
    ...Array.from({ length: 200 }, (_, i) => ({ type: "release", relationId: name(i), peers: "*" })),
  ]);
  // Moves every user to a new address (a half-applied move would leave users unanswerable), adds
  // many friends, deletes some, erases a few users and withdraws releases.
  load = await box.write("load.jsonl", [
    ...Array.from({ length: USERS }, (_, i) => userLine(name(i), [addr(`f${i}`)], { social: { username: `User${i}` } })),
    ...Array.from({ length: FRIENDS }, () => {
      const a = pick();
      return { type: "friend", a: name(a), b: name((a + 1 + (pick() % (USERS - 1))) % USERS), description: "load" };
    }),
    ...Array.from({ length: 100 }, (_, i) => ({ type: "release", relationId: name(i), peers: [] })),
    ...ERASED.map((relationId) => ({ op: "delete", type: "user", relationId })),
  ]);
  next = await box.write("next.jsonl", [userLine("late", [addr("fe")])]);
  const expected = async (files: string[]) => {
    const store = createMemoryStore();
    for (const file of files) await ingestFiles(store, [file]);
    return dump(store, sample);
  };
  without = await expected([base, next]);
  withLoad = await expected([base, load, next]);
});

afterAll(async () => {
  await box.remove();
});

/** Runs `relgraph ingest` from dist/ as a child process; resolves with its exit code (null when killed) and stderr. */
function ingest(env: Record<string, string>, file: string, kill?: (child: ReturnType<typeof spawn>) => void) {
  const child = spawn(process.execPath, ["dist/src/cli/main.js", "ingest", file], {
    env: { ...process.env, ...env, WRITE_LEASE_MS: LEASE_MS },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  kill?.(child);
  return new Promise<{ code: number | null; stderr: string }>((resolve) => child.once("exit", (code) => resolve({ code, stderr })));
}

/** Every user of the base load that the killed load does not erase, by its old address or its new one. */
async function unanswerable(store: GraphStore): Promise<string[]> {
  const lost: string[] = [];
  for (let i = 0; i < USERS; i += 7) {
    if (ERASED.includes(name(i))) continue;
    const [byOld, byNew] = await store.resolve([
      { kind: "address", value: addr(`e${i}`) },
      { kind: "address", value: addr(`f${i}`) },
    ]);
    const [record] = await store.users([byOld ?? byNew ?? -1]);
    if (!record || record.relationId !== name(i)) lost.push(name(i));
  }
  return lost;
}

/** A Redis deployment for one engine: fresh for each test. */
interface Backend {
  env: Record<string, string>;
  open(): Promise<GraphStore>;
  /** GET of one key, through a client of the test's own. */
  get(key: string): Promise<string | null>;
  /** Replaces the deployment with an empty one. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

function defineKillTests(engine: string, start: () => Promise<Backend>) {
  describe(`relgraph ingest killed at random points: ${engine}`, () => {
    let backend: Backend;
    /** How long the whole load takes here, unkilled: kill points are spread over it. */
    let fullMs = 0;
    beforeAll(async () => {
      backend = await start();
      const based = await ingest(backend.env, base);
      expect(based.code, based.stderr).toBe(0);
      const started = performance.now();
      const loaded = await ingest(backend.env, load);
      expect(loaded.code, loaded.stderr).toBe(0);
      fullMs = performance.now() - started;
    });
    afterAll(async () => {
      await backend?.stop();
    });

    const random = seeded(engine.length * 7919);
    // Random points over the whole run (start-up, reading, validation, journal, apply), and a point
    // just after the journal is committed, when the load is being applied.
    const kills: { label: string; at: "random" | "committed"; share: number }[] = [
      { label: "at a random time", at: "random", share: 0.1 + 0.85 * random() },
      { label: "at another random time", at: "random", share: 0.1 + 0.85 * random() },
      { label: "at a third random time", at: "random", share: 0.1 + 0.85 * random() },
      { label: "while the journalled load is applied", at: "committed", share: 0.1 * random() },
    ];

    for (const kill of kills) {
      it(`keeps every user answerable, and the next run leaves all or none of the load: killed ${kill.label}`, async () => {
        await backend.flush();
        const based = await ingest(backend.env, base);
        expect(based.code, based.stderr).toBe(0);
        const store = await backend.open();
        try {
          let watching = true;
          const killed = await ingest(backend.env, load, (child) => {
            if (kill.at === "random") {
              setTimeout(() => child.kill("SIGKILL"), kill.share * fullMs);
              return;
            }
            void (async () => {
              // The journal header turns "committed" just before the first change.
              while (watching) {
                const header = await backend.get(JOURNAL);
                if (header?.includes('"committed"')) break;
                await new Promise((resolve) => setTimeout(resolve, 5));
              }
              setTimeout(() => child.kill("SIGKILL"), kill.share * fullMs);
            })();
          });
          watching = false;
          // A kill that came after the end is no kill; the test then checks a completed load.
          expect([null, 0]).toContain(killed.code);
          expect(await unanswerable(store)).toEqual([]);

          const after = await ingest(backend.env, next);
          expect(after.code, after.stderr).toBe(0);
          const state = await dump(store, sample);
          if (killed.code === null && kill.at === "committed") expect(state).toEqual(withLoad);
          else expect([without, withLoad]).toContainEqual(state);
          expect(await backend.get(JOURNAL)).toBeNull();
        } finally {
          await store.close();
        }
      });
    }
  });
}

defineKillTests("redis", async () => {
  let server: TestRedisServer = await startRedisServer();
  const env = { REDIS_URL: server.url };
  return {
    env,
    open: () => createRedisStore({ url: server.url }),
    async get(key) {
      const client = createClient({ url: server.url });
      await client.connect();
      try {
        return await client.get(key);
      } finally {
        await client.close();
      }
    },
    async flush() {
      await server.stop();
      server = await startRedisServer();
      env.REDIS_URL = server.url;
    },
    stop: () => server.stop(),
  };
});

defineKillTests("redis-cluster", async () => {
  let cluster: TestRedisCluster = await startRedisCluster();
  const env = { REDIS_CLUSTER_NODES: cluster.nodes.join(",") };
  return {
    env,
    open: () => createRedisStore({ clusterNodes: cluster.nodes }),
    async get(key) {
      const client = createCluster({ rootNodes: cluster.nodes.map((node) => ({ url: `redis://${node}` })) });
      await client.connect();
      try {
        return await client.get(key);
      } finally {
        await client.close();
      }
    },
    async flush() {
      await cluster.stop();
      cluster = await startRedisCluster();
      env.REDIS_CLUSTER_NODES = cluster.nodes.join(",");
    },
    stop: () => cluster.stop(),
  };
});
