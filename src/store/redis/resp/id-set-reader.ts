import type { UserId } from "../../../domain/model.js";
import type { IdPage, IdSetReads } from "../id-sets.js";
import { CommandBuffer, type EncodedCommands } from "./command-buffer.js";
import { RespSocket, respEndpointOf, type Expect, type Reply, type RespEndpoint } from "./socket.js";

/**
 * IdSetReads over a socket of its own to a standalone Redis, speaking just enough RESP2 for SCARD,
 * SMEMBERS, SSCAN and SISMEMBER, with members parsed from the reply bytes straight into numbers.
 *
 * Why not node-redis: its cost per command and per member (a string per member, then a number)
 * made reading a median user's neighbourhood (many SCARDs and SMEMBERS of thousands of ids) most of
 * a cold recommendation's CPU. This reader does the same for much less (bench/README.md). Everything else stays on node-redis.
 *
 * Connects on first use and again after any failure; commands pending on a failed connection are
 * rejected, never resent (they are reads, so the caller may retry). While Redis cannot be reached, a
 * new connection is tried RECONNECT_INTERVAL_MS after the last one failed, and calls in between fail
 * at once, as node-redis's do: otherwise every call would wait out its own connect attempt.
 */
export class RespIdSetReader implements IdSetReads {
  private link: RespSocket | null = null;
  private closed = false;

  constructor(
    private readonly endpoint: RespEndpoint,
    private readonly connectTimeoutMs: number,
  ) {}

  sizes(keys: readonly string[]): Promise<number[]> {
    return this.send("SCARD", keys, "integer") as Promise<number[]>;
  }

  members(keys: readonly string[]): Promise<UserId[][]> {
    return this.send("SMEMBERS", keys, "ids") as Promise<UserId[][]>;
  }

  firstPages(keys: readonly string[], count: number): Promise<IdPage[]> {
    const page = String(count);
    return this.sendCommands(keys.map((key) => ["SSCAN", key, "0", "COUNT", page]), "page") as Promise<IdPage[]>;
  }

  async contains(keys: readonly string[], members: readonly UserId[]): Promise<boolean[]> {
    const replies = (await this.sendCommands(encodeMembership(keys, members), "integer")) as number[];
    return replies.map((reply) => reply === 1);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.link?.close();
    this.link = null;
  }

  private send(command: string, keys: readonly string[], expect: Expect): Promise<Reply[]> {
    return this.sendCommands(keys.map((key) => [command, key]), expect);
  }

  /** Sends commands as argument lists, or already encoded (and how many they are). */
  private sendCommands(commands: readonly string[][] | EncodedCommands, expect: Expect): Promise<Reply[]> {
    if (this.closed) return Promise.reject(new Error("the set reader is closed"));
    const count = Array.isArray(commands) ? commands.length : (commands as EncodedCommands).count;
    if (count === 0) return Promise.resolve([]);
    let link = this.link;
    if (link === null || link.broken) {
      const failure = link?.connectFailure;
      if (failure && performance.now() - failure.at < RECONNECT_INTERVAL_MS) return Promise.reject(failure.error);
      link = new RespSocket(this.endpoint, this.connectTimeoutMs);
      this.link = link;
    }
    return Array.isArray(commands) ? link.enqueue(commands, expect) : link.enqueueEncoded((commands as EncodedCommands).bytes, count, expect);
  }
}

/**
 * SISMEMBER of each key and member as RESP bytes in one window: a unit's lookups are a hundred
 * thousand commands, and one string of them all, as encodeCommands makes, cost more in garbage
 * collection than Redis took to answer them.
 */
function encodeMembership(keys: readonly string[], members: readonly UserId[]): EncodedCommands {
  const window = new CommandBuffer(64 * keys.length);
  keys.forEach((key, i) => window.appendCommand(["SISMEMBER", key, String(members[i])]));
  return window.take();
}

/** While Redis cannot be reached, how long after a failed connection the next one is tried. */
const RECONNECT_INTERVAL_MS = 500;

/** A RespIdSetReader for a `redis://` URL; null for any other (TLS, a unix socket), which node-redis serves. */
export function respIdSetReader(url: string, connectTimeoutMs: number): IdSetReads | null {
  const endpoint = respEndpointOf(url);
  return endpoint === null ? null : new RespIdSetReader(endpoint, connectTimeoutMs);
}
