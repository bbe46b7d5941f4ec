import type { createClient } from "redis";

type RedisClient = ReturnType<typeof createClient>;

/*
 * Redis grows its keyspace's hash table by doubling it once the keys outnumber its buckets, then
 * moves the entries over incrementally: one bucket per lookup, plus 1 ms per server tick. The large
 * dataset's load ends just past 2^21 keys, so every store the bench loads starts such a move of 2M
 * entries as the load ends. At the default tick rate (hz 10) it takes about 90 s, and the first
 * measurement pays for it: `relgraph ingest` of 1M changes made Redis use 4.3–5.0 s of CPU against
 * 2.8–2.9 s, and took 1.4–3.7 s longer, than on the same kind of store once the move was over
 * (bench/README.md, "The writer, twelfth pass"). That cost belongs to the load, not to whatever
 * runs next, so the bench lets the move end before it measures anything.
 */

/** How long to wait for the rehash the large dataset's load leaves: seconds at SETTLING_HZ, about 90 s at the default hz 10. */
export const REHASH_TIMEOUT_MS = 120_000;
/** The server tick rate while the move is waited for: the highest Redis allows, so it takes seconds. */
const SETTLING_HZ = "500";
const POLL_MS = 200;

/** How the wait for the keyspace's rehash ended. */
export interface KeyspaceRehash {
  /** Seconds waited (0 when no rehash was under way). */
  seconds: number;
  /** False when it was still under way at the timeout. */
  settled: boolean;
}

/**
 * Whether Redis is moving database `db`'s keys to a resized hash table, from `DEBUG HTSTATS`: its
 * report names a second table, the "rehashing target", only while a move is under way.
 */
export function isRehashing(htstats: string): boolean {
  const keyspace = htstats.split("[Expires HT]")[0]!;
  return keyspace.includes("rehashing target");
}

/**
 * Waits until Redis has no keyspace rehash under way in database 0, with its tick rate raised
 * meanwhile and then put back. Needs DEBUG (the bench's own redis-server runs with
 * `--enable-debug-command local`).
 */
export async function awaitKeyspaceRehash(redis: RedisClient, timeoutMs: number): Promise<KeyspaceRehash> {
  const rehashing = async () => isRehashing(await redis.sendCommand<string>(["DEBUG", "HTSTATS", "0"]));
  if (!(await rehashing())) return { seconds: 0, settled: true };
  const started = performance.now();
  const [, hz = "10"] = await redis.sendCommand<string[]>(["CONFIG", "GET", "hz"]);
  await redis.sendCommand(["CONFIG", "SET", "hz", SETTLING_HZ]);
  try {
    while (await rehashing()) {
      if (performance.now() - started > timeoutMs) return { seconds: (performance.now() - started) / 1_000, settled: false };
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    return { seconds: (performance.now() - started) / 1_000, settled: true };
  } finally {
    await redis.sendCommand(["CONFIG", "SET", "hz", hz]);
  }
}
