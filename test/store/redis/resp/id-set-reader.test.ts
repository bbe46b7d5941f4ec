import net from "node:net";
import { describe, expect, it } from "vitest";
import { RespIdSetReader } from "../../../../src/store/redis/resp/id-set-reader.js";
import { RedisReplyError, respEndpointOf, UnexpectedReplyError } from "../../../../src/store/redis/resp/socket.js";
import { redisForFile } from "../../../support/redis-servers.js";

const CONNECT_TIMEOUT_MS = 2_000;

const shared = redisForFile();

/** A reader for `url`, closed after `test` whatever happens. */
async function withReader(url: string, test: (reader: RespIdSetReader) => Promise<void>): Promise<void> {
  const reader = new RespIdSetReader(respEndpointOf(url)!, CONNECT_TIMEOUT_MS);
  try {
    await test(reader);
  } finally {
    await reader.close();
  }
}

const sorted = (ids: readonly number[]) => [...ids].sort((a, b) => a - b);
const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe("respEndpointOf", () => {
  it("reads host, port, credentials and database from a redis:// URL", () => {
    expect(respEndpointOf("redis://127.0.0.1:6390")).toEqual({ host: "127.0.0.1", port: 6390, username: "", password: "", db: 0 });
    expect(respEndpointOf("redis://reader:p%40ss@cache.internal/4")).toEqual({ host: "cache.internal", port: 6379, username: "reader", password: "p@ss", db: 4 });
    expect(respEndpointOf("redis://:secret@[::1]:7000")).toEqual({ host: "::1", port: 7000, username: "", password: "secret", db: 0 });
  });

  it("leaves TLS URLs and unreadable databases to node-redis", () => {
    expect(respEndpointOf("rediss://cache.internal:6380")).toBeNull();
    expect(respEndpointOf("redis://127.0.0.1:6379/x")).toBeNull();
  });
});

describe("RespIdSetReader against a real redis-server", () => {
  it("reads the same sizes and members as SCARD and SMEMBERS through node-redis, in the order asked", async () => {
    await shared.client.flushAll();
    const sets = { "t:a": [3, 1, 2], "t:b": range(1_000_000, 40), "t:c": [987654321012345] };
    for (const [key, ids] of Object.entries(sets)) await shared.client.sAdd(key, ids.map(String));
    const keys = ["t:c", "t:missing", "t:a", "t:b"];
    await withReader(shared.server.url, async (reader) => {
      expect(await reader.sizes(keys)).toEqual([1, 0, 3, 40]);
      const members = await reader.members(keys);
      const expected = await Promise.all(keys.map(async (key) => (await shared.client.sMembers(key)).map(Number)));
      expect(members.map(sorted)).toEqual(expected.map(sorted));
      expect(members.map(sorted)).toEqual([[987654321012345], [], [1, 2, 3], range(1_000_000, 40)]);
      expect(await reader.sizes([])).toEqual([]);
    });
  });

  it("reads a set whose reply spans many socket reads, and thousands of keys in one round trip", async () => {
    await shared.client.flushAll();
    await shared.client.sAdd("t:big", range(1, 120_000).map(String));
    const many = range(0, 3_000).map((i) => `t:s${i}`);
    for (const key of many.filter((_, i) => i % 3 === 0)) await shared.client.sAdd(key, [key.slice(3), "7"]);
    await withReader(shared.server.url, async (reader) => {
      const [big] = await reader.members(["t:big"]);
      expect(sorted(big!)).toEqual(range(1, 120_000));
      // Concurrent batches on one connection each get their own replies.
      const [sizes, members] = await Promise.all([reader.sizes(many), reader.members(many)]);
      expect(sizes).toEqual(many.map((_, i) => (i % 3 === 0 ? 2 : 0)));
      expect(members.map(sorted)).toEqual(many.map((key, i) => (i % 3 === 0 ? sorted([Number(key.slice(3)), 7]) : [])));
    });
  });

  it("rejects a batch holding a key of the wrong type with Redis's error, and stays in step for the next", async () => {
    await shared.client.flushAll();
    await shared.client.sAdd("t:ok", ["5", "6"]);
    await shared.client.set("t:string", "not a set");
    await withReader(shared.server.url, async (reader) => {
      const failure = await reader.members(["t:ok", "t:string", "t:ok"]).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(RedisReplyError);
      expect((failure as Error).message).toMatch(/^WRONGTYPE/);
      expect((await reader.members(["t:ok"])).map(sorted)).toEqual([[5, 6]]);
      expect(await reader.sizes(["t:ok"])).toEqual([2]);
    });
  });

  it("refuses members that are not user ids, then reads again on a new connection", async () => {
    await shared.client.flushAll();
    await shared.client.sAdd("t:ok", ["5"]);
    await shared.client.sAdd("t:names", ["alice"]);
    await shared.client.sAdd("t:negative", ["-4"]);
    await shared.client.sAdd("t:huge", ["12345678901234567890"]);
    await withReader(shared.server.url, async (reader) => {
      for (const key of ["t:names", "t:negative", "t:huge"]) {
        await expect(reader.members([key])).rejects.toBeInstanceOf(UnexpectedReplyError);
        expect(await reader.members(["t:ok"])).toEqual([[5]]);
      }
    });
  });

  it("reconnects after Redis drops its connection", async () => {
    await shared.client.flushAll();
    await shared.client.sAdd("t:ok", ["9"]);
    await withReader(shared.server.url, async (reader) => {
      expect(await reader.sizes(["t:ok"])).toEqual([1]);
      await shared.client.sendCommand(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
      // The first call may still meet the dying socket; the reader never resends, so it may fail once.
      await reader.sizes(["t:ok"]).catch(() => null);
      expect(await reader.sizes(["t:ok"])).toEqual([1]);
    });
  });

  it("authenticates and selects the database named in the URL, and fails when the password is wrong", async () => {
    await shared.client.flushAll();
    await shared.client.sendCommand(["ACL", "SETUSER", "reader", "on", ">s3cret", "~*", "+@all"]);
    await shared.client.select(3);
    await shared.client.sAdd("t:db3", ["1", "2"]);
    await shared.client.select(0);
    const port = shared.server.port;
    try {
      await withReader(`redis://reader:s3cret@127.0.0.1:${port}/3`, async (reader) => {
        expect(await reader.sizes(["t:db3"])).toEqual([2]);
        expect((await reader.members(["t:db3"])).map(sorted)).toEqual([[1, 2]]);
      });
      await withReader(`redis://reader:wrong@127.0.0.1:${port}/3`, async (reader) => {
        const refused = await reader.sizes(["t:db3"]).catch((error: unknown) => error);
        expect((refused as Error).message).toMatch(/WRONGPASS/);
        // Not tried again at once: it would be refused again.
        await expect(reader.sizes(["t:db3"])).rejects.toBe(refused);
      });
    } finally {
      await shared.client.sendCommand(["ACL", "DELUSER", "reader"]);
      await shared.client.select(3);
      await shared.client.flushDb();
      await shared.client.select(0);
    }
  });

  it("fails at once when nothing listens, trying again 500 ms after a failed attempt, and after close", async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    await withReader(`redis://127.0.0.1:${closedPort}`, async (reader) => {
      const refused = await reader.sizes(["t:any"]).catch((error: unknown) => error);
      expect((refused as Error).message).toMatch(/ECONNREFUSED/);
      // Calls right after fail with the same failure, without a connection attempt of their own...
      await expect(reader.members(["t:any"])).rejects.toBe(refused);
      // ...and a new attempt is made once the reconnect interval (500 ms) has passed.
      await new Promise((resolve) => setTimeout(resolve, 600));
      const again = await reader.sizes(["t:any"]).catch((error: unknown) => error);
      expect(again).not.toBe(refused);
      expect((again as Error).message).toMatch(/ECONNREFUSED/);
    });
    const reader = new RespIdSetReader(respEndpointOf(shared.server.url)!, CONNECT_TIMEOUT_MS);
    await reader.close();
    await expect(reader.members(["t:any"])).rejects.toThrow(/closed/);
  });
});

