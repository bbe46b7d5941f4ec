import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashApiKey } from "../../src/auth/api-keys.js";
import { runKeys } from "../../src/cli/commands/keys.js";
import { createStore } from "../../src/store/index.js";
import { captureIo } from "../support/cli-io.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";

/** `relgraph keys` against a real redis-server: a key's own rate limit is stored with it. */

describe("relgraph keys", () => {
  let redis: TestRedisServer;
  let savedUrl: string | undefined;
  beforeAll(async () => {
    redis = await startRedisServer();
    savedUrl = process.env.REDIS_URL;
    process.env.REDIS_URL = redis.url;
  });
  afterAll(async () => {
    if (savedUrl === undefined) delete process.env.REDIS_URL;
    else process.env.REDIS_URL = savedUrl;
    await redis?.stop();
  });

  it("create --rate N stores the key's own limit, and list shows it", async () => {
    const created = captureIo();
    expect(await runKeys(["create", "--label", "partner", "--rate", "25"], created)).toBe(0);
    const key = created.out().trim();
    expect(created.err()).toContain("25 requests per rate-limit window");
    const plain = captureIo();
    expect(await runKeys(["create"], plain)).toBe(0);

    const store = await createStore({ redisUrl: redis.url, redisClusterNodes: [] }, { readCaches: false });
    try {
      expect((await store.apiKeyByHash(hashApiKey(key)))?.rateLimit).toBe(25);
      expect((await store.apiKeyByHash(hashApiKey(plain.out().trim())))?.rateLimit).toBeUndefined();
    } finally {
      await store.close();
    }
    const listed = captureIo();
    expect(await runKeys(["list"], listed)).toBe(0);
    const lines = listed.out().replace(/\n$/, "").split("\n").map((line) => line.split("\t"));
    expect(lines.find((fields) => fields.at(-1) === "partner")?.[3]).toBe("25");
    expect(lines.find((fields) => fields.at(-1) === "")?.[3]).toBe("default");
  });

  it("refuses a --rate that is not a whole number, and --rate with another action", async () => {
    for (const argv of [["create", "--rate", "-1"], ["create", "--rate", "1.5"], ["create", "--rate", "lots"], ["list", "--rate", "3"]]) {
      const io = captureIo();
      expect(await runKeys(argv, io), argv.join(" ")).toBe(2);
    }
  });
});
