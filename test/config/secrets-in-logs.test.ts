import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveLog, startRelgraphProcess } from "../support/relgraph-process.js";
import { startRedisCluster, startRedisServer, type TestRedisCluster, type TestRedisServer } from "../support/redis-servers.js";

/*
 * No secret reaches a log, wherever a URL carries it: every URL-valued setting (ETH_RPC_URL,
 * REDIS_URL, the cluster seeds, the key nodes' URLs) is given a token in its userinfo, its path and
 * its query, the real `relgraph serve` (or `keygen`) runs, and its whole output is searched for the
 * tokens. A start that is refused must not quote them either.
 */

/** A token no log may hold, distinct per setting and place so a failure says which leaked. */
const token = (setting: string, place: string) => `tok${place}${setting.replace(/[^a-z]/gi, "").toLowerCase()}x9q`;
const PLACES = ["userinfo", "path", "query"] as const;

function expectNoToken(output: string[], setting: string): void {
  const log = output.join("\n");
  for (const place of PLACES) expect(log, `${setting}'s ${place} token in:\n${log}`).not.toContain(token(setting, place));
}

let redis: TestRedisServer;
let cluster: TestRedisCluster;
const dirs: string[] = [];

beforeAll(async () => {
  // One after the other: a failed start must not leave the other running, unstopped.
  redis = await startRedisServer();
  cluster = await startRedisCluster();
  // The Redis password is the userinfo token, so a serve given it really connects.
  const client = createClient({ url: redis.url });
  await client.connect();
  await client.configSet("requirepass", token("REDIS_URL", "userinfo"));
  await client.close();
});
afterAll(async () => {
  await Promise.all([redis?.stop(), cluster?.stop()]);
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

// Everything serve logs at startup, the configuration included.
const LOGGING = { LOG_LEVEL: "info", DEV_KEY_NETWORK: "1" };

describe("no secret of a URL-valued setting in any log", () => {
  it("ETH_RPC_URL: the configuration shows scheme, host and port only", async () => {
    const setting = "ETH_RPC_URL";
    const url = `https://user:${token(setting, "userinfo")}@rpc.example:8545/v2/${token(setting, "path")}?apikey=${token(setting, "query")}`;
    const { listened, output } = await serveLog({ ...LOGGING, ETH_RPC_URL: url });
    expect(listened, output.join("\n")).toBe(true);
    expectNoToken(output, setting);
    expect(output.join("\n")).toContain('"ethRpcUrl":"https://rpc.example:8545"');
  });

  it("REDIS_URL: a serve on it logs scheme, host and port only", async () => {
    const setting = "REDIS_URL";
    const url = `redis://default:${token(setting, "userinfo")}@127.0.0.1:${redis.port}`;
    const started = await serveLog({ ...LOGGING, REDIS_URL: url });
    expect(started.listened, started.output.join("\n")).toBe(true);
    expectNoToken(started.output, setting);
    expect(started.output.join("\n")).toContain(`"redisUrl":"redis://127.0.0.1:${redis.port}"`);
    // A path and a query Redis cannot use: whether serve starts or refuses, it does not quote them.
    for (const odd of [`${url}/${token(setting, "path")}`, `${url}/0?token=${token(setting, "query")}`]) {
      const { output } = await serveLog({ ...LOGGING, REDIS_URL: odd });
      expectNoToken(output, setting);
    }
  });

  it("REDIS_CLUSTER_NODES: seeds carrying a user, a path or a query are refused without being quoted, and good seeds log as host:port", async () => {
    const setting = "REDIS_CLUSTER_NODES";
    const seed = cluster.nodes[0]!;
    const seeds = [`${token(setting, "userinfo")}@${seed}`, `${seed}/${token(setting, "path")}`, `${seed}?token=${token(setting, "query")}`];
    for (const odd of seeds) {
      const { listened, output } = await serveLog({ ...LOGGING, REDIS_CLUSTER_NODES: [odd, ...cluster.nodes.slice(1)].join(",") });
      expectNoToken(output, setting);
      expect(listened, output.join("\n")).toBe(false);
      expect(output.join("\n")).toMatch(/REDIS_CLUSTER_NODES: seed 1 \(127\.0\.0\.1:\d+\) is not host:port/);
    }
    // REDIS_URL beside a cluster is not used, but logged: still without its secrets.
    const unused = `redis://u:${token("REDIS_URL", "userinfo")}@redis.example:6380/${token("REDIS_URL", "path")}?x=${token("REDIS_URL", "query")}`;
    const { listened, output } = await serveLog({ ...LOGGING, REDIS_CLUSTER_NODES: cluster.nodes.join(","), REDIS_URL: unused });
    expect(listened, output.join("\n")).toBe(true);
    expectNoToken(output, "REDIS_URL");
    expect(output.join("\n")).toContain(`"redisClusterNodes":${JSON.stringify(cluster.nodes)}`);
  });

  it("key-node URLs: keygen and a serve on the dealt network show scheme, host and port only", async () => {
    const setting = "key node";
    const dir = await mkdtemp(join(tmpdir(), "relgraph-secrets-"));
    dirs.push(dir);
    const urls = [
      `https://op:${token(setting, "userinfo")}@node1.example:7401`,
      `https://node2.example:7402/${token(setting, "path")}`,
      `https://node3.example:7403/?key=${token(setting, "query")}`,
    ];
    const keygen = startRelgraphProcess(["keygen", "--threshold", "2", "--nodes", "3", "--out", dir, ...urls.flatMap((url) => ["--url", url])]);
    expect(await keygen.exited, keygen.output.join("\n")).toBe(0);
    expectNoToken(keygen.output, setting);
    expect(keygen.output.join("\n")).toContain("https://node2.example:7402");
    // The file itself keeps the URLs whole: clients need them.
    expect(await readFile(join(dir, "key-network.json"), "utf8")).toContain(token(setting, "path"));
    const { listened, output } = await serveLog({ ...LOGGING, KEY_NETWORK_FILE: join(dir, "key-network.json") });
    expect(listened, output.join("\n")).toBe(true);
    expectNoToken(output, setting);
  });
});
