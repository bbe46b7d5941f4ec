import { stat } from "node:fs/promises";
import type { GraphStore } from "../store/store.js";
import { readByteLines } from "./read-lines.js";
import { createLoadValidator, type LoadValidator, type StoredGraph } from "./validate.js";

export { IngestValidationError } from "./validate.js";

/** What ingestion needs of a store: the lookups validation makes, and the write, under the store's write lease. */
export type IngestTarget = StoredGraph & Pick<GraphStore, "write" | "exclusive">;

/** Progress of a load: records parsed so far, then records written. */
export type IngestProgress =
  | { phase: "parse"; records: number; file: string }
  | { phase: "write"; written: number; total: number };

/** A minimal logger; a pino logger fits. */
export interface IngestLogger {
  info(message: string): void;
}

/** The file name that reads standard input. */
export const STDIN = "-";

/** Options of ingestFiles and ingestRecords. */
export interface IngestOptions {
  /** What STDIN reads (process.stdin by default). */
  stdin?: NodeJS.ReadableStream;
  /** Called every PARSE_PROGRESS_EVERY records while parsing, and after each batch the store flushes. */
  onProgress?: (progress: IngestProgress) => void;
  logger?: IngestLogger;
  /** Told what the store's writer waits for or completes besides this load (another writer, an interrupted write). */
  onNotice?: (message: string) => void;
  /** How many errors a failure report lists before "… and N more errors". Default 100. */
  maxErrors?: number;
  /** Validate only (against the store too), and write nothing. */
  dryRun?: boolean;
}

/** The outcome of a successful load. */
export interface IngestResult {
  /** Records read (non-blank lines). */
  records: number;
  /** Distinct users the load defines. */
  users: number;
  seconds: number;
  recordsPerSecond: number;
}

/** How often parse progress is reported, in records. */
export const PARSE_PROGRESS_EVERY = 100_000;

/**
 * Loads JSON Lines files (STDIN reads standard input) into the store as one load: every record of every file is validated (see
 * validate.ts) before anything is written. Throws IngestValidationError, listing `file:line:
 * reason`, when any record is invalid or a file cannot be read; the store is then untouched.
 */
export async function ingestFiles(store: IngestTarget, files: readonly string[], options: IngestOptions = {}): Promise<IngestResult> {
  const started = performance.now();
  const validator = createLoadValidator({ sources: files.map((file) => (file === STDIN ? "stdin" : file)), maxErrors: options.maxErrors });
  const unreadable = await Promise.all(files.map(readProblem));
  unreadable.forEach((problem, source) => problem && validator.reject(source, 0, problem));
  if (unreadable.some(Boolean)) return finish(store, validator, started, options);
  for (const [source, file] of files.entries()) {
    let reported = validator.records;
    await readByteLines(file === STDIN ? (options.stdin ?? process.stdin) : file, (bytes, start, end, line) => {
      validator.addLineBytes(bytes, start, end, source, line);
      if (validator.records - reported >= PARSE_PROGRESS_EVERY) {
        reported = validator.records;
        options.onProgress?.({ phase: "parse", records: reported, file });
      }
    });
  }
  options.logger?.info(`parsed ${validator.records} records from ${files.length} file(s)`);
  return finish(store, validator, started, options);
}

/**
 * Loads records that are already parsed (e.g. from the generator) as one load, with the same
 * validation as files. Error locations cite `source` and the record's 1-based position.
 */
export async function ingestRecords(
  store: IngestTarget,
  records: Iterable<unknown>,
  options: IngestOptions & { source?: string } = {},
): Promise<IngestResult> {
  const started = performance.now();
  const validator = createLoadValidator({ sources: [options.source ?? "records"], maxErrors: options.maxErrors });
  let line = 0;
  for (const record of records) validator.addRecord(record, 0, ++line);
  return finish(store, validator, started, options);
}

async function finish(store: IngestTarget, validator: LoadValidator, started: number, options: IngestOptions): Promise<IngestResult> {
  const onNotice = (message: string) => {
    options.onNotice?.(message);
    options.logger?.info(message);
  };
  const validate = async () => {
    const batch = await validator.finish(store);
    options.logger?.info(`validated ${validator.records} records defining ${batch.users.length} users`);
    return batch;
  };
  // Checked against the store and written under one hold of the write lease: no other writer can
  // change what the check found before the write, and the write plans from the ids it read. A load
  // already known to be invalid, or only checked, is reported without waiting for the lease.
  const validateAndWrite = async () => {
    const batch = await validate();
    await store.write(batch, { onProgress: (progress) => options.onProgress?.({ phase: "write", ...progress }), onNotice });
    options.logger?.info(`wrote ${validator.records} records`);
    return batch;
  };
  const batch = options.dryRun || validator.errorsSoFar > 0 ? await validate() : await store.exclusive(validateAndWrite, { onNotice });
  const seconds = (performance.now() - started) / 1000;
  return {
    records: validator.records,
    users: batch.users.length,
    seconds,
    recordsPerSecond: seconds > 0 ? validator.records / seconds : 0,
  };
}

/** Why a file cannot be read, or null when it can. */
async function readProblem(file: string): Promise<string | null> {
  if (file === STDIN) return null;
  try {
    const info = await stat(file);
    return info.isFile() ? null : "cannot read: not a regular file";
  } catch (error) {
    return `cannot read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
  }
}
