import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import type { RedisConnection } from "./connection.js";
import { WRITE_LEASE, WRITE_LEASE_GENERATION, WRITE_LEASE_NEXT } from "./keys.js";

/** Options of the write lease. */
export interface WriteLeaseOptions {
  /** How long the lease outlives its holder's last renewal, in ms: a writer killed outright blocks others this long. */
  ttlMs?: number;
  /** Called once when the lease is held by someone else and this writer starts waiting. */
  onWait?: (holder: string) => void;
}

/** Default lease time: far above any pause of a live writer, short enough that a dead one is soon replaced. */
export const DEFAULT_WRITE_LEASE_MS = 10_000;
/** How often a waiting writer tries the lease again. */
const POLL_MS = 50;
/** How long a waiting writer keeps the next turn without trying again: one that died soon stops holding others up. */
const TURN_MS = 10 * POLL_MS;

// Takes the lease when it is free and the next turn is nobody's or this writer's, and numbers the
// taking: returns the generation. Otherwise returns nil, and this writer has the next turn unless
// another writer had it first. Without turns, a writer that lets the lease go and takes it again at
// once (a busy change feed, unit after unit) would win every time over one that polls.
const TAKE = `
local turn = redis.call("GET", KEYS[3])
if (not turn or turn == ARGV[1]) and redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  if turn then redis.call("DEL", KEYS[3]) end
  return redis.call("INCR", KEYS[2])
end
if not turn then redis.call("SET", KEYS[3], ARGV[1], "PX", ARGV[3])
elseif turn == ARGV[1] then redis.call("PEXPIRE", KEYS[3], ARGV[3]) end
return false`;
// Extends the lease while this writer's token holds it (1). A lease that expired while its holder
// stalled (a long pause of the process or of Redis) and that nobody has taken since (the generation
// is still this writer's) is taken again (2): no other writer ran in between. Otherwise it is lost (0).
const RENEW = `
local holder = redis.call("GET", KEYS[1])
if holder == ARGV[1] then redis.call("PEXPIRE", KEYS[1], ARGV[2]) return 1 end
if not holder and redis.call("GET", KEYS[2]) == ARGV[3] then redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2]) return 2 end
return 0`;
// Deletes the lease only while this writer's token still holds it.
const RELEASE = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`;

/**
 * Runs `work` as the only writer of the store. Every process that writes (ingest, the change feed)
 * takes this lease first, so units of changes apply one at a time and in the order they were taken:
 * two writers interleaving their commands could otherwise leave a state neither meant (a friend
 * added by one after the other erased the user). The lease is renewed while `work` runs; a holder
 * that dies without releasing it is replaced once ttlMs has passed. Writers take turns: the first
 * to find the lease held goes next, before its holder can take it again.
 */
export async function withWriteLease<T>(redis: RedisConnection, work: () => Promise<T>, options: WriteLeaseOptions = {}): Promise<T> {
  const ttlMs = options.ttlMs ?? DEFAULT_WRITE_LEASE_MS;
  const token = `${hostname()}:${process.pid}:${randomUUID()}`;
  let waiting = false;
  let generation: number;
  for (;;) {
    const taken = await redis.send<number | null>(WRITE_LEASE, [
      "EVAL",
      TAKE,
      "3",
      WRITE_LEASE,
      WRITE_LEASE_GENERATION,
      WRITE_LEASE_NEXT,
      token,
      String(ttlMs),
      String(TURN_MS),
    ]);
    if (taken !== null) {
      generation = taken;
      break;
    }
    if (!waiting) {
      waiting = true;
      const holder = await redis.send<string | null>(WRITE_LEASE, ["GET", WRITE_LEASE]);
      options.onWait?.(holder?.replace(/:[^:]*$/, "") ?? "another writer");
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  let lost: unknown = null;
  const renewal = setInterval(() => {
    redis.send<number>(WRITE_LEASE, ["EVAL", RENEW, "2", WRITE_LEASE, WRITE_LEASE_GENERATION, token, String(ttlMs), String(generation)]).then(
      (renewed) => {
        if (renewed === 0) lost ??= new Error("the write lease was lost: another writer took over after this one stalled");
      },
      // A failed renewal is retried at the next tick; the lease still has most of its time.
      () => {},
    );
  }, Math.max(50, Math.floor(ttlMs / 3)));
  try {
    const result = await work();
    if (lost) throw lost;
    return result;
  } finally {
    clearInterval(renewal);
    await redis.send(WRITE_LEASE, ["EVAL", RELEASE, "1", WRITE_LEASE, token]).catch(() => {
      // Unreleased, it expires by itself after ttlMs.
    });
  }
}
