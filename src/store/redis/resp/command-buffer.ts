import { bulkString } from "./encoder.js";

/*
 * RESP as bytes, for a BulkWriter of its own (BulkWriter.writeEncoded): the store's planned writes
 * that are too many (grouped edge writes) or too large (the journal's chunks) to go as argument
 * arrays of strings. Nothing here builds a string per argument that the socket would convert again.
 */

/**
 * Commands already in RESP's array-of-bulk-strings form, as bytes, and how many they are: what a
 * planner that encodes as it goes (CommandBuffer) hands a BulkWriter. The writer
 * owns the bytes from then on: the planner never writes them again.
 */
export interface EncodedCommands {
  bytes: Uint8Array;
  count: number;
}

const EMPTY = Buffer.alloc(0);

/**
 * RESP commands appended as bytes, for a BulkWriter: take() hands over what is there and starts an
 * empty window, so the bytes a writer holds are never written again.
 */
export class CommandBuffer {
  /** The bytes so far: the first `length` of `bytes`. */
  bytes: Buffer;
  length = 0;
  /** Commands so far. */
  count = 0;

  /** @param capacity the bytes a window starts with, allocated at its first append. */
  constructor(private readonly capacity = 1 << 20) {
    this.bytes = EMPTY;
  }

  /** Makes room for `extra` more bytes; returns the (possibly new) buffer to write them to. */
  reserve(extra: number): Buffer {
    this.bytes = withRoom(this.bytes, this.length, this.length + extra, this.capacity);
    return this.bytes;
  }

  /** Appends a text as UTF-8. */
  appendText(text: string): void {
    this.length += this.reserve(3 * text.length).write(text, this.length);
  }

  /** Appends bytes as they are. */
  appendBytes(bytes: Uint8Array): void {
    this.reserve(bytes.byteLength).set(bytes, this.length);
    this.length += bytes.byteLength;
  }

  /** Appends a RESP array header, `*count` and CRLF: the start of a command of `count` arguments. */
  appendArrayHeader(count: number): void {
    const out = this.reserve(MAX_DECIMAL_DIGITS + 3);
    out[this.length] = STAR;
    this.length = endLine(out, writeDecimal(out, this.length + 1, count));
  }

  /**
   * Appends a text as a RESP bulk string (what bulkString spells). Written here byte by byte: the
   * keys of a unit's commands are hundreds of thousands of short ASCII texts, and making each one's
   * bulk string as a string and converting that to UTF-8 cost more than the rest of its command.
   */
  appendBulkString(text: string): void {
    const length = text.length;
    const out = this.reserve(length + MAX_DECIMAL_DIGITS + 5);
    out[this.length] = DOLLAR;
    let at = endLine(out, writeDecimal(out, this.length + 1, length));
    for (let k = 0; k < length; k++) {
      const code = text.charCodeAt(k);
      // Not ASCII: its UTF-8 length differs from its length, and the general path writes it.
      if (code >= 0x80) return this.appendText(bulkString(text));
      out[at++] = code;
    }
    this.length = endLine(out, at);
  }

  /**
   * Appends, as one RESP bulk string, `prefix` (ASCII) followed by `value` (a non-negative integer)
   * in decimal: a per-user key, written without making its text, which cost as much as the rest of
   * a grouped command.
   */
  appendPrefixedDecimal(prefix: Uint8Array, value: number): void {
    const digits = decimalDigits(value);
    const out = this.reserve(prefix.length + digits + MAX_DECIMAL_DIGITS + 5);
    out[this.length] = DOLLAR;
    let at = endLine(out, writeDecimal(out, this.length + 1, prefix.length + digits));
    for (let k = 0; k < prefix.length; k++) out[at++] = prefix[k]!;
    this.length = endLine(out, writeDecimal(out, at, value));
  }

  /** Appends one command whose arguments are texts. */
  appendCommand(texts: readonly string[]): void {
    this.appendArrayHeader(texts.length);
    for (const text of texts) this.appendBulkString(text);
    this.count++;
  }

