import { connect, type Socket } from "node:net";
import type { UserId } from "../../../domain/model.js";
import type { IdPage } from "../id-sets.js";
import { encodeCommands } from "./encoder.js";

/*
 * RESP2 over a socket of its own, speaking just enough of it for the engine's set reads
 * (id-set-reader.ts) and bulk writes (bulk-writer.ts) with FAST_PATHS on; node-redis serves everything else.
 */

/** Where a RespSocket connects: a `redis://` URL's parts. */
export interface RespEndpoint {
  host: string;
  port: number;
  username: string;
  password: string;
  db: number;
}

/** The RespEndpoint of a `redis://` URL; null for any other scheme (TLS, unix socket), which node-redis serves. */
export function respEndpointOf(url: string): RespEndpoint | null {
  const parsed = new URL(url);
  if (parsed.protocol !== "redis:") return null;
  const db = parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : 0;
  if (!Number.isSafeInteger(db) || db < 0) return null;
  return {
    // An IPv6 host comes bracketed in a URL, and net.connect wants it bare.
    host: (parsed.hostname || "localhost").replace(/^\[(.*)\]$/, "$1"),
    port: parsed.port === "" ? 6379 : Number(parsed.port),
    username: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    db,
  };
}

/**
 * Thrown when Redis's reply stream holds something a set read cannot be: a member that is not a
 * UserId, or a reply of the wrong shape. The connection is dropped, as the stream can no longer be
 * trusted to line up with the commands sent.
 */
export class UnexpectedReplyError extends Error {
  override name = "UnexpectedReplyError";
}

/** Thrown when Redis answers a command with an error reply (the reply's text is the message). */
export class RedisReplyError extends Error {
  override name = "RedisReplyError";
}

/**
 * What a command's reply must be: an integer, a set of UserIds, an SSCAN page of UserIds, the +OK of
 * a handshake command, or any reply but an error (a write, whose reply is only checked).
 */
export type Expect = "integer" | "ids" | "page" | "ok" | "any";
/** A parsed reply: what the command was expected to answer, or the error Redis answered instead. */
export type Reply = number | UserId[] | IdPage | string | RedisReplyError;

/** Commands sent together and answered together: one promise per round trip, not one per command. */
interface Batch {
  expect: Expect;
  replies: Reply[];
  remaining: number;
  resolve(replies: Reply[]): void;
  reject(error: Error): void;
}

const EMPTY = Buffer.alloc(0);
const CR = 13;
const ZERO = 48;
const NINE = 57;
const MINUS = 45;
const DOLLAR = 36;
const STAR = 42;
const PLUS = 43;
const COLON = 58;
/** Digits of the largest safe integer: a longer member cannot be a UserId. */
const MAX_ID_DIGITS = 15;
/** Settled batches kept at the queue's head before it is compacted. */
const COMPACT_AFTER = 1_024;
/** parseReply's answer when the buffered bytes end inside the reply. */
const INCOMPLETE = -1;

/** One connection and the batches waiting on it, in the order their commands were sent. */
export class RespSocket {
  broken = false;
  /** Why and when (performance.now()) the link failed before it was ready: refused, timed out, or its AUTH or SELECT refused. */
  connectFailure: { error: Error; at: number } | null = null;
  private connected = false;
  private readonly socket: Socket;
  private readonly waiting: Batch[] = [];
  private head = 0;
  private buffered: Buffer = EMPTY;
  /** Commands not written yet: everything enqueued in one turn of the event loop goes out in one write. */
  private outgoing = "";
  /** The reply parseReply just read. */
  private value: Reply = 0;

  constructor(endpoint: RespEndpoint, connectTimeoutMs: number) {
    const socket = connect({ host: endpoint.host, port: endpoint.port, noDelay: true });
    const timer = setTimeout(() => socket.destroy(new Error(`no connection to Redis within ${connectTimeoutMs} ms`)), connectTimeoutMs);
    socket.once("connect", () => {
      this.connected = true;
      clearTimeout(timer);
    });
    socket.on("data", (chunk: Buffer) => this.received(chunk));
    socket.on("error", (error) => this.fail(error));
    socket.on("close", () => {
      clearTimeout(timer);
      this.fail(new Error("the connection to Redis closed"));
    });
    this.socket = socket;
    // Writes before the connection is up are buffered by the socket, so the handshake and the first
    // reads go out together. A refused handshake fails the link, and with it those reads (settle).
    const handshake: string[][] = [];
    if (endpoint.password !== "") handshake.push(endpoint.username === "" ? ["AUTH", endpoint.password] : ["AUTH", endpoint.username, endpoint.password]);
    if (endpoint.db !== 0) handshake.push(["SELECT", String(endpoint.db)]);
    for (const args of handshake) {
      this.enqueue([args], "ok").catch(() => {});
    }
  }

