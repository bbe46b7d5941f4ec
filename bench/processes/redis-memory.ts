import type { createClient } from "redis";
import { USER_ID_SEQUENCE, userSetKey } from "../../src/store/redis/keys.js";

type RedisClient = ReturnType<typeof createClient>;

/** Bytes Redis spends on friend sets, by encoding and in total. */
export interface RedisMemory {
  /** Σ MEMORY USAGE / Σ SCARD over every friend set: the target's figure. */
  bytesPerFriendMember: number;
  friendSets: number;
  friendMembers: number;
  friendSetBytes: number;
  /** The same split by OBJECT ENCODING (intset, hashtable, listpack). */
  byEncoding: Record<string, { sets: number; members: number; bytes: number; bytesPerMember: number }>;
  /** INFO memory's used_memory and used_memory_dataset, for the whole load. */
  usedMemory: number;
  usedMemoryDataset: number;
  /** used_memory over every friend-set member: an upper bound that charges everything else to friends. */
  usedMemoryPerFriendMember: number;
  /** Redis's set-max-intset-entries: sets larger than this leave the compact intset encoding. */
  setMaxIntsetEntries: number;
}

/** Measures every friend set (users 1 … the id sequence), pipelined in batches. */
export async function measureRedisMemory(redis: RedisClient): Promise<RedisMemory> {
  const maxId = Number((await redis.get(USER_ID_SEQUENCE)) ?? 0);
  const byEncoding: RedisMemory["byEncoding"] = {};
  const batch = 500;
  for (let first = 1; first <= maxId; first += batch) {
    const keys: string[] = [];
    for (let id = first; id < Math.min(maxId + 1, first + batch); id++) keys.push(userSetKey("friends", id));
    const [sizes, usages, encodings] = await Promise.all([
      Promise.all(keys.map((key) => redis.sendCommand<number>(["SCARD", key]))),
      Promise.all(keys.map((key) => redis.sendCommand<number | null>(["MEMORY", "USAGE", key, "SAMPLES", "0"]))),
      Promise.all(keys.map((key) => redis.sendCommand<string | null>(["OBJECT", "ENCODING", key]))),
    ]);
    keys.forEach((_, i) => {
      const encoding = encodings[i];
      if (encoding == null) return;
      const entry = (byEncoding[encoding] ??= { sets: 0, members: 0, bytes: 0, bytesPerMember: 0 });
      entry.sets++;
      entry.members += Number(sizes[i]);
      entry.bytes += Number(usages[i] ?? 0);
    });
  }
  let friendSets = 0;
  let friendMembers = 0;
  let friendSetBytes = 0;
  for (const entry of Object.values(byEncoding)) {
    entry.bytesPerMember = entry.members > 0 ? entry.bytes / entry.members : 0;
    friendSets += entry.sets;
    friendMembers += entry.members;
    friendSetBytes += entry.bytes;
  }
  const info = parseInfo(await redis.sendCommand<string>(["INFO", "memory"]));
  const config = await redis.sendCommand<string[]>(["CONFIG", "GET", "set-max-intset-entries"]);
  const usedMemory = Number(info.used_memory ?? 0);
  return {
    bytesPerFriendMember: friendMembers > 0 ? friendSetBytes / friendMembers : 0,
    friendSets,
    friendMembers,
    friendSetBytes,
    byEncoding,
    usedMemory,
    usedMemoryDataset: Number(info.used_memory_dataset ?? 0),
    usedMemoryPerFriendMember: friendMembers > 0 ? usedMemory / friendMembers : 0,
    setMaxIntsetEntries: Number(config[1] ?? 0),
  };
}

function parseInfo(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split("\r\n")) {
    const at = line.indexOf(":");
    if (at > 0) fields[line.slice(0, at)] = line.slice(at + 1);
  }
  return fields;
}
