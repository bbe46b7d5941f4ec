import { RESP_TYPES, createClient, createCluster } from "redis";
import { StoreUnavailableError } from "../../domain/errors.js";
import { commandIdSetReads, type IdSetReads } from "./id-sets.js";
import { respWriter, type BulkWriter } from "./resp/bulk-writer.js";
import type { EncodedCommands } from "./resp/command-buffer.js";
import { respIdSetReader } from "./resp/id-set-reader.js";
import { CommandBuffer } from "./resp/command-buffer.js";
import { chunks } from "./command-chunks.js";
import { discoveryNode, watchClusterSlots, type SlotWatch } from "./cluster-slots.js";
import { withDeadline } from "./deadline.js";

/** Where the redis engine connects: one standalone server, or seeds of a Redis Cluster. */
export type RedisStoreOptions = { url: string } | { clusterNodes: string[] };

/** A reply of a raw command, as RESP2 decodes it. */
export type Reply = string | number | null | Reply[];

/**
 * The little the store needs from node-redis, identical for a standalone client and a cluster:
 * raw commands routed by their first key. Commands issued in the same tick are pipelined by
 * node-redis (per node on a cluster), so a burst of concurrent sends costs one round trip.
 */
export interface RedisConnection {
  readonly engine: "redis" | "redis-cluster";
  /** True on a cluster, where keys of different users live in different slots. */
  readonly clustered: boolean;
  /** Sends one command; `key` routes it on a cluster (undefined: any node). */
  send<T extends Reply>(key: string | undefined, args: string[]): Promise<T>;
  /**
   * Sends many commands whose key is their second argument, a window at a time, and returns their
   * replies in order. The bulk path: one deadline per window instead of a timer per command.
   */
  sendAll(commands: readonly string[][]): Promise<Reply[]>;
  /**
   * Sends many writes whose key is their second argument, like sendAll, and resolves once all are
   * answered, their replies unread: the path of a load's planned commands.
   */
  writeAll(commands: readonly string[][]): Promise<void>;
  /**
   * Sends a window of writes already encoded as RESP, with writeAll's deadline, when this connection
   * has a bulk writer of its own (standalone, with FAST_PATHS on); null otherwise, where the
   * caller sends commands through writeAll.
   */
  readonly writeEncoded: ((commands: EncodedCommands) => Promise<void>) | null;
  /** GET of many keys in one round trip: MGETs standalone, concurrent GETs (pipelined per node) on a cluster. */
  getMany(keys: readonly string[]): Promise<(string | null)[]>;
  /**
   * SET of values that are bytes rather than text (the write journal's chunks), in one round trip
   * under the bulk deadline: the bulk writer's own connection when there is one, node-redis otherwise.
   */
  setBytes(entries: readonly (readonly [key: string, value: Uint8Array])[]): Promise<void>;
  /** GET of such values, as bytes. */
  getBytes(keys: readonly string[]): Promise<(Buffer | null)[]>;
  /** Sizes and members of UserId sets: through node-redis, or a reader of its own when connectRedis was given one. */
  readonly idSets: IdSetReads;
  /** URLs of the nodes that hold data now: the server, or each master of a cluster as last discovered. */
  dataNodes(): string[];
  close(): Promise<void>;
}

/** A connect attempt gives up after this long (per attempt). */
const CONNECT_TIMEOUT_MS = 2_000;
/** The first connection is tried this many times before createRedisStore fails. */
const INITIAL_CONNECT_ATTEMPTS = 2;
/** How long a cluster client may take to connect to every master once a seed has shown it the slots. */
const CLUSTER_START_TIMEOUT_MS = CONNECT_TIMEOUT_MS * (INITIAL_CONNECT_ATTEMPTS + 1);
/**
 * For a server that stops answering without closing the socket (hung, paused, swapping): no store
 * call waits longer than this, and once a connection has gone this long with commands outstanding and
 * no reply, further commands fail at once (the stall breaker below) until a reply arrives. A closed
 * socket fails commands at once anyway. It is enforced per call rather than per command:
 * node-redis's per-command timeout allocates an AbortSignal and a timer for every command, which cost
 * a visible share of a request. Every relgraph read is well under a millisecond of Redis time.
 */
export const COMMAND_TIMEOUT_MS = 2_000;
/** A window of bulk writes (ingestion) may take longer than a read: 10,000 commands under load. */
const BULK_WINDOW_TIMEOUT_MS = 15_000;
/** Commands that wait on purpose (a blocking read of a stream or list): never counted as a stall. */
const BLOCKING_COMMANDS = new Set(["XREAD", "XREADGROUP", "BLPOP", "BRPOP", "BLMOVE", "BZPOPMIN", "BZPOPMAX", "BLMPOP", "BZMPOP", "WAIT"]);
/** Commands in flight at once on the bulk path: node-redis writes them as one pipeline per node. */
const COMMANDS_PER_WINDOW = 10_000;
/** Arguments per window on a BulkWriter's path, which encodes a window as one string: a few MB. */
const ARGS_PER_WINDOW = 200_000;

