import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLoadValidator } from "../../src/ingest/validate.js";
import { connectRedis, type RedisConnection } from "../../src/store/redis/connection.js";
import { loadJournal, saveJournal, type JournalPart } from "../../src/store/redis/journal.js";
import { JOURNAL, journalChunkKey, RELATION_ID_INDEX, releaseKey, userSetKey } from "../../src/store/redis/keys.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import { JournalFormatError } from "../../src/store/redis/journal-format.js";
import { completeInterruptedWrite, writeBatch } from "../../src/store/redis/write/apply.js";
import type { GraphStore, IngestBatch, KeptChange } from "../../src/store/store.js";
import { SERVING_WAYS } from "../support/relgraph-server.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";

/*
 * The journalled unit (redis-write.ts): relation records, edge deletes among them, travel in typed
 * columns over one list of names. A unit completed from the journal must end where a whole write
 * ends, and a journal that is damaged or of another layout must be refused before anything of it
 * is applied.
 */

const SEED = [
  ...["u1", "u2", "u3", "u4", "u5", "u6"].map((id) => JSON.stringify({ type: "user", relationId: id, addresses: [] })),
  '{"type":"friend","a":"u1","b":"u2","description":"old"}',
  '{"type":"friend","a":"u1","b":"u3"}',
  '{"type":"friend","a":"u4","b":"u5"}',
  '{"type":"follow","from":"u1","to":"u4"}',
  '{"type":"follow","from":"u5","to":"u6"}',
  '{"type":"release","relationId":"u1","peers":["u2","u3"]}',
];

/** Adds, deletes (one of an unknown user, one of a user erased and defined again), a new user, an erasure, a release. */
const CHANGES = [
  '{"type":"friend","op":"delete","a":"u2","b":"u1"}',
  '{"type":"friend","op":"delete","a":"ghost","b":"u1"}',
  '{"type":"follow","op":"delete","from":"u1","to":"u4"}',
  '{"type":"friend","a":"u2","b":"u6","description":"new"}',
  '{"type":"follow","from":"u7","to":"u2"}',
  '{"type":"user","relationId":"u7","addresses":[]}',
  '{"type":"user","op":"delete","relationId":"u5"}',
  '{"type":"user","relationId":"u5","addresses":[]}',
  '{"type":"friend","op":"delete","a":"u5","b":"u4"}',
  '{"type":"follow","op":"delete","from":"u5","to":"u6"}',
  '{"type":"release","relationId":"u1","peers":["u3","u6"]}',
];

let server: TestRedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

/** The records validated against the store, as one batch. */
async function validated(store: GraphStore, lines: readonly string[]): Promise<IngestBatch> {
  const validator = createLoadValidator({ sources: ["test"] });
  lines.forEach((line, i) => validator.addLine(line, 0, i + 1));
  return validator.finish(store);
}

/** Every key but the journal's, with its value, in a comparable form. */
async function snapshot(url: string): Promise<Record<string, unknown>> {
  const client = createClient({ url });
  await client.connect();
  try {
    const state: Record<string, unknown> = {};
    for (const key of (await client.keys("*")).sort()) {
      if (key.startsWith(JOURNAL)) continue;
      const type = await client.type(key);
      if (type === "string") state[key] = await client.get(key);
      else if (type === "set") state[key] = (await client.sMembers(key)).sort();
      else if (type === "hash") state[key] = Object.entries(await client.hGetAll(key)).sort();
      else state[key] = type;
    }
    return state;
  } finally {
    await client.close();
  }
}

/**
 * Seeds database `db`, then writes CHANGES as a writer that dies once the journal is committed and
 * one window of the unit is sent. Resolves with the connection (the next writer's) and the
 * database's URL.
 */
async function interrupted(db: number, fastPaths: boolean, keep: readonly KeptChange[] = []): Promise<{ redis: RedisConnection; url: string; close(): Promise<void> }> {
  const url = `${server.url}/${db}`;
  const store = await createRedisStore({ url });
  const redis = await connectRedis({ url }, fastPaths);
  await redis.send(undefined, ["FLUSHDB"]);
  await writeBatch(redis, await validated(store, SEED));
  const changes = await validated(store, CHANGES);
  let committed = false;
  let windowsLeft = 1;
  const dying: RedisConnection = {
    ...redis,
    send: (key, args) => {
      if (key === JOURNAL && args[0] === "SET" && args[2]?.includes('"committed"')) committed = true;
      return redis.send(key, args);
    },
    writeAll: (commands) => {
      if (committed && windowsLeft-- <= 0) return Promise.reject(new Error("killed"));
      return redis.writeAll(commands);
    },
    // The grouped edges go this way with FAST_PATHS on: they die alike.
    writeEncoded:
      redis.writeEncoded &&
      ((commands) => {
        if (committed && windowsLeft-- <= 0) return Promise.reject(new Error("killed"));
        return redis.writeEncoded!(commands);
      }),
  };
  await expect(writeBatch(dying, changes, { keep })).rejects.toThrow("killed");
  return {
    redis,
    url,
    close: async () => {
      await store.close();
      await redis.close();
    },
  };
}

