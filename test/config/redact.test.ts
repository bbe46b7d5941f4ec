import { describe, expect, it } from "vitest";
import { loadConfig, redactConfig } from "../../src/config/config.js";
import { redactSeed, redactUrl, redactUrlsIn } from "../../src/config/redact.js";

/** No credential of a URL reaches a log: a logged URL keeps its scheme, host and port only. */
describe("URL redaction", () => {
  it.each([
    ["redis://user:s3cret@redis.internal:6379/0", "redis://redis.internal:6379"],
    ["redis://:s3cret@redis.internal:6379", "redis://redis.internal:6379"],
    ["redis://s3cret@redis.internal:6379", "redis://redis.internal:6379"],
    ["rediss://redis.internal:6380/2", "rediss://redis.internal:6380"],
    ["https://mainnet.infura.io/v3/0123456789abcdef0123456789abcdef", "https://mainnet.infura.io"],
    ["https://rpc.example/v2/short", "https://rpc.example"],
    ["https://rpc.example/?apikey=s3cret&chain=1#s3cret", "https://rpc.example"],
    ["http://[::1]:8545/key", "http://[::1]:8545"],
    ["not a url s3cret", "[redacted]"],
  ])("%s", (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });

  it.each([
    ["127.0.0.1:7000", "127.0.0.1:7000"],
    ["s3cret@redis.internal:7000", "redis.internal:7000"],
    ["redis.internal:7000/s3cret?k=s3cret", "redis.internal:7000"],
    ["not a seed s3cret", "[redacted]"],
  ])("seed %s", (seed, expected) => {
    expect(redactSeed(seed)).toBe(expected);
  });

  it("redacts URLs inside free text, as error messages quote them", () => {
    const text = 'request failed (info={ requestUrl: "http://u:s3cret@127.0.0.1:9/v3/ABCDEFGHIJKLMNOPQRST?k=s3cret" })';
    expect(redactUrlsIn(text)).not.toMatch(/s3cret|ABCDEFGHIJKLMNOPQRST/);
    expect(redactUrlsIn(text)).toContain("127.0.0.1:9");
  });

  it("keeps a stack's file:// frames readable, and still redacts a URL beside them", () => {
    const stack = [
      "Error: connect ECONNREFUSED redis://user:s3cret@127.0.0.1:9",
      "    at RedisConnection.open (file:///srv/relgraph/dist/src/store/redis/resp/socket.js:42:17)",
      "    at file:///srv/relgraph/dist/src/cli/serve.js:88:5",
    ].join("\n");
    const redacted = redactUrlsIn(stack);
    expect(redacted).not.toContain("s3cret");
    expect(redacted).toContain("(file:///srv/relgraph/dist/src/store/redis/resp/socket.js:42:17)");
    expect(redacted).toContain("at file:///srv/relgraph/dist/src/cli/serve.js:88:5");
  });

  it("leaves no credential of REDIS_URL or ETH_RPC_URL in the configuration that serve logs", () => {
    const config = loadConfig({
      REDIS_URL: "redis://default:redis-s3cret@redis.internal:6379/0",
      ETH_RPC_URL: "https://eth-mainnet.g.alchemy.com/v2/alchemy-key-0123456789?token=query-s3cret",
      API_KEYS: "api-s3cret",
      CURSOR_KEY: "c0ffee5ec3e7c0ffee5ec3e7c0ffee5ec3e7c0ffee5ec3e7c0ffee5ec3e7abcd",
    });
    const logged = JSON.stringify(redactConfig(config));
    expect(logged).not.toMatch(/s3cret|alchemy-key|c0ffee|192/);
    expect(logged).toContain('"redisUrl":"redis://redis.internal:6379"');
    expect(logged).toContain("eth-mainnet.g.alchemy.com");
  });
});