/**
 * A reader of a fake server that, once `commands` commands have arrived, sends `replies` a byte at a
 * time: every reply split at every position.
 */
async function withByteAtATimeServer(replies: string, commands: number, test: (reader: RespIdSetReader) => Promise<void>): Promise<void> {
  const fake = net.createServer((socket) => {
    let asked = 0;
    socket.on("data", async (data) => {
      // Each command is an array header at the start of a line; no test key or member begins with "*".
      asked += (data.toString().match(/(^|\r\n)\*\d+\r\n/g) ?? []).length;
      if (asked < commands) return;
      for (const byte of Buffer.from(replies)) {
        socket.write(Buffer.from([byte]));
        await new Promise((resolve) => setImmediate(resolve));
      }
    });
  });
  await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
  const { port } = fake.address() as net.AddressInfo;
  try {
    await withReader(`redis://127.0.0.1:${port}`, test);
  } finally {
    await new Promise((resolve) => fake.close(resolve));
  }
}

describe("RespIdSetReader against a server that sends its replies a byte at a time", () => {
  it("parses every reply split at every position", async () => {
    // Replies to: SCARD, SMEMBERS (3 members), SMEMBERS (empty), SCARD.
    const replies = ":3\r\n*3\r\n$1\r\n7\r\n$3\r\n123\r\n$15\r\n900719925474099\r\n*0\r\n:0\r\n";
    await withByteAtATimeServer(replies, 4, async (reader) => {
      const [first, members, last] = await Promise.all([reader.sizes(["a"]), reader.members(["b", "c"]), reader.sizes(["d"])]);
      expect(first).toEqual([3]);
      expect(members).toEqual([[7, 123, 900719925474099], []]);
      expect(last).toEqual([0]);
    });
  });

  it("parses SSCAN pages split at every position, a cursor past 2^53 kept as its text", async () => {
    const replies = "*2\r\n$1\r\n0\r\n*2\r\n$1\r\n5\r\n$2\r\n42\r\n*2\r\n$20\r\n18446744073709551615\r\n*0\r\n";
    await withByteAtATimeServer(replies, 2, async (reader) => {
      expect(await reader.firstPages(["a", "b"], 10)).toEqual([
        { cursor: "0", ids: [5, 42] },
        { cursor: "18446744073709551615", ids: [] },
      ]);
    });
  });
});

describe("RespIdSetReader's SSCAN pages", () => {
  it("reads first pages as SSCAN through node-redis does: whole small sets, a part and a cursor of large ones", async () => {
    await shared.client.flushAll();
    await shared.client.sAdd("t:small", ["4", "2"]);
    await shared.client.sAdd("t:large", range(1, 50_000).map(String));
    await withReader(shared.server.url, async (reader) => {
      const [small, absent, large] = await reader.firstPages(["t:small", "t:absent", "t:large"], 1_000);
      expect(small).toEqual({ cursor: "0", ids: expect.arrayContaining([2, 4]) });
      expect(small!.ids).toHaveLength(2);
      expect(absent).toEqual({ cursor: "0", ids: [] });
      expect(large!.cursor).not.toBe("0");
      const [cursor, members] = await shared.client.sendCommand<[string, string[]]>(["SSCAN", "t:large", "0", "COUNT", "1000"]);
      expect(large).toEqual({ cursor, ids: members.map(Number) });
    });
  });
});