/** Seeds database `db` and writes CHANGES whole, as a writer that is not interrupted; resolves with its URL. */
async function writtenWhole(db: number, fastPaths: boolean): Promise<string> {
  const url = `${server.url}/${db}`;
  const store = await createRedisStore({ url });
  const redis = await connectRedis({ url }, fastPaths);
  await redis.send(undefined, ["FLUSHDB"]);
  await writeBatch(redis, await validated(store, SEED));
  await writeBatch(redis, await validated(store, CHANGES));
  await Promise.all([store.close(), redis.close()]);
  return url;
}

/** The journal's header, as saved. */
async function journalHeader(redis: RedisConnection): Promise<{ unit: string; chunks: number; encoding?: string }> {
  return JSON.parse((await redis.send<string>(JOURNAL, ["GET", JOURNAL]))!);
}

/** Saves the journal's unit again, changed by `change`, in place of the one there. */
async function rewriteJournal(redis: RedisConnection, change: (parts: Map<string, JournalPart>) => void): Promise<void> {
  const journalled = await loadJournal(redis);
  if (!journalled) throw new Error("no journal to rewrite");
  change(journalled.parts);
  await journalled.clear();
  await saveJournal(redis, journalled.parts);
}

/** `redis`, whose send and writeAll fail once `steps` of them have run: a writer killed there. */
function dyingAfter(redis: RedisConnection, steps: number): RedisConnection {
  let left = steps;
  return new Proxy(redis, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (name !== "send" && name !== "writeAll") return value;
      return (...args: unknown[]) => (left-- <= 0 ? Promise.reject(new Error("killed")) : (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
    },
  });
}

