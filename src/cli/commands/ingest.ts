import { parseArgs } from "node:util";
import { loadConfig } from "../../config/config.js";
import type { CommandIo } from "../io.js";
import { count, describe, usage } from "../output.js";
import { createStore } from "../../store/index.js";
import { STDIN, ingestFiles, type IngestProgress } from "../../ingest/ingest.js";
import { IngestValidationError } from "../../ingest/validate.js";

const INGEST_HELP = `Usage: relgraph ingest [--dry-run] [--max-errors N] FILE.jsonl ... | -

Loads JSON Lines files (or standard input, "-") into the configured store (REDIS_URL or
REDIS_CLUSTER_NODES) as one load. Records may carry "op": "upsert" (the default) or "delete";
records about the same thing apply in load order (files in the order given, lines top to bottom).
Every record of every file is validated first, also against what is already stored; if any record
is invalid, nothing is written and each problem is printed as "file:line: reason".

The load is then applied as one unit: it is saved in Redis before its first change, so that a load
killed at any point (or refused by Redis) is completed by the next writer, which is the next
"relgraph ingest" or "relgraph follow" on the same store. Loading the same files again leaves the
same state.

Options:
  --dry-run        validate only; write nothing
  --max-errors N   list at most N errors (default 100)
  -h, --help       show this help

Exit status: 0 loaded (or valid, with --dry-run); 1 invalid records, unreadable files or store
failure; 2 usage or configuration error.
`;

/** `relgraph ingest FILE.jsonl ...`; argv holds the arguments after "ingest". Resolves with the exit code. */
export async function runIngest(argv: string[], io: CommandIo): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { "dry-run": { type: "boolean" }, "max-errors": { type: "string" }, help: { type: "boolean", short: "h" } },
    });
  } catch (error) {
    return usage(io, "ingest", (error as Error).message);
  }
  if (args.values.help) {
    io.stdout.write(INGEST_HELP);
    return 0;
  }
  const files = args.positionals;
  if (files.length === 0) return usage(io, "ingest", "no files given");
  if (files.filter((file) => file === STDIN).length > 1) return usage(io, "ingest", 'standard input ("-") can be read once');
  const maxErrors = args.values["max-errors"] ?? "100";
  if (!/^[1-9]\d{0,6}$/.test(maxErrors)) return usage(io, "ingest", `--max-errors must be a positive integer, got "${maxErrors}"`);
  const dryRun = args.values["dry-run"] ?? false;

  let config;
  try {
    config = loadConfig();
  } catch (error) {
    io.stderr.write(`relgraph ingest: ${(error as Error).message}\n`);
    return 2;
  }
  let store;
  try {
    // A load reads only to validate, in bulk: read caches would only hear of every key it writes.
    store = await createStore(config, { readCaches: false });
  } catch (error) {
    io.stderr.write(`relgraph ingest: cannot open the store: ${describe(error)}\n`);
    return 1;
  }
  try {
    // The embedded store dies with this process, so ingesting into it would only validate.
    const persistent = store.engine !== "memory";
    const result = await ingestFiles(store, files, {
      dryRun: dryRun || !persistent,
      maxErrors: Number(maxErrors),
      onProgress: progressPrinter(io.stderr),
      stdin: io.stdin,
      onNotice: (message) => io.stderr.write(`relgraph ingest: ${message}\n`),
    });
    const summary = `${counted(result.records, "record")} (${counted(result.users, "user")}) from ${describeSources(files)} in ${result.seconds.toFixed(2)} s, ${count(Math.round(result.recordsPerSecond))} records/s`;
    if (dryRun) {
      io.stdout.write(`valid: ${summary}; nothing written (--dry-run)\n`);
      return 0;
    }
    if (!persistent) {
      io.stderr.write(`relgraph ingest: the files are valid (${summary}), but no store is configured: set REDIS_URL or REDIS_CLUSTER_NODES. Nothing was written.\n`);
      return 1;
    }
    io.stdout.write(`ingested ${summary} into ${store.engine}\n`);
    return 0;
  } catch (error) {
    if (error instanceof IngestValidationError) {
      for (const line of error.errors) io.stderr.write(`${line}\n`);
      io.stderr.write(`relgraph ingest: ${error.message}\n`);
    } else {
      io.stderr.write(`relgraph ingest: ${describe(error)}\n`);
    }
    return 1;
  } finally {
    await store.close();
  }
}

/** Prints progress to stderr at most once a second, and only once a load has run for a second. */
function progressPrinter(stderr: NodeJS.WritableStream): (progress: IngestProgress) => void {
  let last = performance.now();
  return (progress) => {
    const now = performance.now();
    if (now - last < 1000) return;
    last = now;
    stderr.write(
      progress.phase === "parse"
        ? `parsed ${count(progress.records)} records (${progress.file})\n`
        : `wrote ${count(progress.written)} of ${count(progress.total)}\n`,
    );
  };
}

function counted(n: number, noun: string): string {
  return `${count(n)} ${noun}${n === 1 ? "" : "s"}`;
}

/** Where a load came from, as the summary names it: "2 files", "stdin", "1 file and stdin". */
function describeSources(files: readonly string[]): string {
  const named = files.filter((file) => file !== "-").length;
  const fromStdin = named < files.length;
  if (named === 0) return "stdin";
  return `${counted(named, "file")}${fromStdin ? " and stdin" : ""}`;
}
