import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ingestRecords } from "../../../src/ingest/ingest.js";
import { createRedisStore } from "../../../src/store/redis/redis-store.js";
import { startRedisServer, type TestRedisServer } from "../../support/redis-servers.js";

/*
 * Issue 35's bench hook, small: on a real Redis, with real key-node processes and a real relgraph
 * server, every figure comes back measured, the paged graph is read whole, and no request fails.
 * Loaded from dist/, as `npm run bench` runs it, since it starts dist/src/cli/main.js. No timing is
 * asserted: the figures are whatever this machine gives.
 */

type PrivateBench = typeof import("../../../bench/measurements/private.js");

describe("measurePrivate", () => {
  let server: TestRedisServer;
  let work: string;
  let bench: PrivateBench;
  const wallets = Array.from({ length: 3 }, (_, i) => {
    const wallet = new Wallet(`0x${createHash("sha256").update(`private-bench-test-${i}`).digest("hex")}`);
    return { relationId: `w${i + 1}`, address: wallet.address.toLowerCase(), wallet };
  });

  beforeAll(async () => {
    bench = (await import(new URL("../../../dist/bench/measurements/private.js", import.meta.url).href)) as PrivateBench;
    server = await startRedisServer();
    work = await mkdtemp(join(tmpdir(), "relgraph-private-bench-"));
    const store = await createRedisStore({ url: server.url });
    await ingestRecords(store, [
      ...Array.from({ length: bench.GRAPH_FRIENDS }, (_, i) => ({ type: "user", relationId: `u${i + 1}`, name: `U${i + 1}`, avatar: "", addresses: [`0x${(i + 1).toString(16).padStart(40, "0")}`] })),
      ...wallets.map((w) => ({ type: "user", relationId: w.relationId, name: w.relationId, avatar: "", addresses: [w.address] })),
      ...wallets.flatMap((w) => [{ type: "friend", a: w.relationId, b: "u1" }, { type: "friend", a: w.relationId, b: "u2" }, { type: "release", relationId: w.relationId, peers: "*" }]),
      { type: "friend", a: "u1", b: "u3" },
      { type: "friend", a: "u2", b: "u3" },
    ]);
    await store.close();
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("measures every figure of the issue's table in one run, reading the whole paged graph without an error", async () => {
    const result = await bench.measurePrivate({
      redisUrl: server.url,
      work,
      wallets,
      friendPool: Array.from({ length: bench.GRAPH_FRIENDS }, (_, i) => `u${i + 1}`),
      mutualFriendPaths: [`/api/v1/mutualFriend?address=${"0x" + "1".padStart(40, "0")},${"0x" + "2".padStart(40, "0")}&limit=20`],
      durationSeconds: 0.5,
      shares: 20,
      chromium: false,
      log: () => undefined,
    });
    for (const figure of [result.mutualFriend, result.profileReused, result.graphReused, result.profileFresh]) {
      expect(figure.rps).toBeGreaterThan(0);
      expect(figure.errors).toBe(0);
      expect(figure.serverCpuUs).toBeGreaterThan(0);
    }
    expect(result.freshCeiling.encryptionMs).toBeGreaterThan(0);
    expect(result.freshCeiling.rps).toBeCloseTo((result.freshCeiling.cores * 1000) / result.freshCeiling.encryptionMs);
    expect(result.dappPages).toMatchObject({ pages: bench.GRAPH_FRIENDS / bench.GRAPH_PAGE, entries: bench.GRAPH_FRIENDS });
    expect(result.dappFirstProfileMs.trials).toBe(wallets.length);
    expect(result.keyNodeCpuPerShareMs.shares).toBe(20);
    expect(Number.isFinite(result.keyNodeCpuPerShareMs.verifiedAuthorization)).toBe(true);
    expect(result.chromiumFirstProfileMs).toBeNull();
    const table = bench.renderPrivate(result);
    expect(table).toContain("key-node CPU per share");
    expect(table).toContain("ceiling for fresh authorizations");
    expect(table.split("\n").filter((line) => line.startsWith("| ")).length).toBe(10);
  }, 180_000);
});