describe.each(SERVING_WAYS)("the write journal ($name)", ({ fastPaths }) => {
  it("a writer killed at any point of clearing a journal leaves one the next writer completes or discards, never one that stops it", async () => {
    const redis = await connectRedis({ url: `${server.url}/8` }, fastPaths);
    try {
      // Saving takes two of the counted commands (the header, as written and as committed); clearing three.
      for (let killedAfter = 0; killedAfter <= 3; killedAfter++) {
        await redis.send(undefined, ["FLUSHDB"]);
        const parts = new Map<string, JournalPart>([["unit", { json: { killedAfter } }]]);
        const saved = await saveJournal(dyingAfter(redis, 2 + killedAfter), parts);
        await saved.clear().catch(() => {});
        const left = await loadJournal(redis);
        if (left !== null) {
          expect(left.parts.get("unit"), `killed after ${killedAfter}`).toEqual({ json: { killedAfter } });
          await left.clear();
        }
        expect(await loadJournal(redis)).toBeNull();
        expect(await redis.send(undefined, ["DBSIZE"]), `killed after ${killedAfter}`).toBe(0);
      }
    } finally {
      await redis.close();
    }
  });

  it("a unit completed from the journal ends where a whole write ends", async () => {
    const whole = await writtenWhole(1, fastPaths);

    const broken = await interrupted(2, fastPaths);
    try {
      expect(await completeInterruptedWrite(broken.redis)).toBe(CHANGES.length);
      const state = await snapshot(broken.url);
      expect(state).toEqual(await snapshot(whole));
      // u1 … u6 are 1 … 6; u7 is 7, and u5, erased and defined again, 8.
      expect(state[userSetKey("friends", 1)]).toEqual(["3"]);
      expect(state[userSetKey("friends", 2)]).toEqual(["6"]);
      expect(state[userSetKey("friends", 4)]).toBeUndefined();
      expect(state[userSetKey("following", 1)]).toBeUndefined();
      expect(state[userSetKey("following", 7)]).toEqual(["2"]);
      expect(state[userSetKey("followers", 6)]).toBeUndefined();
      expect(await completeInterruptedWrite(broken.redis)).toBe(0);
    } finally {
      await broken.close();
    }
  });

  it("a unit completed from the journal writes the state kept with it, and only then", async () => {
    const keep: KeptChange[] = [
      { space: "test:position", field: "block", value: "7" },
      { space: "test:balances", field: "a", value: "2" },
      { space: "test:balances", field: "b", value: null },
    ];
    const { redis, url, close } = await interrupted(9, false, keep);
    const store = await createRedisStore({ url });
    try {
      await redis.send("rg:kept:test:balances", ["HSET", "rg:kept:test:balances", "b", "1"]);
      expect(await store.keptState("test:position", ["block", "other"])).toEqual([null, null]);
      await completeInterruptedWrite(redis);
      expect(await store.keptState("test:position", ["block", "other"])).toEqual(["7", null]);
      expect(await store.keptSpace("test:balances")).toEqual(new Map([["a", "2"]]));
    } finally {
      await store.close();
      await close();
    }
  });

  it("refuses a journal whose bytes were cut short, applying none of it", async () => {
    const broken = await interrupted(3, fastPaths);
    try {
      const header = await journalHeader(broken.redis);
      const chunk = journalChunkKey(header.unit, 0);
      const [bytes] = await broken.redis.getBytes([chunk]);
      await broken.redis.setBytes([[chunk, bytes!.subarray(0, -8)]]);
      const before = await snapshot(broken.url);
      await expect(completeInterruptedWrite(broken.redis)).rejects.toThrow(/damaged/);
      expect(await snapshot(broken.url)).toEqual(before);
    } finally {
      await broken.close();
    }
  });

  it("a replaced release loses the peers it no longer names before it gains new ones", async () => {
    const url = `${server.url}/7`;
    const store = await createRedisStore({ url });
    const redis = await connectRedis({ url }, fastPaths);
    const monitor = createClient({ url });
    await monitor.connect();
    try {
      await redis.send(undefined, ["FLUSHDB"]);
      await writeBatch(redis, await validated(store, SEED));
      const idOf = async (relationId: string) => (await redis.send<string>(RELATION_ID_INDEX, ["HGET", RELATION_ID_INDEX, relationId]))!;
      const [u1, u2, u6] = await Promise.all(["u1", "u2", "u6"].map(idOf));
      const seen: string[] = [];
      await monitor.monitor((line) => seen.push(line));
      // u1's release goes from u2 and u3 to u3 and u6 (CHANGES' last record).
      await writeBatch(redis, await validated(store, CHANGES));
      await redis.send(undefined, ["PING"]);
      const key = `"${releaseKey(Number(u1))}"`;
      // The plan reads the release too (SCARD, SMEMBERS): only the writes count here.
      const onRelease = seen
        .filter((line) => line.includes(key))
        .map((line) => line.slice(line.indexOf('] "') + 2))
        .filter((command) => /^"(SADD|SREM|DEL)"/.test(command));
      expect(onRelease).toEqual([`"SREM" ${key} "${u2}"`, `"SADD" ${key} "${u6}"`]);
    } finally {
      await monitor.close();
      await Promise.all([store.close(), redis.close()]);
    }
  });

  it("completes a journal an earlier relgraph left, its chunks in base64 text", async () => {
    const whole = await writtenWhole(5, fastPaths);

    const broken = await interrupted(6, fastPaths);
    try {
      const header = await journalHeader(broken.redis);
      expect(header.encoding).toBe("bytes");
      for (let n = 0; n < header.chunks; n++) {
        const chunk = journalChunkKey(header.unit, n);
        const [bytes] = await broken.redis.getBytes([chunk]);
        await broken.redis.send(chunk, ["SET", chunk, bytes!.toString("base64")]);
      }
      delete header.encoding;
      await broken.redis.send(JOURNAL, ["SET", JOURNAL, JSON.stringify(header)]);
      expect(await completeInterruptedWrite(broken.redis)).toBe(CHANGES.length);
      expect(await snapshot(broken.url)).toEqual(await snapshot(whole));
    } finally {
      await broken.close();
    }
  });

  it("refuses a unit of another layout, or whose columns index past their lists, applying none of it", async () => {
    const broken = await interrupted(4, fastPaths);
    try {
      const before = await snapshot(broken.url);
      await rewriteJournal(broken.redis, (parts) => ((parts.get("friendDeleteA") as Uint32Array)[0] = 1_000_000));
      await expect(completeInterruptedWrite(broken.redis)).rejects.toThrow(JournalFormatError);
      expect(await snapshot(broken.url)).toEqual(before);

      // A release change naming a user past the unit's list of release users.
      let gainedFirst = 0;
      await rewriteJournal(broken.redis, (parts) => {
        (parts.get("friendDeleteA") as Uint32Array)[0] = 0;
        const gained = parts.get("releaseGained") as Uint32Array;
        expect(gained.length).toBeGreaterThan(0);
        gainedFirst = gained[0]!;
        gained[0] = (parts.get("releaseIds") as Float64Array).length;
      });
      await expect(completeInterruptedWrite(broken.redis)).rejects.toThrow(/index past their list/);
      expect(await snapshot(broken.url)).toEqual(before);

      await rewriteJournal(broken.redis, (parts) => {
        (parts.get("releaseGained") as Uint32Array)[0] = gainedFirst;
        parts.delete("deleteIds");
      });
      await expect(completeInterruptedWrite(broken.redis)).rejects.toThrow(/lacks its part "deleteIds"/);

      // A unit as an older relgraph journalled it: no format, and names under another field.
      await rewriteJournal(broken.redis, (parts) => {
        const { json } = parts.get("commands") as { json: Record<string, unknown> };
        delete json.format;
      });
      await expect(completeInterruptedWrite(broken.redis)).rejects.toThrow(/format 1/);
      expect(await snapshot(broken.url)).toEqual(before);
    } finally {
      await broken.close();
    }
  });
});
