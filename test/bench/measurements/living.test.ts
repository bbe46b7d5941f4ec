import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ingestRecords } from "../../../src/ingest/ingest.js";
import { createRedisStore } from "../../../src/store/redis/redis-store.js";
import type { GraphStore } from "../../../src/store/store.js";
import { startRedisServer, type TestRedisServer } from "../../support/redis-servers.js";

/*
 * The living-graph measurements, small, end to end: real `relgraph ingest`, `relgraph follow` and two
 * `relgraph serve` processes on a private redis-server, real SIWE signatures and decryption. Checks
 * that every measurement produces its figures with nothing rejected and no trial lost, not how fast.
 * Loaded from dist/, as `npm run bench` runs it, since it starts dist/src/cli/main.js beside itself.
 */

type Living = typeof import("../../../bench/measurements/living.js");
type Processes = typeof import("../../../bench/processes/processes.js");
type Siwe = typeof import("../../../bench/workload/siwe-auth.js");

describe("measureLiving", () => {
  let server: TestRedisServer;
  let store: GraphStore;
  let living: Living;
  let processes: Processes;
  let siwe: Siwe;
  let work: string;
  const users = 200;
  const wallet = new Wallet(`0x${"42".repeat(32)}`);
  beforeAll(async () => {
    const dist = (file: string) => new URL(`../../../dist/bench/${file}`, import.meta.url).href;
    living = (await import(dist("measurements/living.js"))) as Living;
    processes = (await import(dist("processes/processes.js"))) as Processes;
    siwe = (await import(dist("workload/siwe-auth.js"))) as Siwe;
    work = await mkdtemp(path.join(os.tmpdir(), "relgraph-living-test-"));
    server = await startRedisServer();
    store = await createRedisStore({ url: server.url });
    await ingestRecords(store, [
      ...Array.from({ length: users }, (_, i) => ({ type: "user", relationId: `u${i + 1}`, addresses: [`0x${(i + 1).toString(16).padStart(40, "0")}`] })),
      { type: "user", relationId: "bench-wallet-1", addresses: [wallet.address.toLowerCase()] },
      ...Array.from({ length: 5 }, (_, i) => ({ type: "friend", a: "bench-wallet-1", b: `u${i + 1}` })),
      ...Array.from({ length: users - 1 }, (_, i) => ({ type: "friend", a: `u${i + 1}`, b: `u${i + 2}` })),
      { type: "release", relationId: "bench-wallet-1", peers: "*" },
    ]);
  });
  afterAll(async () => {
    await processes?.stopAll();
    await store?.close();
    await server?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("measures change throughput, reads under changes and withdrawal latency", async () => {
    const apiKey = "living-test-key";
    const main = new URL("../../../dist/src/cli/main.js", import.meta.url).pathname;
    const serve = async () => {
      const port = await processes.freePort();
      const child = await processes.start(process.execPath, [main, "serve"], {
        // One user's recommendations are read at saturation here, where the bench spreads its reads over
        // thousands; once the churn's writes make its answer longer than a page, every read opens a
        // cursor chain, and the default cap per user (16) would refuse most of them with 10110; so would
        // the bench's one key's share of the pool, as the bench itself lifts it (bench/bench.ts).
        env: {
          REDIS_URL: server.url,
          API_KEYS: apiKey,
          DEV_KEY_NETWORK: "1",
          PORT: String(port),
          HOST: "127.0.0.1",
          LOG_LEVEL: "warn",
          RECOMMEND_SNAPSHOTS_PER_USER: "1000000",
          RECOMMEND_SNAPSHOTS_PER_KEY: "50000",
        },
        ready: /relgraph listening on/,
      });
      return { port, stop: () => child.stop() };
    };
    const first = await serve();
    const [authorization] = await siwe.signAuthorizations([wallet], "relationshipGraph");
    const result = await living.measureLiving({
      ids: ["ingest-changes", "feed-changes", "mf-mm-live", "rec-live", "withdraw"],
      work,
      redisUrl: server.url,
      redisPid: server.pid,
      users,
      seed: "test",
      changeRecords: 3_000,
      durationSeconds: 0.3,
      warmupSeconds: 0.1,
      connections: 4,
      relgraph: { port: first.port, apiKey },
      reads: {
        "mf-mm-live": [`/api/v1/mutualFriend?address=0x${"3".padStart(40, "0")},0x${"5".padStart(40, "0")}&limit=20`],
        "rec-live": [`/api/v1/multi-dimensional-recommendation?address=0x${"7".padStart(40, "0")}&limit=20`],
      },
      wallets: [{ relationId: "bench-wallet-1", address: wallet.address.toLowerCase(), authorization: authorization! }],
      trials: 1,
      startSecondServer: serve,
      log: () => {},
    });
    await first.stop();
    expect(result.problems).toEqual([]);
    expect(result.ingest).toMatchObject({ records: 3_000 });
    expect(result.feed).toMatchObject({ records: 3_000, rejected: 0 });
    expect(result.underChanges.map((u) => u.id)).toEqual(["mf-mm-live", "rec-live"]);
    for (const u of result.underChanges) {
      expect(u).toMatchObject({ errors: 0 });
      expect(u.readOnlyRps).toBeGreaterThan(0);
      expect(u.underChangesRps).toBeGreaterThan(0);
      expect(u.offeredChangesPerSecond).toBeGreaterThan(0);
    }
    expect(result.withdrawal).toMatchObject({ trials: 1, failures: [] });
    expect(result.withdrawal!.latenciesMs).toHaveLength(1);
  }, 120_000);
});