/**
 * Opens a connection; rejects promptly with StoreUnavailableError when Redis does not answer. On a
 * standalone server, `fastPaths` (FAST_PATHS) opens RESP sockets of its own (resp/) for set
 * reads and bulk writes; without it, or on a cluster, everything goes through node-redis.
 */
export async function connectRedis(options: RedisStoreOptions, fastPaths = false): Promise<RedisConnection> {
  let connected = false;
  const socket = {
    connectTimeout: CONNECT_TIMEOUT_MS,
    // Before the first success, give up quickly so a misconfigured server fails at startup. After
    // it, retry forever with backoff: Redis may come back, and meanwhile disableOfflineQueue makes
    // every command fail at once instead of piling up.
    reconnectStrategy: (retries: number) =>
      !connected && retries + 1 >= INITIAL_CONNECT_ATTEMPTS ? false : Math.min(50 * 2 ** retries, 2_000),
  };
  // The store reports failures through rejected commands; without a listener node-redis's 'error'
  // events would crash the process.
  const ignore = () => {};

  if ("clusterNodes" in options) {
    const { cluster, close } = await connectCluster(options.clusterNodes, socket);
    connected = true;
    const breaker = createStallBreaker();
    const send = <T extends Reply>(key: string | undefined, args: string[]) =>
      breaker.track(args, () => cluster.sendCommand<T>(key, false, args));
    const sendAll = (commands: readonly string[][]) =>
      sendInWindows(commands, (args) => breaker.track(args, () => cluster.sendCommand<Reply>(args[1], false, args)));
    return {
      engine: "redis-cluster",
      clustered: true,
      send,
      sendAll,
      writeAll: async (commands) => void (await sendAll(commands)),
      writeEncoded: null,
      getMany: (keys) => sendAll(keys.map((key) => ["GET", key])) as Promise<(string | null)[]>,
      ...bytesThroughNodeRedis(breaker, (key, args, options) => cluster.sendCommand(key, false, args, options)),
      // The slot routing stays node-redis's: a set read is one command per key anyway.
      idSets: commandIdSetReads((key, args) => breaker.track(args, () => cluster.sendCommand(key, false, args))),
      dataNodes: () => cluster.masters.map((master) => `redis://${master.host}:${master.port}`),
      close,
    };
  }

  const client = createClient({ url: options.url, socket, disableOfflineQueue: true });
  client.on("error", ignore);
  await connectOrThrow(() => client.connect());
  connected = true;
  const breaker = createStallBreaker();
  const send = <T extends Reply>(_key: string | undefined, args: string[]) => breaker.track(args, () => client.sendCommand<T>(args));
  const reader = fastPaths ? respIdSetReader(options.url, CONNECT_TIMEOUT_MS) : null;
  const idSets = reader ? withStallBreaker(reader) : commandIdSetReads((_key, args) => breaker.track(args, () => client.sendCommand(args)));
  const sendAll = (commands: readonly string[][]) => sendInWindows(commands, (args) => breaker.track(args, () => client.sendCommand<Reply>(args)));
  const writer: BulkWriter | null = fastPaths ? respWriter(options.url, CONNECT_TIMEOUT_MS) : null;
  const bytes = bytesThroughNodeRedis(breaker, (_key, args, options) => client.sendCommand(args, options));
  return {
    engine: "redis",
    clustered: false,
    send,
    sendAll,
    writeAll: writer ? (commands) => writeInWindows(commands, writer) : async (commands) => void (await sendAll(commands)),
    writeEncoded: writer ? (commands) => writeWindow(writer, () => writer.writeEncoded(commands)) : null,
    getMany: async (keys) => {
      const replies = await Promise.all(chunks(keys).map((part) => send<(string | null)[]>(undefined, ["MGET", ...part])));
      return replies.flat();
    },
    setBytes: writer ? (entries) => writeWindow(writer, () => writer.writeEncoded(encodeSets(entries))) : bytes.setBytes,
    getBytes: bytes.getBytes,
    idSets,
    dataNodes: () => [options.url],
    close: async () => {
      await Promise.all([idSets.close(), writer?.reset(), closeQuietly(() => client.close())]);
    },
  };
}

/** Watches one connection for a stall: commands outstanding, and no reply for COMMAND_TIMEOUT_MS. */
interface StallBreaker {
  /** Sends through `work`, or fails at once while the connection is stalled. */
  track<T>(args: readonly string[], work: () => Promise<T>): Promise<T>;
}

