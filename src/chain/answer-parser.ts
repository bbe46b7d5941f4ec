import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

/**
 * Where JSON-RPC answers are parsed. Full blocks and their logs are large (every transaction's
 * input and signature, every log's bloom-era fields), and the indexer reads only a few fields of
 * each: parsing them whole on the indexer's one thread, and collecting what the parse built, was
 * most of a backfill's work. A parse may keep of each result only what a projection names (the
 * fields answers.ts checks, nothing less), and may run on worker threads, so that the indexer's
 * thread receives small objects and goes on planning and writing meanwhile. What is kept is
 * checked exactly as before: a projection drops fields, never judges them.
 */

/** The results a parse reduces: full blocks (eth_getBlockByNumber) or logs (eth_getLogs). */
export type Projection = "block" | "logs";

/** Parses answers' bytes; rejects when they are not JSON. */
export interface AnswerParser {
  /** The answer (one JSON-RPC object, or a batch's array) with each result reduced by `projection`. */
  parse(bytes: ArrayBuffer, projection: Projection | undefined): Promise<unknown>;
  /** Stops the worker threads, if any. */
  close(): Promise<void>;
}

type Fields = Record<string, unknown>;

const isObject = (value: unknown): value is Fields => typeof value === "object" && value !== null && !Array.isArray(value);

/** The fields of readBlock: the block's number and hashes, and each transaction's hash, ends and block hash. */
function projectBlock(block: unknown): unknown {
  if (!isObject(block)) return block;
  const transactions = Array.isArray(block.transactions)
    ? block.transactions.map((tx: unknown) => (isObject(tx) ? { hash: tx.hash, from: tx.from, to: tx.to, blockHash: tx.blockHash } : tx))
    : block.transactions;
  return { number: block.number, hash: block.hash, parentHash: block.parentHash, transactions };
}

/** The fields of readLogs, for each log. */
function projectLogs(logs: unknown): unknown {
  if (!Array.isArray(logs)) return logs;
  return logs.map((log: unknown) =>
    isObject(log)
      ? { removed: log.removed, blockNumber: log.blockNumber, topics: log.topics, address: log.address, data: log.data, blockHash: log.blockHash, transactionHash: log.transactionHash, logIndex: log.logIndex }
      : log,
  );
}

const PROJECTIONS: Record<Projection, (result: unknown) => unknown> = { block: projectBlock, logs: projectLogs };

const decoder = new TextDecoder();

/** Parses one answer's bytes (throws when they are not JSON), reducing each result by `projection`. */
export function parseAnswer(bytes: ArrayBuffer | Uint8Array, projection: Projection | undefined): unknown {
  const answer: unknown = JSON.parse(decoder.decode(bytes));
  if (projection === undefined) return answer;
  const project = PROJECTIONS[projection];
  for (const item of Array.isArray(answer) ? answer : [answer]) {
    if (isObject(item) && "result" in item) item.result = project(item.result);
  }
  return answer;
}

/** Parses on the calling thread. */
export function inlineAnswerParser(): AnswerParser {
  return {
    parse: async (bytes, projection) => parseAnswer(bytes, projection),
    close: async () => {},
  };
}

/** A job of the worker (answer-parser-worker.ts) and its reply. */
export interface ParseJob {
  id: number;
  bytes: ArrayBuffer;
  projection: Projection | undefined;
}
export type ParseReply = { id: number; answer: unknown } | { id: number; error: string };

/** Options of createAnswerParser. */
export interface AnswerParserOptions {
  /** Worker threads; 0 parses on the calling thread. Default: two at most (a range's block batches and its logs come together). */
  threads?: number;
}

/**
 * A parser on worker threads, each job to the worker with the fewest jobs; parses on the calling
 * thread when asked for none, or when the worker's file is not built (tests run the sources).
 */
export function createAnswerParser(options: AnswerParserOptions = {}): AnswerParser {
  const file = new URL("./answer-parser-worker.js", import.meta.url);
  const threads = options.threads ?? Math.min(2, availableParallelism());
  if (threads <= 0 || !existsSync(fileURLToPath(file))) return inlineAnswerParser();

  const pending = new Map<number, { resolve: (answer: unknown) => void; reject: (error: Error) => void; worker: PoolWorker }>();
  interface PoolWorker {
    worker: Worker;
    jobs: number;
  }
  const workers: PoolWorker[] = [];
  let nextId = 1;
  let closed = false;

  const failAll = (of: PoolWorker, error: Error) => {
    for (const [id, job] of pending) {
      if (job.worker !== of) continue;
      pending.delete(id);
      job.reject(error);
    }
  };
  const spawn = (): PoolWorker => {
    const entry: PoolWorker = { worker: new Worker(file), jobs: 0 };
    entry.worker.unref();
    entry.worker.on("message", (reply: ParseReply) => {
      const job = pending.get(reply.id);
      if (job === undefined) return;
      pending.delete(reply.id);
      if (--entry.jobs === 0) entry.worker.unref();
      if ("error" in reply) job.reject(new SyntaxError(reply.error));
      else job.resolve(reply.answer);
    });
    const lost = (error: Error) => {
      const at = workers.indexOf(entry);
      if (at >= 0) workers.splice(at, 1);
      failAll(entry, error);
    };
    entry.worker.on("error", lost);
    entry.worker.on("exit", (code) => lost(new Error(`an answer parser thread exited with code ${code}`)));
    workers.push(entry);
    return entry;
  };

  return {
    parse(bytes, projection) {
      if (closed) return Promise.reject(new Error("the answer parser is closed"));
      const idle = workers.length < threads ? spawn() : workers.reduce((least, entry) => (entry.jobs < least.jobs ? entry : least));
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject, worker: idle });
        if (idle.jobs++ === 0) idle.worker.ref();
        // The bytes move to the worker: this thread never looks at them again.
        const job: ParseJob = { id, bytes, projection };
        idle.worker.postMessage(job, [bytes]);
      });
    },
    async close() {
      closed = true;
      const all = workers.splice(0);
      for (const entry of all) failAll(entry, new Error("the answer parser is closed"));
      await Promise.all(all.map((entry) => entry.worker.terminate()));
    },
  };
}
