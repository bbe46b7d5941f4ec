import type { UserId } from "../../domain/model.js";
import { chunks } from "./command-chunks.js";
import type { RedisConnection } from "./connection.js";

/** All members of a set of any size, read with SSCAN so that no single reply is unbounded. */
export async function scanSet(redis: RedisConnection, key: string): Promise<string[]> {
  return [...(await scanFrom(redis, key, "0", []))];
}

/** Every field and value of a hash, read by HSCAN, a page at a time. */
export async function scanHash(redis: RedisConnection, key: string): Promise<Map<string, string>> {
  const fields = new Map<string, string>();
  let cursor = "0";
  do {
    const [next, page] = await redis.send<[string, string[]]>(key, ["HSCAN", key, cursor, "COUNT", String(SCAN_COUNT)]);
    for (let i = 0; i + 1 < page.length; i += 2) fields.set(page[i]!, page[i + 1]!);
    cursor = next;
  } while (cursor !== "0");
  return fields;
}

/**
 * The members seen so far, and those of the rest of an SSCAN of `key` from `cursor` on, through
 * node-redis; as a Set, since SSCAN may return a member twice when the set changes between pages.
 */
async function scanFrom(redis: RedisConnection, key: string, cursor: string, seen: readonly string[]): Promise<Set<string>> {
  const members = new Set(seen);
  do {
    const [next, page] = await redis.send<[string, string[]]>(key, ["SSCAN", key, cursor, "COUNT", String(SCAN_COUNT)]);
    for (const member of page) members.add(member);
    cursor = next;
  } while (cursor !== "0");
  return members;
}

/** Members asked of each SSCAN page of scanSet, and of the rest of a large set in readIdSets. */
const SCAN_COUNT = 1_000;
/** Members asked of readIdSets' first page of each set: most sets come whole in it. */
const FIRST_PAGE_COUNT = 10_000;
/** Keys per round trip of readIdSets. */
const KEYS_PER_READ = 10_000;
/** readIdSets' round trips in flight at once. */
const PARTS_IN_FLIGHT = 8;

/**
 * Members of many sets of UserIds (releases, edges) as numbers, over the id-set reader (the speed
 * layer's own socket on a standalone server): the first SSCAN page of every key, a round trip for
 * many keys, holds nearly every set whole; the rest of a larger one is scanned, as scanSet does, so
 * that no reply is unbounded. Planning a unit reads the old release of every user it releases: one
 * SSCAN through node-redis per user was most of planning the releases, and sizing every set before
 * reading it cost Redis a command per key more.
 */
export async function readIdSets(redis: RedisConnection, keys: readonly string[]): Promise<UserId[][]> {
  const readPart = async (part: string[]): Promise<UserId[][]> => {
    const pages = await redis.idSets.firstPages(part, FIRST_PAGE_COUNT);
    const sets = pages.map((page) => page.ids);
    const rests: Promise<void>[] = [];
    pages.forEach(({ cursor, ids }, i) => {
      if (cursor === "0") return;
      rests.push(scanFrom(redis, part[i]!, cursor, ids.map(String)).then((members) => void (sets[i] = [...members].map(Number))));
    });
    await Promise.all(rests);
    return sets;
  };
  // Parts go out a few at a time: one part's replies are read while Redis answers the next, and a
  // read of millions of keys (erasing that many users) still holds only a few parts at once.
  const parts = chunks(keys, KEYS_PER_READ);
  const result: UserId[][] = [];
  for (let at = 0; at < parts.length; at += PARTS_IN_FLIGHT) {
    for (const sets of await Promise.all(parts.slice(at, at + PARTS_IN_FLIGHT).map(readPart))) {
      for (const set of sets) result.push(set);
    }
  }
  return result;
}

/** SCARD of each key, in one round trip. */
export function cardinalities(redis: RedisConnection, keys: readonly string[]): Promise<number[]> {
  return Promise.all(keys.map((key) => redis.send<number>(key, ["SCARD", key])));
}

/** HMGET of many fields of one hash, chunked, in one round trip. */
export async function hashGetMany(redis: RedisConnection, key: string, fields: readonly string[]): Promise<(string | null)[]> {
  const replies = await Promise.all(
    chunks(fields).map((part) => redis.send<(string | null)[]>(key, ["HMGET", key, ...part])),
  );
  return replies.flat();
}

/** SMISMEMBER of many members of one set, chunked, in one round trip. */
export async function setHasMany(redis: RedisConnection, key: string, members: readonly string[]): Promise<boolean[]> {
  const replies = await Promise.all(
    chunks(members).map((part) => redis.send<number[]>(key, ["SMISMEMBER", key, ...part])),
  );
  return replies.flat().map((flag) => flag === 1);
}

/**
 * Members common to every set.
 *
 * Standalone, SINTER does it in one command. On a cluster the sets of different users (or
 * addresses) hash to different slots, so SINTER would fail with CROSSSLOT; copying them under a
 * shared hash tag would double memory and go stale. So the client intersects: SCARD every set,
 * read only the smallest (with SSCAN, as it may still be large), then keep the candidates that
 * SMISMEMBER finds in each other set, smallest set first so that the candidate list shrinks as
 * early as possible. The work is bounded by the smallest set, as SINTER's is.
 */
export async function intersectSets(redis: RedisConnection, keys: readonly string[]): Promise<string[]> {
  if (keys.length === 0) return [];
  if (!redis.clustered) return redis.send<string[]>(keys[0], ["SINTER", ...keys]);
  const sizes = await cardinalities(redis, keys);
  if (sizes.some((size) => size === 0)) return [];
  const [smallest, ...others] = keys.map((key, i) => ({ key, size: sizes[i] ?? 0 })).sort((x, y) => x.size - y.size);
  if (!smallest) return [];
  let candidates = await scanSet(redis, smallest.key);
  for (const { key } of others) {
    if (candidates.length === 0) break;
    const present = await setHasMany(redis, key, candidates);
    candidates = candidates.filter((_, i) => present[i]);
  }
  return candidates;
}