/**
 * A circuit breaker that needs no timer: a connection answers in order, so "the oldest outstanding
 * command has waited too long" is "commands are outstanding, and no reply came for that long". While
 * so, a command fails at once with StoreUnavailableError instead of joining the queue for the full
 * timeout; the first reply closes the breaker again. A socket that closes fails its commands anyway.
 */
function createStallBreaker(stallMs = COMMAND_TIMEOUT_MS): StallBreaker {
  let pending = 0;
  /** When the connection last showed progress: the last reply, or the send that started a busy spell. */
  let progressAt = 0;
  const settle = () => {
    pending -= 1;
    progressAt = performance.now();
  };
  return {
    track(args, work) {
      if (BLOCKING_COMMANDS.has(args[0]?.toUpperCase() ?? "")) return work();
      const at = performance.now();
      if (pending > 0 && at - progressAt > stallMs) {
        return Promise.reject(unavailable(new Error(`Redis has not answered for ${Math.round(at - progressAt)} ms`)));
      }
      if (pending === 0) progressAt = at;
      pending += 1;
      const reply = work();
      reply.then(settle, settle);
      return reply;
    },
  };
}

/** The id-set reader's own connection, behind a breaker of its own. */
function withStallBreaker(reader: IdSetReads): IdSetReads {
  const breaker = createStallBreaker();
  return {
    sizes: (keys) => breaker.track(["SCARD"], () => reader.sizes(keys)),
    members: (keys) => breaker.track(["SMEMBERS"], () => reader.members(keys)),
    firstPages: (keys, count) => breaker.track(["SSCAN"], () => reader.firstPages(keys, count)),
    contains: (keys, members) => breaker.track(["SISMEMBER"], () => reader.contains(keys, members)),
    close: () => reader.close(),
  };
}

/** node-redis's reply mapping for values read as bytes. */
const BYTES = { [RESP_TYPES.BLOB_STRING]: Buffer };

/**
 * setBytes and getBytes through node-redis (Buffer arguments, Buffer replies), under the bulk
 * deadline; `send` routes by key on a cluster and ignores it standalone.
 */
function bytesThroughNodeRedis(
  breaker: StallBreaker,
  send: (key: string, args: (string | Buffer)[], options?: { typeMapping: typeof BYTES }) => Promise<unknown>,
): Pick<RedisConnection, "setBytes" | "getBytes"> {
  return {
    setBytes: async (entries) => {
      const sets = entries.map(([key, value]) => breaker.track(["SET"], () => send(key, ["SET", key, Buffer.from(value.buffer, value.byteOffset, value.byteLength)])));
      await withDeadline(Promise.all(sets), BULK_WINDOW_TIMEOUT_MS);
    },
    getBytes: (keys) =>
      withDeadline(Promise.all(keys.map((key) => breaker.track(["GET"], () => send(key, ["GET", key], { typeMapping: BYTES }) as Promise<Buffer | null>))), BULK_WINDOW_TIMEOUT_MS),
  };
}

/** SETs of byte values in RESP, for a BulkWriter: each value is copied once, into the one window written. */
function encodeSets(entries: readonly (readonly [key: string, value: Uint8Array])[]): EncodedCommands {
  const window = new CommandBuffer(entries.reduce((bytes, [key, value]) => bytes + value.byteLength + 3 * key.length + 64, 0));
  for (const [key, value] of entries) window.appendCommandWithBytes(["SET", key], value);
  return window.take();
}

/** The one message every Redis failure shows; the driver's error stays in `cause`. */
export function unavailable(cause: unknown): StoreUnavailableError {
  if (cause instanceof StoreUnavailableError) return cause;
  return new StoreUnavailableError("the store is unavailable", { cause });
}

/**
 * Issues each window of commands in one tick and awaits it before the next, so memory and Redis's
 * output buffers stay bounded; a window that outlives the deadline fails the whole send.
 */
async function sendInWindows(commands: readonly string[][], send: (args: string[]) => Promise<Reply>): Promise<Reply[]> {
  const replies: Reply[] = [];
  for (let i = 0; i < commands.length; i += COMMANDS_PER_WINDOW) {
    const window = commands.slice(i, i + COMMANDS_PER_WINDOW);
    for (const reply of await withDeadline(Promise.all(window.map(send)), BULK_WINDOW_TIMEOUT_MS)) replies.push(reply);
  }
  return replies;
}

/**
 * sendInWindows's bulk discipline for a BulkWriter of its own: one write per window, a window being at most
 * COMMANDS_PER_WINDOW commands and, since a window is encoded as one string, about ARGS_PER_WINDOW
 * arguments. A late window drops the connection.
 */
