import { RESP_TYPES, createClient } from "redis";
import { COMMAND_TIMEOUT_MS, closeQuietly, connectCluster, type RedisStoreOptions } from "../store/redis/connection.js";
import { withDeadline } from "../store/redis/deadline.js";
import { compareIds } from "./apply-entries.js";

/**
 * A stream entry as Redis returns it: its id and its field-value pairs, or null once deleted from
 * the stream. Values stay bytes: the records in them are read where they lie (validate.ts), rather
 * than decoded to text and encoded back.
 */
export interface StreamEntry {
  id: string;
  fields: [string, Buffer][] | null;
}

/** One pending entry of the group, as XPENDING reports it. */
export interface PendingEntry {
  id: string;
  consumer: string;
  idleMs: number;
  deliveries: number;
}

/** How far the group is behind the stream. */
export interface GroupLag {
  /** Entries added to the stream and not yet delivered to the group; null when Redis cannot tell (after XDEL or trimming). */
  undelivered: number | null;
  /** Entries delivered to a consumer and not yet acknowledged. */
  pending: number;
}

/**
 * The stream commands of one consumer group, on a standalone Redis or a Redis Cluster. Every
 * command names one key, so the stream and its rejected stream may live in different slots.
 */
export interface FeedStream {
  readonly key: string;
  readonly group: string;
  readonly consumer: string;
  readonly rejectedKey: string;
  /** Creates the group (and the stream) unless it exists; a new group starts at `startId` ("0": the whole stream). */
  ensureGroup(startId: string): Promise<void>;
  /** New entries for this consumer, waiting up to `blockMs` when there are none (0: do not wait). */
  read(count: number, blockMs: number): Promise<StreamEntry[]>;
  /** Acknowledges entries. */
  ack(ids: readonly string[]): Promise<void>;
  /** The group's entries idle for at least `minIdleMs`, oldest first, held by `consumer` or by anyone. */
  pendingIdle(minIdleMs: number, count: number, consumer?: string): Promise<PendingEntry[]>;
  /** Takes over entries still idle for `minIdleMs`; those another consumer took first are not returned. */
  claim(ids: readonly string[], minIdleMs: number): Promise<StreamEntry[]>;
  /** The group's consumers: how many entries each holds, and how long since each last read. */
  consumers(): Promise<{ name: string; pending: number; idleMs: number }[]>;
  /** Removes a consumer from the group (with its pending entries: only for one that holds none). */
  forget(name: string): Promise<void>;
  /** Appends a record of a rejected entry to the rejected stream, which keeps only the newest maxRejected. */
  reject(id: string, reason: string, fields: readonly [string, Buffer][]): Promise<void>;
  /** The group's lag; null when the group does not exist. */
  lag(): Promise<GroupLag | null>;
  /**
   * The id of the oldest entry the group has not applied: its oldest pending entry, else the first
   * entry after the last one delivered; null when there is none (or no group).
   */
  oldestUnapplied(): Promise<string | null>;
  /**
   * Deletes the entries that every group of the stream has acknowledged: those older than the
   * oldest entry any group has pending or not yet read. Resolves with how many went.
   */
  trimAcknowledged(): Promise<number>;
  /**
   * Resolves true as soon as the group has work, entries pending or not yet delivered, waiting up
   * to `blockMs` for new ones; false when none came. Reads nothing for the group.
   */
  waitForWork(blockMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** Where the stream is and who reads it. */
export interface FeedStreamOptions {
  redis: RedisStoreOptions;
  key: string;
  group: string;
  consumer: string;
  /**
   * Most records the rejected stream keeps (default DEFAULT_MAX_REJECTED): the oldest make room. A
   * producer that keeps sending bad entries must not fill Redis with their copies.
   */
  maxRejected?: number;
}

/** Records the rejected stream keeps unless told otherwise: room for a long outage's worth, bounded. */
export const DEFAULT_MAX_REJECTED = 100_000;

type Reply = string | Buffer | number | null | Reply[];
type Send = (key: string, args: (string | Buffer)[]) => Promise<Reply>;

/** One consumer group, from XINFO GROUPS. */
interface GroupInfo extends GroupLag {
  name: string;
  lastDelivered: string;
}

/** node-redis's reply mapping for replies read as bytes. */
const BYTES = { [RESP_TYPES.BLOB_STRING]: Buffer };

/** Ids acknowledged or claimed per command. */
const IDS_PER_COMMAND = 1_000;

/**
 * Connects to the stream's Redis. Blocking reads get a connection of their own: on a shared one,
 * every acknowledgement would wait behind a read blocked for new entries.
 */
export async function connectFeedStream(options: FeedStreamOptions): Promise<FeedStream> {
  const opened = await Promise.allSettled([connect(options.redis), connect(options.redis)]);
  const failed = opened.find((outcome) => outcome.status === "rejected");
  if (failed) {
    await Promise.all(opened.map((outcome) => (outcome.status === "fulfilled" ? outcome.value.close() : undefined)));
    throw failed.reason;
  }
  const [reads, commands] = opened.map((outcome) => (outcome as PromiseFulfilledResult<Connection>).value) as [Connection, Connection];
  const { key, group, consumer } = options;
  const rejectedKey = `${key}:rejected`;
  const maxRejected = String(options.maxRejected ?? DEFAULT_MAX_REJECTED);
  const send = commands.send;
  async function lag(): Promise<GroupLag | null> {
    const info = await groupInfo();
    return info && { undelivered: info.undelivered, pending: info.pending };
  }
  async function groupInfo(): Promise<GroupInfo | null> {
    return (await allGroups())?.find((info) => info.name === group) ?? null;
  }
  /** The id of a group's oldest pending entry; null when it has none. */
  async function oldestPending(name: string): Promise<string | null> {
    // The summary form: [count, smallest id, greatest id, consumers].
    const summary = (await send(key, ["XPENDING", key, name])) as Reply[];
    return typeof summary[1] === "string" ? summary[1] : null;
  }
  /** Every group of the stream; null when there is no stream. */
  async function allGroups(): Promise<GroupInfo[] | null> {
    let groups: Reply[][];
    try {
      groups = (await send(key, ["XINFO", "GROUPS", key])) as Reply[][];
    } catch (error) {
      if (/no such key/i.test((error as Error).message)) return null;
      throw error;
    }
    return groups.map((info) => {
      const map = new Map<string, Reply>();
      for (let i = 0; i + 1 < info.length; i += 2) map.set(String(info[i]), info[i + 1] ?? null);
      const undelivered = map.get("lag");
      return {
        name: String(map.get("name")),
        undelivered: undelivered == null ? null : Number(undelivered),
        pending: Number(map.get("pending") ?? 0),
        lastDelivered: String(map.get("last-delivered-id") ?? "0"),
      };
    });
  }
  return {
    key,
    group,
    consumer,
    rejectedKey,
    async ensureGroup(startId) {
      // Looked up first: XGROUP CREATE is refused whenever Redis is out of memory, even for a group that exists.
      if ((await lag()) !== null) return;
      try {
        await send(key, ["XGROUP", "CREATE", key, group, startId, "MKSTREAM"]);
      } catch (error) {
        if (!String((error as Error).message).startsWith("BUSYGROUP")) throw error;
      }
    },
    async read(count, blockMs) {
      const args = ["XREADGROUP", "GROUP", group, consumer, "COUNT", String(count)];
      if (blockMs > 0) args.push("BLOCK", String(blockMs));
      args.push("STREAMS", key, ">");
      const reply = (await (blockMs > 0 ? reads : commands).sendForBytes(key, args)) as [Buffer, Reply[]][] | null;
      return reply === null || reply.length === 0 ? [] : entriesOf(reply[0]![1]);
    },
    async ack(ids) {
      // Sent at once: node-redis pipelines them.
      await Promise.all(chunked(ids).map((part) => send(key, ["XACK", key, group, ...part])));
    },
    async pendingIdle(minIdleMs, count, holder) {
      const args = ["XPENDING", key, group, "IDLE", String(minIdleMs), "-", "+", String(count)];
      if (holder !== undefined) args.push(holder);
      const reply = (await send(key, args)) as [string, string, number, number][];
      return reply.map(([id, owner, idleMs, deliveries]) => ({ id, consumer: owner, idleMs: Number(idleMs), deliveries: Number(deliveries) }));
    },
    async claim(ids, minIdleMs) {
      const replies = await Promise.all(chunked(ids).map((part) => commands.sendForBytes(key, ["XCLAIM", key, group, consumer, String(minIdleMs), ...part])));
      // Redis 7 drops deleted entries from the pending list and leaves them out; older ones answer nil.
      return replies.flatMap((reply) => entriesOf((reply as Reply[]).filter((item) => item !== null)));
    },
    async consumers() {
      const reply = (await send(key, ["XINFO", "CONSUMERS", key, group])) as Reply[][];
      return reply.map((info) => {
        const map = new Map<string, Reply>();
        for (let i = 0; i + 1 < info.length; i += 2) map.set(String(info[i]), info[i + 1] ?? null);
        return { name: String(map.get("name")), pending: Number(map.get("pending")), idleMs: Number(map.get("idle")) };
      });
    },
    async forget(name) {
      await send(key, ["XGROUP", "DELCONSUMER", key, group, name]);
    },
    async reject(id, reason, fields) {
      // Exact trimming: rejections are rare, and each trims at most the one oldest record.
      await send(rejectedKey, ["XADD", rejectedKey, "MAXLEN", maxRejected, "*", "entry", id, "reason", reason, ...fields.flat()]);
    },
    lag,
    async oldestUnapplied() {
      const info = await groupInfo();
      if (info === null) return null;
      if (info.pending > 0) {
        const oldest = await oldestPending(group);
        if (oldest !== null) return oldest;
      }
      const next = (await send(key, ["XRANGE", key, `(${info.lastDelivered}`, "+", "COUNT", "1"])) as [string, Reply[]][];
      return next[0]?.[0] ?? null;
    },
    async trimAcknowledged() {
      const groups = (await allGroups()) ?? [];
      // What each group still needs starts at its oldest pending entry, or else just after the last
      // one delivered; MINID keeps that last one too, which is harmless.
      let floor: string | null = null;
      for (const info of groups) {
        const needed = (info.pending > 0 ? await oldestPending(info.name) : null) ?? info.lastDelivered;
        if (floor === null || compareIds(needed, floor) < 0) floor = needed;
      }
      if (floor === null || compareIds(floor, "0-1") < 0) return 0;
      // Exact trimming: "~" keeps whole nodes of up to 100 entries, and this runs often enough to be small.
      return Number(await send(key, ["XTRIM", key, "MINID", floor]));
    },
    async waitForWork(blockMs) {
      const info = await groupInfo();
      // No group yet: the caller creates it and looks again.
      if (info === null || info.pending > 0) return true;
      // Entries after the group's last delivered one, or the first that arrives within blockMs.
      const reply = (await reads.send(key, ["XREAD", "COUNT", "1", "BLOCK", String(blockMs), "STREAMS", key, info.lastDelivered])) as Reply[] | null;
      return reply !== null && reply.length > 0;
    },
    async close() {
      await Promise.all([reads.close(), commands.close()]);
    },
  };
}

function chunked(ids: readonly string[]): string[][] {
  const parts: string[][] = [];
  for (let i = 0; i < ids.length; i += IDS_PER_COMMAND) parts.push(ids.slice(i, i + IDS_PER_COMMAND));
  return parts;
}

/** Entries of a reply read as bytes: ids and field names as text, values as they are. */
function entriesOf(items: Reply[]): StreamEntry[] {
  return (items as [Buffer, Buffer[] | null][]).map(([id, flat]) => {
    if (flat === null) return { id: id.toString(), fields: null };
    const fields: [string, Buffer][] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) fields.push([flat[i]!.toString(), flat[i + 1]!]);
    return { id: id.toString(), fields };
  });
}

interface Connection {
  send: Send;
  /** The same, with the reply's strings as bytes. */
  sendForBytes: Send;
  close(): Promise<void>;
}

/**
 * A connection that fails commands at once while Redis is away (the feed retries them) and, once
 * connected, reconnects forever; the first connect gives up quickly so that a wrong address fails
 * at startup. No command waits longer than COMMAND_TIMEOUT_MS for its reply (a blocking read, that
 * beyond its BLOCK): the consumer reads, applies and acknowledges under the store's write lease,
 * which it keeps renewing while it waits, so a command that waited for ever on a hung node, or on a
 * node-redis connection that never completes, would stop every writer of the store, not just the feed.
 */
async function connect(redis: RedisStoreOptions): Promise<Connection> {
  let connected = false;
  const socket = {
    connectTimeout: 2_000,
    reconnectStrategy: (retries: number) => (!connected && retries >= 1 ? false : Math.min(50 * 2 ** retries, 2_000)),
  };
  if ("clusterNodes" in redis) {
    // The stream's master can die like any other: the cluster client follows its replica's promotion
    // as the store's does, or every read of the stream would go to the dead address for good.
    const { cluster, close } = await connectCluster(redis.clusterNodes, socket);
    connected = true;
    return {
      send: (key, args) => bounded(args, cluster.sendCommand<Reply>(key, false, args)),
      sendForBytes: (key, args) => bounded(args, cluster.sendCommand<Reply>(key, false, args, { typeMapping: BYTES })),
      close,
    };
  }
  const client = createClient({ url: redis.url, socket, disableOfflineQueue: true });
  client.on("error", () => {});
  await client.connect();
  connected = true;
  return {
    send: (_key, args) => bounded(args, client.sendCommand<Reply>(args)),
    sendForBytes: (_key, args) => bounded(args, client.sendCommand<Reply>(args, { typeMapping: BYTES })),
    close: () => closeQuietly(() => client.close()),
  };
}

/** A command's reply, or a NoReplyError once it has waited COMMAND_TIMEOUT_MS beyond its BLOCK (if any). */
function bounded(args: readonly (string | Buffer)[], reply: Promise<Reply>): Promise<Reply> {
  const block = args.indexOf("BLOCK");
  return withDeadline(reply, COMMAND_TIMEOUT_MS + (block >= 0 ? Number(args[block + 1]) : 0));
}

