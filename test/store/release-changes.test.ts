import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { releaseKey } from "../../src/store/redis/keys.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { commandsDuring } from "../support/redis-monitor.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";

/*
 * A release record replaces the user's whole release, but the redis engine sends only what changes
 * against the stored release (redis-write.ts, planReleases): a peer the release keeps is never
 * removed and added back, so a reader never misses it while the unit is applied. Short releases and
 * long ones are compared differently (a scan, a Set); both are covered.
 */

const user = (relationId: string) => ({ type: "user", relationId, addresses: [] });
const PEERS = Array.from({ length: 40 }, (_, k) => `p${k + 1}`);

describe("a release narrowed or widened", () => {
  let server: TestRedisServer;
  let store: GraphStore;
  beforeAll(async () => {
    server = await startRedisServer();
    store = await createRedisStore({ url: server.url });
    await ingestRecords(store, [
      ...["short", "long", ...PEERS].map(user),
      { type: "release", relationId: "short", peers: ["p1", "p2", "p3"] },
      { type: "release", relationId: "long", peers: PEERS.slice(0, 30) },
    ]);
  });
  afterAll(async () => {
    await store?.close();
    await server?.stop();
  });

  it("sends only the peers it loses and gains, never one it keeps", async () => {
    const ids = new Map(((await store.resolveRelationIds(["short", "long", ...PEERS])) as number[]).map((id, k) => [["short", "long", ...PEERS][k]!, id]));
    const seen = await commandsDuring(server.url, () =>
      ingestRecords(store, [
        { type: "release", relationId: "short", peers: ["p2", "p3", "p4"] },
        { type: "release", relationId: "long", peers: PEERS.slice(10, 40) },
      ]),
    );
    /** The peers the SREMs or SADDs of a user's release name. */
    const sent = (command: string, owner: string) => {
      const key = releaseKey(ids.get(owner)!);
      const names = new Map([...ids].map(([name, id]) => [String(id), name]));
      return seen
        .filter((line) => line.includes(`"${command}" "${key}"`))
        .flatMap((line) => [...line.split(`"${key}"`)[1]!.matchAll(/"(\d+)"/g)].map((match) => names.get(match[1]!)))
        .sort();
    };
    expect(sent("SREM", "short")).toEqual(["p1"]);
    expect(sent("SADD", "short")).toEqual(["p4"]);
    expect(sent("SREM", "long")).toEqual(PEERS.slice(0, 10).sort());
    expect(sent("SADD", "long")).toEqual(PEERS.slice(30, 40).sort());
  });
});
