import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { respConnections } from "../../src/fast/store-connections.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import type { OwnConnections } from "../../src/store/redis/own-connections.js";
import type { GraphStore } from "../../src/store/store.js";
import { commandsDuring } from "../support/redis-monitor.js";
import { startRedisCluster, startRedisServer, type TestRedisCluster, type TestRedisServer } from "../support/redis-servers.js";

/*
 * A friend delete that cancels an upsert of the same load is looked up before it is sent
 * (redis-write.ts, storedFriendDeletes): when the pair was not stored, nothing is written for it;
 * when it was, it is removed as any delete is. Every other delete is sent unread.
 */

const user = (relationId: string) => ({ type: "user", relationId, addresses: [] });
const friend = (a: string, b: string, description = "") => ({ type: "friend", a, b, description });
const unfriend = (a: string, b: string) => ({ op: "delete", type: "friend", a, b });

const STORED = [...["s1", "s2", "s3", "s4", "s5", "s6"].map(user), friend("s1", "s2", "met at ETHDenver"), friend("s3", "s4")];
const CHANGES = [
  // Stored, upserted again, then deleted: must go.
  friend("s1", "s2", "again"),
  unfriend("s2", "s1"),
  // Never stored, upserted, then deleted: nothing to write.
  friend("s5", "s6", "brief"),
  unfriend("s5", "s6"),
  // Stored, deleted without an upsert: sent unread.
  unfriend("s4", "s3"),
];

async function friendsOf(store: GraphStore, relationIds: string[]): Promise<Record<string, { friends: string[]; descriptions: string[] }>> {
  const ids = await store.resolveRelationIds(relationIds);
  const names = new Map<number, string>();
  ids.forEach((id, i) => names.set(id!, relationIds[i]!));
  const result: Record<string, { friends: string[]; descriptions: string[] }> = {};
  for (const [i, id] of ids.entries()) {
    const friends = await store.userSet("friends", id!);
    const descriptions = await store.friendDescriptions(id!, ids as number[]);
    result[relationIds[i]!] = { friends: friends.map((peer) => names.get(peer) ?? String(peer)).sort(), descriptions: descriptions.filter(Boolean) };
  }
  return result;
}

const EXPECTED = {
  s1: { friends: [], descriptions: [] },
  s2: { friends: [], descriptions: [] },
  s3: { friends: [], descriptions: [] },
  s4: { friends: [], descriptions: [] },
  s5: { friends: [], descriptions: [] },
  s6: { friends: [], descriptions: [] },
};

describe.each<{ name: string; own?: OwnConnections }>([
  { name: "through node-redis" },
  { name: "through the speed layer's own connections", own: respConnections },
])("friend deletes that cancel an upsert of the load, on a server, $name", ({ own }) => {
  let server: TestRedisServer;
  let store: GraphStore;
  beforeAll(async () => {
    server = await startRedisServer();
    store = await createRedisStore({ url: server.url }, { ownConnections: own });
    await ingestRecords(store, STORED);
  });
  afterAll(async () => {
    await store?.close();
    await server?.stop();
  });

  it("write nothing for a pair that was not stored, and remove a pair that was", async () => {
    const [s5, s6] = (await store.resolveRelationIds(["s5", "s6"])) as [number, number];
    const seen = await commandsDuring(server.url, () => ingestRecords(store, CHANGES));
    const command = (line: string) => /"([A-Z]+)"/.exec(line)?.[1];
    const naming = (id: number) => seen.filter((line) => new RegExp(`:${id}" `).test(line) || new RegExp(` "${id}"`).test(line));
    // The s5–s6 pair is looked up once, and no write names it.
    const writes = new Set(["SREM", "HDEL", "SADD", "HSET"]);
    expect(naming(s5).filter((line) => command(line) === "SISMEMBER")).toHaveLength(1);
    expect([...naming(s5), ...naming(s6)].filter((line) => writes.has(command(line)!))).toEqual([]);
    expect(await friendsOf(store, ["s1", "s2", "s3", "s4", "s5", "s6"])).toEqual(EXPECTED);
  });
});

describe("friend deletes that cancel an upsert of the load, on a cluster", () => {
  let cluster: TestRedisCluster;
  let store: GraphStore;
  beforeAll(async () => {
    cluster = await startRedisCluster();
    store = await createRedisStore({ clusterNodes: cluster.nodes });
    await ingestRecords(store, STORED);
  });
  afterAll(async () => {
    await store?.close();
    await cluster?.stop();
  });

  it("leave the pairs as the load says, whether or not they were stored", async () => {
    await ingestRecords(store, CHANGES);
    expect(await friendsOf(store, ["s1", "s2", "s3", "s4", "s5", "s6"])).toEqual(EXPECTED);
  });
});
