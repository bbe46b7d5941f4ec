import { closeSync, openSync, writeSync } from "node:fs";
import net from "node:net";
import { isMainThread } from "node:worker_threads";

/*
 * A lab instrument, loaded into a relgraph process with `node --import`: every byte the process
 * writes to the Redis server on port RESP_TEE_PORT is also appended to RESP_TEE_FILE. Replayed with
 * `redis-cli --pipe` over a copy of the same store, the file gives Redis the whole work of the run
 * (reads, journal, apply) with no writer at all: what redis-ceiling.ts measures.
 *
 * Writes are copied whole, in the order they are made. A command's writes are made in one
 * synchronous stretch (node-redis writes a command's pieces together; relgraph's own connections
 * write whole windows of commands), so the commands of several connections never interleave inside
 * one command, and the file is a valid stream of commands in the order the writer sent them.
 */

const port = Number(process.env.RESP_TEE_PORT);
const file = process.env.RESP_TEE_FILE;
if (!Number.isInteger(port) || port <= 0 || !file) {
  throw new Error("resp-tee: set RESP_TEE_PORT (the Redis port) and RESP_TEE_FILE (where the bytes go)");
}

// `--import` loads this into every worker thread too, and a second copy would truncate the file the
// main thread writes. Only the main thread talks to Redis (ingest's workers read files): the copy
// in a worker stands aside.
const out = isMainThread ? openSync(file, "w") : -1;
if (isMainThread) process.once("exit", () => closeSync(out));
/** Sockets connected (or connecting) to the port: a socket's remote port is unknown until it connects, and writes made before then are buffered by Node, not lost. */
const toRedis = new WeakSet<net.Socket>();

const connect = net.Socket.prototype.connect as (this: net.Socket, ...args: unknown[]) => net.Socket;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
  const target = typeof first === "object" && first !== null ? Number((first as { port?: unknown }).port) : Number(first);
  if (target === port) toRedis.add(this);
  return connect.apply(this, args);
} as typeof net.Socket.prototype.connect;

const write = net.Socket.prototype.write as (this: net.Socket, ...args: unknown[]) => boolean;
net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
  if (out !== -1 && toRedis.has(this)) {
    const [chunk, encoding] = args;
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8") : (chunk as Uint8Array);
    writeSync(out, bytes);
  }
  return write.apply(this, args);
} as typeof net.Socket.prototype.write;
