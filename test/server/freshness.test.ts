import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IngestRecord } from "../../src/ingest/format.js";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { createStore, type StoreConfig } from "../../src/store/index.js";
import type { GraphStore } from "../../src/store/store.js";
import { startRedisCluster, startRedisServer } from "../support/redis-servers.js";
import { startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { relationIds, walkRestChain, type ServedUser } from "./chains.js";

/*
 * Freshness across server instances: two relgraph servers share one Redis (or Cluster), each with
 * its own caches; a third store writes, as `relgraph ingest` does from another process. Whatever
 * it changes, the other servers' next answers show without a restart. The servers are polled until
 * they do, within a generous bound: the contract's 1 s p99 is measured by the bench, not here.
 */

const MUTUAL_FRIEND = "/api/v1/mutualFriend";
const address = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
const userLine = (relationId: string, n: number, name = `name of ${relationId}`): IngestRecord => ({
  type: "user",
  relationId,
  name,
  avatar: "",
  addresses: [address(n)],
  social: null,
  game: null,
});
const friend = (a: string, b: string): IngestRecord => ({ type: "friend", a, b, description: "" });

/** Two hubs with 150 friends in common: longer than a page, so the servers cache the intersection. */
const members = Array.from({ length: 150 }, (_, i) => `m${String(i).padStart(3, "0")}`);
const records: IngestRecord[] = [
  userLine("h1", 1),
  userLine("h2", 2),
  ...members.map((m, i) => userLine(m, 100 + i)),
  ...members.flatMap((m) => [friend("h1", m), friend("h2", m)]),
];

const mutualFriends = (server: RunningRelgraph) => walkRestChain(server.url, MUTUAL_FRIEND, { address: `${address(1)},${address(2)}` }, 100);

/** Polls `server` until its mutual friends satisfy `done`; fails after a generous bound. */
async function eventually(server: RunningRelgraph, done: (items: ServedUser[]) => boolean): Promise<ServedUser[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const items = await mutualFriends(server);
    if (done(items)) return items;
    if (Date.now() > deadline) throw new Error(`${server.url} still serves ${items.length} mutual friends, unchanged, after 15 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const backends: { name: string; start: () => Promise<{ config: StoreConfig; stop(): Promise<void> }> }[] = [
  {
    name: "one redis-server",
    start: async () => {
      const redis = await startRedisServer();
      return { config: { redisUrl: redis.url, redisClusterNodes: [] }, stop: redis.stop };
    },
  },
  {
    name: "one 3-master Redis Cluster",
    start: async () => {
      const cluster = await startRedisCluster();
      return { config: { redisUrl: null, redisClusterNodes: cluster.nodes }, stop: cluster.stop };
    },
  },
];

describe.each(backends)("two server instances on $name", ({ start }) => {
  let backend: Awaited<ReturnType<typeof start>>;
  let writer: GraphStore;
  let servers: RunningRelgraph[] = [];

  beforeAll(async () => {
    backend = await start();
    writer = await createStore(backend.config);
    await ingestRecords(writer, records);
    servers = await Promise.all([0, 1].map(async () => startRelgraph({ store: await createStore(backend.config) })));
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
    await writer?.close();
    await backend?.stop();
  });

  it("each show a change written by another process on their next queries, without a restart", async () => {
    for (const server of servers) {
      // Twice: the second answer comes from the caches the first filled.
      for (let i = 0; i < 2; i++) expect(relationIds(await mutualFriends(server))).toEqual(members);
    }

    // A new mutual friend: the hubs' friend sets, and the intersection cached over them, change.
    await ingestRecords(writer, [userLine("m150", 250), friend("h1", "m150"), friend("h2", "m150")]);
    for (const server of servers) {
      const items = await eventually(server, (served) => served.length === 151);
      expect(relationIds(items)).toEqual([...members, "m150"]);
    }

    // A renamed mutual friend: only the user's record changes.
    await ingestRecords(writer, [userLine("m000", 100, "Renamed")]);
    for (const server of servers) {
      const items = await eventually(server, (served) => served[0]?.relationId.name === "Renamed");
      expect(items.map((item) => item.relationId.name).slice(0, 2)).toEqual(["Renamed", "name of m001"]);
    }
  });
});
