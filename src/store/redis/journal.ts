import { randomUUID } from "node:crypto";
import type { RedisConnection } from "./connection.js";
import { JOURNAL, journalChunkKey } from "./keys.js";

/**
 * The write journal: a planned unit of changes saved in Redis before its first change is applied,
 * so that a writer killed at any point (SIGKILL, out of memory, Redis gone) leaves behind everything
 * needed to finish its work. The next writer, whichever process it is, applies the journalled unit
 * again before anything else: every planned command is absolute (SADD, SREM, HSET, HDEL, SET, DEL of
 * values fixed when the unit was planned), so applying it again over a partly applied state ends in
 * the state one whole application gives.
 *
 * Layout: a header (keys.ts JOURNAL) saying which unit and how many chunks, written first as
 * "writing" and then as "committed" once every chunk is in; chunks of the encoded unit under keys of
 * their own (on a cluster they spread over the nodes). A unit whose header never got to "committed"
 * was never applied at all, and is discarded.
 */

/** One named part of a journalled unit: JSON, or a typed array kept as its bytes. */
export type JournalPart = Uint32Array | Float64Array | { json: unknown };

/** A unit found in the journal, and how to drop it once it is applied. */
export interface JournalledUnit {
  parts: Map<string, JournalPart>;
  /** Deletes the journal; called once the unit is fully applied. */
  clear(): Promise<void>;
}

interface Header {
  unit: string;
  chunks: number;
  state: "writing" | "committed";
  bytes: number;
  savedAt: string;
  /**
   * How chunks hold the unit's bytes: "bytes" as they are; absent in journals of earlier versions,
   * which kept them as base64 text. Base64 cost a third more bytes, and encoding them, and writing
   * them as text, was most of the journal's time.
   */
  encoding?: "bytes";
}

interface PartEntry {
  name: string;
  kind: "json" | "u32" | "f64";
  bytes: number;
}

/** Bytes per chunk: a few MB, so that no single command holds Redis for long. */
const CHUNK_BYTES = 4 * 1024 * 1024;

/** Saves a unit and commits it; resolves with the unit's handle for clearing it once applied. */
export async function saveJournal(redis: RedisConnection, parts: Map<string, JournalPart>): Promise<JournalledUnit> {
  const encoded = encode(parts);
  const unit = randomUUID();
  const chunks = Math.max(1, Math.ceil(encoded.length / CHUNK_BYTES));
  const header = (state: Header["state"]): string =>
    JSON.stringify({ unit, chunks, state, bytes: encoded.length, savedAt: new Date().toISOString(), encoding: "bytes" } satisfies Header);
  await redis.send(JOURNAL, ["SET", JOURNAL, header("writing")]);
  const entries: [string, Uint8Array][] = [];
  for (let n = 0; n < chunks; n++) entries.push([journalChunkKey(unit, n), encoded.subarray(n * CHUNK_BYTES, (n + 1) * CHUNK_BYTES)]);
  // A few chunks at a time: each is megabytes.
  for (let start = 0; start < entries.length; start += 4) await redis.setBytes(entries.slice(start, start + 4));
  await redis.send(JOURNAL, ["SET", JOURNAL, header("committed")]);
  return { parts, clear: () => clearUnit(redis, unit, chunks, header("writing")) };
}

/**
 * The committed unit an interrupted writer left, or null. A unit that was still being saved was
 * never applied: it is discarded here.
 */
export async function loadJournal(redis: RedisConnection): Promise<JournalledUnit | null> {
  const text = await redis.send<string | null>(JOURNAL, ["GET", JOURNAL]);
  if (text === null) return null;
  const header = JSON.parse(text) as Header;
  if (header.state !== "committed") {
    await clearUnit(redis, header.unit, header.chunks, null);
    return null;
  }
  const keys = Array.from({ length: header.chunks }, (_, n) => journalChunkKey(header.unit, n));
  const chunks = header.encoding === "bytes" ? await redis.getBytes(keys) : (await redis.getMany(keys)).map((text) => (text === null ? null : Buffer.from(text, "base64")));
  if (chunks.some((chunk) => chunk === null)) {
    throw new Error(`the write journal of unit ${header.unit} is incomplete (${chunks.filter((c) => c === null).length} of ${header.chunks} chunks missing)`);
  }
  const encoded = Buffer.concat(chunks as Buffer[]);
  if (encoded.length !== header.bytes) {
    throw new Error(`the write journal of unit ${header.unit} is damaged (${encoded.length} bytes where ${header.bytes} were saved)`);
  }
  return { parts: decode(encoded), clear: () => clearUnit(redis, header.unit, header.chunks, JSON.stringify({ ...header, state: "writing" } satisfies Header)) };
}

/**
 * Drops a unit's chunks, then its header. A committed header first stops saying "committed"
 * (`uncommitted`, null when it never did): a writer killed once some chunks are gone then leaves a
 * unit the next writer discards, where a committed header without its chunks would be refused by
 * every later writer, and the store's writes would stop for good.
 */
async function clearUnit(redis: RedisConnection, unit: string, chunks: number, uncommitted: string | null): Promise<void> {
  if (uncommitted !== null) await redis.send(JOURNAL, ["SET", JOURNAL, uncommitted]);
  await redis.writeAll(Array.from({ length: chunks }, (_, n) => ["DEL", journalChunkKey(unit, n)]));
  await redis.send(JOURNAL, ["DEL", JOURNAL]);
}

/**
 * [u32 length of the table][table JSON][each part's bytes, in table order], written into one buffer
 * sized first: a unit's JSON is tens of MB, and encoding each part on its own and then joining them
 * copied all of it twice more.
 */
function encode(parts: Map<string, JournalPart>): Buffer {
  const table: PartEntry[] = [];
  const bodies: (Uint8Array | string)[] = [];
  for (const [name, part] of parts) {
    if (part instanceof Uint32Array || part instanceof Float64Array) {
      table.push({ name, kind: part instanceof Uint32Array ? "u32" : "f64", bytes: part.byteLength });
      bodies.push(new Uint8Array(part.buffer, part.byteOffset, part.byteLength));
    } else {
      const json = JSON.stringify(part.json);
      table.push({ name, kind: "json", bytes: Buffer.byteLength(json) });
      bodies.push(json);
    }
  }
  const head = JSON.stringify(table);
  const headBytes = Buffer.byteLength(head);
  const encoded = Buffer.allocUnsafe(4 + headBytes + table.reduce((sum, entry) => sum + entry.bytes, 0));
  encoded.writeUInt32LE(headBytes, 0);
  let at = 4 + encoded.write(head, 4);
  for (const body of bodies) {
    if (typeof body === "string") at += encoded.write(body, at);
    else {
      encoded.set(body, at);
      at += body.byteLength;
    }
  }
  return encoded;
}

function decode(encoded: Buffer): Map<string, JournalPart> {
  const headLength = encoded.readUInt32LE(0);
  const table = JSON.parse(encoded.subarray(4, 4 + headLength).toString("utf8")) as PartEntry[];
  const parts = new Map<string, JournalPart>();
  let at = 4 + headLength;
  for (const { name, kind, bytes } of table) {
    // Copied out: typed arrays need an aligned buffer of their own.
    const body = new Uint8Array(encoded.subarray(at, at + bytes));
    at += bytes;
    if (kind === "u32") parts.set(name, new Uint32Array(body.buffer, 0, bytes / 4));
    else if (kind === "f64") parts.set(name, new Float64Array(body.buffer, 0, bytes / 8));
    else parts.set(name, { json: JSON.parse(Buffer.from(body).toString("utf8")) });
  }
  return parts;
}
