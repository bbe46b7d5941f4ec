import { existsSync } from "node:fs";
import { setImmediate as nextTurn } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { TokenBatch } from "./line-tokens.js";
import { readByteLines, readFileRangeLines, splitAfterLineFeed, type ByteLineHandler } from "./read-lines.js";
import type { ReadWorkerData, ReadWorkerMessage } from "./read-worker.js";

/*
 * A large file read by two threads: this one reads its first part line by line while a worker turns
 * the rest into tokens (line-tokens.ts), which this thread then takes in line order. Validation stays
 * on this thread and in load order; what moves to the other core is finding the parts of the compact
 * lines and numbering their names, most of a load's reading (bench/README.md, "The Redis ceiling").
 */

/** Files from this size up are read by two threads: below it, starting a worker costs more than it saves. */
export const SPLIT_FILES_FROM = 4 * 1024 * 1024;

/**
 * The share of a file this thread reads itself: it also takes the worker's tokens afterwards, which
 * costs it a fraction of reading those lines, so it reads less than half.
 */
const OWN_SHARE = 0.45;

const WORKER_FILE = new URL("./read-worker.js", import.meta.url);

/**
 * Reads a file of `size` bytes: lines of its first part through onLine, then the rest as token
 * batches through onTokens, with the number of lines before them; resolves with the number of
 * lines. A file smaller than `splitFrom`, or with no line break past its first part, is read by
 * onLine alone, as readByteLines reads it; so is every file when the worker's module is absent
 * (the sources run by a test runner).
 */
export async function readFileInTwo(
  path: string,
  size: number,
  onLine: ByteLineHandler,
  onTokens: (batch: TokenBatch, lineOffset: number) => void,
  splitFrom = SPLIT_FILES_FROM,
): Promise<number> {
  const cut = size >= splitFrom && existsSync(fileURLToPath(WORKER_FILE)) ? await splitAfterLineFeed(path, Math.floor(size * OWN_SHARE)) : null;
  if (cut === null || cut >= size) return readByteLines(path, onLine);
  const rest = new RestReader({ path, range: { start: cut, end: Number.POSITIVE_INFINITY } });
  try {
    const firstLines = await readFileRangeLines(path, { start: 0, end: cut }, onLine);
    for (;;) {
      const message = await rest.next();
      if ("batch" in message) {
        onTokens(message.batch, firstLines);
        // Batches the worker queued up are taken without the event loop turning otherwise: a turn
        // after each lets the store's connections read their replies, and their deadlines see them.
        await nextTurn();
      } else if ("lines" in message) return firstLines + message.lines;
      else throw Object.assign(new Error(message.error), message.code === undefined ? {} : { code: message.code });
    }
  } finally {
    await rest.stop();
  }
}

/** The worker reading the rest of a file, and its messages queued until they are taken. */
class RestReader {
  private readonly worker: Worker;
  private readonly queue: ReadWorkerMessage[] = [];
  private waiting: ((message: ReadWorkerMessage) => void) | null = null;
  private ended = false;

  constructor(data: ReadWorkerData) {
    this.worker = new Worker(WORKER_FILE, { workerData: data });
    const deliver = (message: ReadWorkerMessage) => {
      if ("lines" in message || "error" in message) this.ended = true;
      const waiting = this.waiting;
      this.waiting = null;
      if (waiting) waiting(message);
      else this.queue.push(message);
    };
    this.worker.on("message", deliver);
    this.worker.on("error", (error) => !this.ended && deliver({ error: `reading on a worker failed: ${error.message}` }));
    this.worker.on("exit", (code) => !this.ended && deliver({ error: `the reading worker stopped (exit ${code})` }));
  }

  /** The next message, in the order the worker posted them. */
  next(): Promise<ReadWorkerMessage> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => (this.waiting = resolve));
  }

  async stop(): Promise<void> {
    this.ended = true;
    await this.worker.terminate();
  }
}