  /** Appends one command whose arguments are texts, but for its last, which is bytes (a SET of a byte value). */
  appendCommandWithBytes(texts: readonly string[], bytes: Uint8Array): void {
    let head = `*${texts.length + 1}\r\n`;
    for (const text of texts) head += bulkString(text);
    this.appendText(`${head}$${bytes.byteLength}\r\n`);
    this.appendBytes(bytes);
    this.appendText("\r\n");
    this.count++;
  }

  /** The commands so far, which the window forgets. */
  take(): EncodedCommands {
    const taken = { bytes: this.bytes.subarray(0, this.length), count: this.count };
    this.bytes = EMPTY;
    this.length = 0;
    this.count = 0;
    return taken;
  }
}

/**
 * RESP bulk strings of texts by index, each encoded on first use into one pool of bytes and copied
 * from there: a member sent to many keys is encoded once, and a copy of its few bytes by hand costs
 * less than any call into the runtime.
 */
export class BulkStrings {
  private pool: Buffer = Buffer.allocUnsafe(1 << 16);
  private used = 0;
  /** Where each text's bulk string starts in the pool, -1 before its first use; and where it ends. */
  private readonly starts: Int32Array;
  private readonly ends: Int32Array;

  constructor(private readonly texts: readonly string[]) {
    this.starts = new Int32Array(texts.length).fill(-1);
    this.ends = new Int32Array(texts.length);
  }

  /** Appends the bulk string of texts[index] to the window. */
  appendTo(window: CommandBuffer, index: number): void {
    let from = this.starts[index]!;
    if (from < 0) from = this.encode(index);
    const to = this.ends[index]!;
    const out = window.reserve(to - from);
    const pool = this.pool;
    let at = window.length;
    if (to - from <= 64) {
      for (let k = from; k < to; k++) out[at++] = pool[k]!;
    } else {
      out.set(pool.subarray(from, to), at);
      at += to - from;
    }
    window.length = at;
  }

  private encode(index: number): number {
    const bulk = bulkString(this.texts[index]!);
    this.pool = withRoom(this.pool, this.used, this.used + 3 * bulk.length);
    const from = this.used;
    this.used += this.pool.write(bulk, from);
    this.starts[index] = from;
    this.ends[index] = this.used;
    return from;
  }
}

/**
 * `buffer` when it holds `needed` bytes, else a larger one (at least double, and `least`) holding its
 * first `used` bytes: appends cost amortized constant time.
 */
function withRoom(buffer: Buffer, used: number, needed: number, least = 0): Buffer {
  if (needed <= buffer.length) return buffer;
  const bigger = Buffer.allocUnsafe(Math.max(needed, 2 * buffer.length, least));
  buffer.copy(bigger, 0, 0, used);
  return bigger;
}

const STAR = 0x2a;
const DOLLAR = 0x24;
const CR = 0x0d;
const LF = 0x0a;
/** Digits of the largest count or length a window writes (a safe integer has 16). */
const MAX_DECIMAL_DIGITS = 16;

/** How many decimal digits `value` (a non-negative integer) has. Powers of ten are exact doubles up to 10^22. */
function decimalDigits(value: number): number {
  let digits = 1;
  for (let power = 10; value >= power; power *= 10) digits++;
  return digits;
}

/**
 * Writes `value` (a non-negative integer) in decimal at `at`; returns the offset after it. Values
 * below 2^31, every id and length a window writes, take 32-bit integer steps rather than
 * floating-point division.
 */
function writeDecimal(out: Buffer, at: number, value: number): number {
  const end = at + decimalDigits(value);
  let p = end - 1;
  for (; value > 0x7fffffff; p--) {
    out[p] = 0x30 + (value % 10);
    value = Math.floor(value / 10);
  }
  for (; p >= at; p--) {
    const rest = (value / 10) | 0;
    out[p] = 0x30 + value - rest * 10;
    value = rest;
  }
  return end;
}

/** Writes CRLF at `at`; returns the offset after it. */
function endLine(out: Buffer, at: number): number {
  out[at] = CR;
  out[at + 1] = LF;
  return at + 2;
}
