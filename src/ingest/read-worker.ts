import { parentPort, workerData } from "node:worker_threads";
import { LineTokenizer, type TokenBatch } from "./line-tokens.js";
import { readFileRangeLines, type ByteRange } from "./read-lines.js";

/*
 * The worker that reads the second part of a large file (split-read.ts): its lines as tokens
 * (line-tokens.ts), in batches, then how many lines it read.
 */

/** What the worker is given. */
export interface ReadWorkerData {
  path: string;
  range: ByteRange;
}

/** What the worker posts: batches in line order, then the end or the reason it stopped. */
export type ReadWorkerMessage = { batch: TokenBatch } | { lines: number } | { error: string; code?: string };

const { path, range } = workerData as ReadWorkerData;
const port = parentPort!;
const tokenizer = new LineTokenizer();
const post = (batch: TokenBatch) => port.postMessage({ batch } satisfies ReadWorkerMessage, [batch.tokens.buffer]);

readFileRangeLines(path, range, (bytes, start, end, line) => {
  tokenizer.add(bytes, start, end, line);
  if (tokenizer.full) post(tokenizer.take());
}).then(
  (lines) => {
    post(tokenizer.take());
    port.postMessage({ lines } satisfies ReadWorkerMessage);
  },
  (error: unknown) => {
    port.postMessage({ error: error instanceof Error ? error.message : String(error), code: (error as NodeJS.ErrnoException).code } satisfies ReadWorkerMessage);
  },
);
