import { describe, expect, it } from "vitest";
import { RedisReplyError, respEndpointOf } from "../../../../src/store/redis/resp/socket.js";
import { encodeCommands } from "../../../../src/store/redis/resp/encoder.js";
import { RespWriter } from "../../../../src/store/redis/resp/bulk-writer.js";
import { connectRedis } from "../../../../src/store/redis/connection.js";
import { redisForFile } from "../../../support/redis-servers.js";

const CONNECT_TIMEOUT_MS = 2_000;

const shared = redisForFile();

async function withWriter(url: string, test: (writer: RespWriter) => Promise<void>): Promise<void> {
  const writer = new RespWriter(respEndpointOf(url)!, CONNECT_TIMEOUT_MS);
  try {
    await test(writer);
  } finally {
    await writer.reset();
  }
}

describe("RespWriter against a real redis-server", () => {
  it("applies every command, in order, whatever its reply type", async () => {
    await shared.client.flushAll();
    await withWriter(shared.server.url, async (writer) => {
      const members = Array.from({ length: 5_000 }, (_, i) => `m${i}`);
      await writer.write([
        ["SADD", "w:set", ...members], // integer
        ["SET", "w:text", "é ✓ multi-byte"], // +OK
        ["GET", "w:text"], // bulk string
        ["GET", "w:missing"], // null bulk
        ["SMEMBERS", "w:set"], // array of 5,000 bulk strings: more than one socket read
        ["SREM", "w:set", "m0", "m1"],
        ["HSET", "w:hash", "f", "v"],
        ["XADD", "w:stream", "*", "k", "v"],
        ["XRANGE", "w:stream", "-", "+"], // nested arrays
        ["DEL", "w:text"],
      ]);
    });
    expect(await shared.client.sCard("w:set")).toBe(4_998);
    expect(await shared.client.exists("w:text")).toBe(0);
    expect(await shared.client.hGet("w:hash", "f")).toBe("v");
  });

  it("rejects with Redis's error reply, and the next write still lands", async () => {
    await shared.client.flushAll();
    await shared.client.set("w:string", "x");
    await withWriter(shared.server.url, async (writer) => {
      const failed = writer.write([
        ["SADD", "w:ok", "a"],
        ["SADD", "w:string", "b"],
      ]);
      await expect(failed).rejects.toBeInstanceOf(RedisReplyError);
      await expect(failed).rejects.toThrow(/WRONGTYPE/);
      await writer.write([["SADD", "w:after", "c"]]);
    });
    expect(await shared.client.sMembers("w:ok")).toEqual(["a"]);
    expect(await shared.client.sMembers("w:after")).toEqual(["c"]);
  });

  it("authenticates and selects the database of its URL", async () => {
    await shared.client.flushAll();
    await shared.client.configSet("requirepass", "s3cret");
    try {
      const url = shared.server.url.replace("redis://", "redis://:s3cret@") + "/3";
      await withWriter(url, (writer) => writer.write([["SET", "w:db3", "yes"]]));
      await shared.client.auth({ password: "s3cret" });
      await shared.client.select(3);
      expect(await shared.client.get("w:db3")).toBe("yes");
      await shared.client.select(0);
    } finally {
      await shared.client.configSet("requirepass", "");
    }
  });

  it("sends commands already encoded as they are, and rejects with Redis's error reply", async () => {
    await shared.client.flushAll();
    await shared.client.set("w:string", "x");
    await withWriter(shared.server.url, async (writer) => {
      await writer.writeEncoded({ bytes: Buffer.from(encodeCommands([["SADD", "w:enc", "a", "é"], ["HSET", "w:h", "f", "✓"]])), count: 2 });
      const failed = writer.writeEncoded({ bytes: Buffer.from(encodeCommands([["SADD", "w:enc", "b"], ["SADD", "w:string", "c"]])), count: 2 });
      await expect(failed).rejects.toThrow(/WRONGTYPE/);
      await writer.writeEncoded({ bytes: Buffer.from(encodeCommands([["SADD", "w:after", "d"]])), count: 1 });
    });
    expect((await shared.client.sMembers("w:enc")).sort()).toEqual(["a", "b", "é"]);
    expect(await shared.client.hGet("w:h", "f")).toBe("✓");
    expect(await shared.client.sMembers("w:after")).toEqual(["d"]);
  });

  it("sends encoded bytes after the commands enqueued before them", async () => {
    await shared.client.flushAll();
    await withWriter(shared.server.url, async (writer) => {
      // Not awaited: the text waits for the next turn, the bytes would go at once if nothing kept the order.
      const first = writer.write([["RPUSH", "w:order", "1"], ["RPUSH", "w:order", "2"]]);
      const second = writer.writeEncoded({ bytes: Buffer.from(encodeCommands([["RPUSH", "w:order", "3"]])), count: 1 });
      await Promise.all([first, second]);
    });
    expect(await shared.client.lRange("w:order", 0, -1)).toEqual(["1", "2", "3"]);
  });

  it("fails, rather than hangs, when Redis is not there", async () => {
    const gone = new RespWriter({ host: "127.0.0.1", port: 1, username: "", password: "", db: 0 }, CONNECT_TIMEOUT_MS);
    await expect(gone.write([["SET", "k", "v"]])).rejects.toThrow();
    await gone.reset();
  });
});

// Through the engine's own writer (FAST_PATHS=on) and through node-redis (off).
describe.each([
  { name: "the engine's own RespWriter", fastPaths: true },
  { name: "node-redis", fastPaths: false },
])("RedisConnection.writeAll on standalone Redis, through $name", ({ fastPaths }) => {
  it("writes more arguments than one window holds, every one of them", async () => {
    await shared.client.flushAll();
    const redis = await connectRedis({ url: shared.server.url }, fastPaths);
    try {
      // 400 commands of 1,000 members: 400,000 arguments, more than one window of the writer.
      const commands = Array.from({ length: 400 }, (_, k) => ["SADD", `w:big:${k % 7}`, ...Array.from({ length: 1_000 }, (_, i) => `${k}-${i}`)]);
      await redis.writeAll(commands);
    } finally {
      await redis.close();
    }
    const sizes = await Promise.all(Array.from({ length: 7 }, (_, k) => shared.client.sCard(`w:big:${k}`)));
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(400_000);
  });

  it("takes encoded windows only with a writer of its own", async () => {
    const redis = await connectRedis({ url: shared.server.url }, fastPaths);
    try {
      expect(redis.writeEncoded === null).toBe(!fastPaths);
    } finally {
      await redis.close();
    }
  });
});