  close(): Promise<void> {
    this.broken = true;
    if (this.socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once("close", () => resolve());
      this.socket.destroy();
    });
  }

  /** Sends commands (each its own argument list) and resolves with their replies, all of one expected kind. */
  enqueue(commands: readonly string[][], expect: Expect): Promise<Reply[]> {
    return this.enqueueEncoded(encodeCommands(commands), commands.length, expect);
  }

  /**
   * The same for `count` commands already in RESP form: as one string, or as bytes (a bulk writer's
   * window), which go to the socket as they are, after any text enqueued before them.
   */
  enqueueEncoded(encoded: string | Uint8Array, count: number, expect: Expect): Promise<Reply[]> {
    if (this.broken) return Promise.reject(new Error("the connection to Redis failed"));
    return new Promise((resolve, reject) => {
      this.waiting.push({ expect, replies: [], remaining: count, resolve, reject });
      if (typeof encoded !== "string") {
        this.flush();
        this.socket.write(encoded);
        return;
      }
      // A recommendation sends ten batches, and the requests served in one turn send theirs too: one
      // write (one syscall, one wake-up of Redis) for them all instead of a write per batch, which cost
      // more than parsing their replies.
      if (this.outgoing === "") setImmediate(() => this.flush());
      this.outgoing += encoded;
    });
  }

  private flush(): void {
    const text = this.outgoing;
    this.outgoing = "";
    if (!this.broken && text !== "") this.socket.write(text);
  }

  /** Rejects everything waiting; the reader opens a new link for the next call. */
  private fail(error: Error): void {
    if (!this.connected && !this.broken) this.connectFailure = { error, at: performance.now() };
    this.broken = true;
    if (!this.socket.destroyed) this.socket.destroy();
    const waiting = this.waiting.splice(this.head);
    this.waiting.length = 0;
    this.head = 0;
    this.buffered = EMPTY;
    this.outgoing = "";
    for (const batch of waiting) batch.reject(error);
  }

  private received(chunk: Buffer): void {
    const bytes = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    let at = 0;
    try {
      while (this.head < this.waiting.length) {
        const batch = this.waiting[this.head]!;
        const next = this.parseReply(bytes, at, batch.expect);
        if (next === INCOMPLETE) break;
        at = next;
        batch.replies.push(this.value);
        if (--batch.remaining === 0) {
          this.head++;
          if (!this.settle(batch)) return;
        }
      }
    } catch (error) {
      this.fail(error as Error);
      return;
    }
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    } else if (this.head >= COMPACT_AFTER) {
      // Under steady load the queue may never drain: drop the settled batches now and then.
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
    // A partial reply is parsed again from its start once the rest arrives: replies are bounded
    // sets, so this costs a few re-reads at most.
    this.buffered = at === bytes.length ? EMPTY : bytes.subarray(at);
  }

  /** Resolves or rejects a batch whose replies are all in; false when that failed the whole link. */
  private settle(batch: Batch): boolean {
    const failure = batch.replies.find((reply) => reply instanceof RedisReplyError);
    if (failure === undefined) {
      batch.resolve(batch.replies);
      return true;
    }
    batch.reject(failure);
    // A refused AUTH or SELECT: the reads sent behind it must not run as another user or database,
    // and retrying at once would be refused again.
    if (batch.expect === "ok") {
      this.connectFailure = { error: failure, at: performance.now() };
      this.fail(failure);
    }
    return batch.expect !== "ok";
  }

  /** Reads one reply at `at` into this.value; returns the offset after it, or INCOMPLETE. */
  private parseReply(bytes: Buffer, at: number, expect: Expect): number {
    const lineEnd = endOfLine(bytes, at);
    if (lineEnd === INCOMPLETE) return INCOMPLETE;
    const type = String.fromCharCode(bytes[at]!);
    if (type === "-") {
      this.value = new RedisReplyError(bytes.toString("utf8", at + 1, lineEnd));
      return lineEnd + 2;
    }
    if (expect === "ok" && type === "+") {
      this.value = bytes.toString("utf8", at + 1, lineEnd);
      return lineEnd + 2;
    }
    if (expect === "integer" && type === ":") {
      this.value = parseDecimal(bytes, at + 1, lineEnd);
      return lineEnd + 2;
    }
    if (expect === "ids" && type === "*") {
      const count = parseDecimal(bytes, at + 1, lineEnd);
      return this.parseIds(bytes, lineEnd + 2, count);
    }
    if (expect === "page" && type === "*") return this.parsePage(bytes, at, lineEnd);
    if (expect === "any") {
      this.value = 0;
      return skipReply(bytes, at);
    }
    throw new UnexpectedReplyError(`Redis replied with a "${type}" reply where a set read expected ${expect}`);
  }

  /** "*2", the cursor as a bulk string, then the members as parseIds reads them. */
  private parsePage(bytes: Buffer, at: number, lineEnd: number): number {
    if (parseDecimal(bytes, at + 1, lineEnd) !== 2) throw new UnexpectedReplyError("an SSCAN reply is not a cursor and a page");
    const cursorAt = lineEnd + 2;
    const cursorLineEnd = endOfLine(bytes, cursorAt);
    if (cursorLineEnd === INCOMPLETE) return INCOMPLETE;
    if (bytes[cursorAt] !== DOLLAR) throw new UnexpectedReplyError("an SSCAN cursor is not a bulk string");
    const cursorStart = cursorLineEnd + 2;
    const cursorEnd = cursorStart + parseDecimal(bytes, cursorAt + 1, cursorLineEnd);
    const membersAt = cursorEnd + 2;
    const membersLineEnd = membersAt < bytes.length ? endOfLine(bytes, membersAt) : INCOMPLETE;
    if (membersLineEnd === INCOMPLETE) return INCOMPLETE;
    if (bytes[membersAt] !== STAR) throw new UnexpectedReplyError("an SSCAN page is not an array");
    const next = this.parseIds(bytes, membersLineEnd + 2, parseDecimal(bytes, membersAt + 1, membersLineEnd));
    if (next === INCOMPLETE) return INCOMPLETE;
    // Kept as text: a cursor is an unsigned 64-bit number, past what a double holds exactly.
    this.value = { cursor: bytes.toString("latin1", cursorStart, cursorEnd), ids: this.value as UserId[] };
    return next;
  }

  private parseIds(bytes: Buffer, start: number, count: number): number {
    const ids: UserId[] = new Array<UserId>(count);
    let at = start;
    for (let i = 0; i < count; i++) {
      // "$<length>\r\n<digits>\r\n", scanned by hand: this loop runs for every member read.
      if (at >= bytes.length) return INCOMPLETE;
      if (bytes[at] !== DOLLAR) throw new UnexpectedReplyError("a set member reply is not a bulk string");
      let length = 0;
      let digitsAt = at + 1;
      for (; digitsAt < bytes.length && bytes[digitsAt] !== CR; digitsAt++) length = length * 10 + digitOf(bytes[digitsAt]!);
      const begin = digitsAt + 2;
      if (begin + length + 2 > bytes.length) return INCOMPLETE;
      if (length === 0 || length > MAX_ID_DIGITS) throw new UnexpectedReplyError("a set member is not a user id");
      let id = 0;
      for (let d = begin; d < begin + length; d++) id = id * 10 + digitOf(bytes[d]!);
      ids[i] = id;
      at = begin + length + 2;
    }
    this.value = ids;
    return at;
  }
}

