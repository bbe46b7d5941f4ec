import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { commandsDuring } from "../support/redis-monitor.js";
import { startRedisCluster, startRedisServer, type TestRedisCluster, type TestRedisServer } from "../support/redis-servers.js";

/*
 * A friend or follow delete that cancels an upsert of the same load is looked up before it is sent
 * (redis-write.ts, storedEdgeDeletes): when the edge was not stored, nothing is written for it;
 * when it was, it is removed as any delete is. Every other delete is sent unread.
 */

const user = (relationId: string) => ({ type: "user", relationId, addresses: [] });
const friend = (a: string, b: string, description = "") => ({ type: "friend", a, b, description });
const unfriend = (a: string, b: string) => ({ op: "delete", type: "friend", a, b });
const follow = (from: string, to: string) => ({ type: "follow", from, to });
const unfollow = (from: string, to: string) => ({ op: "delete", type: "follow", from, to });

const STORED = [
  ...["s1", "s2", "s3", "s4", "s5", "s6", "f1", "f2", "f3", "f4"].map(user),
  friend("s1", "s2", "met at ETHDenver"),
  friend("s3", "s4"),
  follow("f1", "f2"),
  follow("f2", "f1"),
];
const CHANGES = [
  // Stored, upserted again, then deleted: must go.
  friend("s1", "s2", "again"),
  unfriend("s2", "s1"),
  // Never stored, upserted, then deleted: nothing to write.
  friend("s5", "s6", "brief"),
  unfriend("s5", "s6"),
  // Stored, deleted without an upsert: sent unread.
  unfriend("s4", "s3"),
  // The same three cases for follows.
  follow("f1", "f2"),
  unfollow("f1", "f2"),
  follow("f3", "f4"),
  unfollow("f3", "f4"),
  unfollow("f2", "f1"),
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

/** Each user's following and followers, by relationId. */
async function followsOf(store: GraphStore, relationIds: string[]): Promise<Record<string, string[]>> {
  const ids = await store.resolveRelationIds(relationIds);
  const result: Record<string, string[]> = {};
  for (const [i, id] of ids.entries()) {
    result[relationIds[i]!] = [...(await store.userSet("following", id!)), ...(await store.userSet("followers", id!))].map(String);
  }
  return result;
}

const FOLLOWERS = ["f1", "f2", "f3", "f4"];
const NO_FOLLOWS = { f1: [], f2: [], f3: [], f4: [] };

const EXPECTED = {
  s1: { friends: [], descriptions: [] },
  s2: { friends: [], descriptions: [] },
  s3: { friends: [], descriptions: [] },
  s4: { friends: [], descriptions: [] },
  s5: { friends: [], descriptions: [] },
  s6: { friends: [], descriptions: [] },
};

describe.each<{ name: string; fastPaths: boolean }>([
  { name: "through node-redis", fastPaths: false },
  { name: "through the engine's own RESP sockets", fastPaths: true },
])("friend and follow deletes that cancel an upsert of the load, on a server, $name", ({ fastPaths }) => {
  let server: TestRedisServer;
  let store: GraphStore;
  beforeAll(async () => {
    server = await startRedisServer();
    store = await createRedisStore({ url: server.url }, { fastPaths });
    await ingestRecords(store, STORED);
  });
  afterAll(async () => {
    await store?.close();
    await server?.stop();
  });

  it("write nothing for an edge that was not stored, and remove an edge that was", async () => {
    const [s5, s6, f3, f4] = (await store.resolveRelationIds(["s5", "s6", "f3", "f4"])) as [number, number, number, number];
    expect(Object.values(await followsOf(store, FOLLOWERS)).map((peers) => peers.length)).toEqual([2, 2, 0, 0]);
    const seen = await commandsDuring(server.url, () => ingestRecords(store, CHANGES));
    const command = (line: string) => /"([A-Z]+)"/.exec(line)?.[1];
    const naming = (id: number) => seen.filter((line) => new RegExp(`:${id}" `).test(line) || new RegExp(` "${id}"`).test(line));
    // The s5–s6 pair is looked up once, and no write names it.
    const writes = new Set(["SREM", "HDEL", "SADD", "HSET"]);
    expect(naming(s5).filter((line) => command(line) === "SISMEMBER")).toHaveLength(1);
    expect([...naming(s5), ...naming(s6)].filter((line) => writes.has(command(line)!))).toEqual([]);
    // So is the f3 → f4 follow, by its following half.
    expect(naming(f3).filter((line) => command(line) === "SISMEMBER")).toEqual([expect.stringContaining(`"rg:following:${f3}" "${f4}"`)]);
    expect([...naming(f3), ...naming(f4)].filter((line) => writes.has(command(line)!))).toEqual([]);
    expect(await friendsOf(store, ["s1", "s2", "s3", "s4", "s5", "s6"])).toEqual(EXPECTED);
    expect(await followsOf(store, FOLLOWERS)).toEqual(NO_FOLLOWS);
  });
});

describe("friend and follow deletes that cancel an upsert of the load, on a cluster", () => {
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

  it("leave the edges as the load says, whether or not they were stored", async () => {
    await ingestRecords(store, CHANGES);
    expect(await friendsOf(store, ["s1", "s2", "s3", "s4", "s5", "s6"])).toEqual(EXPECTED);
    expect(await followsOf(store, FOLLOWERS)).toEqual(NO_FOLLOWS);
  });
});
