import { DEMO_DATASET } from "../../src/synthetic/demo.js";
import type { IngestRecord, UserLine } from "../../src/ingest/format.js";
import { generateRecords } from "../../src/synthetic/generate.js";

/**
 * What the bundled demo dataset holds for one user, worked out from its records alone (not through
 * relgraph), so that a page showing relgraph's answers can be checked against the data itself.
 */

/** A user's decrypted Profile and Relationship graph, as the contract shapes them. */
export interface DemoExpectation {
  profile: { relationId: string; name: string; avatar: string; followingCount: number; followerCount: number };
  graph: { relationId: string; name: string; address: string[]; social: string; game: string; description: string }[];
}

/** The expected Profile and Relationship graph of demo user `relationId`. */
export function demoExpectation(relationId: string): DemoExpectation {
  const users = new Map<string, UserLine>();
  const friends = new Map<string, string>(); // "a b" (ordered) -> description
  const following = new Set<string>();
  const followers = new Set<string>();
  let release: "*" | string[] = [];
  for (const record of generateRecords(DEMO_DATASET) as Iterable<IngestRecord>) {
    switch (record.type) {
      case "user":
        users.set(record.relationId, record);
        break;
      case "friend":
        if (record.a === relationId) friends.set(record.b, record.description);
        if (record.b === relationId) friends.set(record.a, record.description);
        break;
      case "follow":
        if (record.from === relationId && record.to !== relationId) following.add(record.to);
        if (record.to === relationId && record.from !== relationId) followers.add(record.from);
        break;
      case "release":
        if (record.relationId === relationId) release = record.peers;
        break;
    }
  }
  const user = users.get(relationId);
  if (!user) throw new Error(`${relationId} is not in the demo dataset`);
  const released = [...friends.keys()].filter((peer) => release === "*" || release.includes(peer)).sort();
  return {
    profile: { relationId, name: user.name, avatar: user.avatar, followingCount: following.size, followerCount: followers.size },
    graph: released.map((peer) => {
      const friend = users.get(peer)!;
      return {
        relationId: peer,
        name: friend.name,
        address: friend.addresses.map((a) => a.toLowerCase()),
        social: friend.social?.username ?? "",
        game: friend.game?.name ?? "",
        description: friends.get(peer)!,
      };
    }),
  };
}