/** The offset after the reply (of any type, errors aside) that starts at `at`, or INCOMPLETE. */
function skipReply(bytes: Buffer, at: number): number {
  const lineEnd = endOfLine(bytes, at);
  if (lineEnd === INCOMPLETE) return INCOMPLETE;
  const type = bytes[at];
  if (type === DOLLAR) {
    if (bytes[at + 1] === MINUS) return lineEnd + 2;
    const end = lineEnd + 2 + parseDecimal(bytes, at + 1, lineEnd) + 2;
    return end > bytes.length ? INCOMPLETE : end;
  }
  if (type === STAR) {
    if (bytes[at + 1] === MINUS) return lineEnd + 2;
    let next = lineEnd + 2;
    for (let count = parseDecimal(bytes, at + 1, lineEnd); count > 0 && next !== INCOMPLETE; count--) next = skipReply(bytes, next);
    return next;
  }
  if (type === PLUS || type === COLON) return lineEnd + 2;
  throw new UnexpectedReplyError(`Redis replied with a "${String.fromCharCode(type ?? 0)}" reply to a write`);
}

/**
 * The offset of the CR ending the line that starts at `at`, or INCOMPLETE when its CRLF has not
 * arrived. Scanned by hand: a reply's line is a few bytes, and Buffer#indexOf's argument checks and
 * native call made it most of the cost of reading a write's replies (one ":1" per command).
 */
function endOfLine(bytes: Buffer, at: number): number {
  const length = bytes.length;
  let cr = at;
  while (cr < length && bytes[cr] !== CR) cr++;
  return cr + 1 >= length ? INCOMPLETE : cr;
}

/** A non-negative decimal; RESP's "-1" (a null reply) reads as 0, an empty set. */
function parseDecimal(bytes: Buffer, from: number, to: number): number {
  if (to - from === 2 && bytes[from] === MINUS && bytes[from + 1] === ZERO + 1) return 0;
  if (to === from) throw new UnexpectedReplyError("Redis sent an empty number");
  let value = 0;
  for (let i = from; i < to; i++) value = value * 10 + digitOf(bytes[i]!);
  return value;
}

function digitOf(byte: number): number {
  if (byte < ZERO || byte > NINE) throw new UnexpectedReplyError("Redis sent a number that is not a non-negative decimal");
  return byte - ZERO;
}