async function writeInWindows(commands: readonly string[][], writer: BulkWriter): Promise<void> {
  for (let start = 0; start < commands.length; ) {
    let end = start;
    for (let args = 0; end < commands.length && end - start < COMMANDS_PER_WINDOW && args < ARGS_PER_WINDOW; end++) args += commands[end]!.length;
    await writeWindow(writer, () => writer.write(commands.slice(start, end)));
    start = end;
  }
}

/** One window of a BulkWriter's writes, under the bulk deadline; a late window drops the connection. */
async function writeWindow(writer: BulkWriter, write: () => Promise<void>): Promise<void> {
  try {
    await withDeadline(write(), BULK_WINDOW_TIMEOUT_MS);
  } catch (error) {
    // Whatever the connection still carries is unknown now: a new one serves the next write.
    await writer.reset();
    throw error;
  }
}

/** Socket options of a cluster's node connections: the caller's policy for connecting and reconnecting. */
export interface ClusterSocketOptions {
  connectTimeout: number;
  reconnectStrategy: (retries: number) => number | false;
}

/**
 * A node-redis cluster client on `seeds`, connected, whose slot map follows failovers
 * (cluster-slots.ts); close() stops the watch and closes it. Every cluster client of relgraph (the
 * store's, the change feed's) is opened here. The seeds are PINGed at once first, and only those that
 * answer are given to node-redis (answeringSeeds). A start that fails rejects with
 * StoreUnavailableError and leaves no connection open: it would keep the process alive after it
 * reports the failure.
 */
export async function connectCluster(seeds: readonly string[], socket: ClusterSocketOptions) {
  const answering = await answeringSeeds(seeds);
  const cluster = createCluster({
    // The seeds are asked for the slot map whenever node-redis rediscovers it: a seed that stops
    // answering must fail that request rather than hold it (discoveryNode).
    rootNodes: answering.map(discoveryNode),
    defaults: { socket, disableOfflineQueue: true },
  });
  // Failures reach callers through rejected commands; without a listener node-redis's 'error'
  // events would crash the process.
  cluster.on("error", () => {});
  // A master that accepts connections and never answers would hold the start as long as it hangs.
  await connectOrThrow(() => withDeadline(cluster.connect(), CLUSTER_START_TIMEOUT_MS)).catch((error: unknown) => {
    // A start that failed (a master down, say, before its replica takes over) leaves the connections
    // it opened to the others; and node-redis's destroy() stops at the first node whose connection
    // is closed already.
    for (const node of [...cluster.masters, ...cluster.replicas]) destroyQuietly(() => node.client?.destroy());
    destroyQuietly(() => cluster.destroy());
    throw error;
  });
  const slots: SlotWatch = watchClusterSlots(cluster, seeds);
  return {
    cluster,
    /** The watch, for tests and for a caller that just saw a fault. */
    slots,
    close: () => {
      slots.close();
      return closeQuietly(() => cluster.close());
    },
  };
}

/**
 * The cluster's seeds that answer a PING, asked all at once; StoreUnavailableError when none does.
 * node-redis asks its seeds one after another, from a random one on, and waits on each for as long as
 * it takes: a node that accepts connections and never answers (a paused or hung process) held the
 * start for as long as it hung. The slot watch (cluster-slots.ts) still falls back on every seed later.
 */
async function answeringSeeds(seeds: readonly string[]): Promise<string[]> {
  let lastError: unknown = new Error("no cluster node was given");
  const answered = await Promise.all(
    seeds.map(async (seed) => {
      const client = createClient({ url: `redis://${seed}`, socket: { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: false } });
      client.on("error", () => {});
      try {
        // Longer than the connect timeout, so that a connection still being made is never dropped
        // (node-redis would not close it): a silent node is one that was reached and did not answer.
        await withDeadline(client.connect().then(() => client.sendCommand(["PING"])), 2 * CONNECT_TIMEOUT_MS);
        return true;
      } catch (error) {
        lastError = error;
        return false;
      } finally {
        destroyQuietly(() => client.destroy());
      }
    }),
  );
  const answering = seeds.filter((_, i) => answered[i]);
  if (answering.length === 0) throw unavailable(lastError);
  return answering;
}

async function connectOrThrow(connect: () => Promise<unknown>): Promise<void> {
  try {
    await connect();
  } catch (cause) {
    throw unavailable(cause);
  }
}

/** Drops a client's sockets at once; one that is closed already (a refused connection) throws, and is done. */
function destroyQuietly(destroy: () => void): void {
  try {
    destroy();
  } catch {
    // Already closed.
  }
}

/** close() is idempotent for callers: closing an already closed or broken client is not an error. */
export async function closeQuietly(close: () => Promise<void>): Promise<void> {
  try {
    await close();
  } catch {
    // Already closed, or the server is gone: either way nothing is left to release.
  }
}
