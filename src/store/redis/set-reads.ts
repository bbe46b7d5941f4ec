import type { UserId } from "../../domain/model.js";
import { readWithinBound } from "../bounded-sets.js";
import type { RedisConnection } from "./connection.js";

/** Members per SMISMEMBER / HMGET / SADD command: big enough to amortize, small enough not to stall Redis. */
export const ARGS_PER_COMMAND = 1_000;

/** Splits a list into chunks of at most `size`. */
export function chunks<T>(items: readonly T[], size = ARGS_PER_COMMAND): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}

/** All members of a set of any size, read with SSCAN so that no single reply is unbounded. */
export async function scanSet(redis: RedisConnection, key: string): Promise<string[]> {
  const members: string[] = [];
  let cursor = "0";
  do {
    const [next, page] = await redis.send<[string, string[]]>(key, ["SSCAN", key, cursor, "COUNT", "1000"]);
    members.push(...page);
    cursor = next;
  } while (cursor !== "0");
  // SSCAN may return a member twice when the set changes between pages.
  return [...new Set(members)];
}

/** Sets read whole (SMEMBERS) by readIdSets; a larger one is scanned. */
const WHOLE_SET_LIMIT = 10_000;
/** Keys per round trip of readIdSets. */
const KEYS_PER_READ = 10_000;
/** readIdSets' round trips in flight at once. */
const PARTS_IN_FLIGHT = 8;

/**
 * Members of many sets of UserIds (releases, edges) as numbers: sized, then read whole, a round
 * trip for many keys, over the id-set reader (the speed layer's own socket on a standalone
 * server). A set larger than WHOLE_SET_LIMIT is scanned, as scanSet does. Planning a unit reads the
 * old release of every user it releases: one SSCAN through node-redis per user was most of
 * planning the releases.
 */
export async function readIdSets(redis: RedisConnection, keys: readonly string[]): Promise<UserId[][]> {
  const readPart = async (part: string[]): Promise<UserId[][]> => {
    const sets = await readWithinBound(part, await redis.idSets.sizes(part), WHOLE_SET_LIMIT, (readable) => redis.idSets.members(readable));
    const large = await Promise.all(sets.map((set, i) => (set === null ? scanSet(redis, part[i]!) : null)));
    return sets.map((set, i) => set ?? large[i]!.map(Number));
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
