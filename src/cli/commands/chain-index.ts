import { readFile } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { createChainReader } from "../../chain/chain-reader.js";
import { graphLedger } from "../../chain/graph-ledger.js";
import { createIndexer, DEFAULT_UNIT_BLOCKS, LedgerMismatchError, type Finality } from "../../chain/indexer.js";
import { progressMeter, statusLine } from "../../chain/progress.js";
import { createRpcClient } from "../../chain/rpc-client.js";
import { createIndexMetrics } from "../../metrics/chain-metrics.js";
import { serveMetrics } from "../../metrics/serve-metrics.js";
import { createStore } from "../../store/index.js";
import { normalizeAddress } from "../../domain/identity.js";
import { redisCommandConfig } from "../redis-config.js";
import type { CommandIo } from "../io.js";
/** `relgraph index`'s options, checked. */
export interface IndexArguments {
  rpc: string[];
  fromBlock: number;
  toBlock: number | null;
  finality: Finality;
  /** Lowercase contract addresses, or null for every contract. */
  contracts: Set<string> | null;
  metricsPort: number | null;
  /** Blocks read and applied as one unit at most. */
  unitBlocks: number;
  help: boolean;
}

/** Thrown for arguments `relgraph index` cannot run with; the command exits 2 with its message. */
export class IndexUsageError extends Error {
  override name = "IndexUsageError";
}

/** Confirmations unless told otherwise: deep enough that an ordinary reorg is over before a block is applied. */
export const DEFAULT_CONFIRMATIONS = 12;
const MAX_UNIT_BLOCKS = 10_000;
const MAX_CONFIRMATIONS = 10_000;

export const INDEX_HELP = `Usage: relgraph index --rpc URL [--rpc URL …] [--from-block N] [--to-block N]
                      [--confirmations N | --finalized] [--contracts ADDR,…|FILE] [--metrics-port P]

Follows one EVM chain over standard JSON-RPC and keeps its contract interactions and NFT holdings
in the configured Redis (REDIS_URL) or Redis Cluster (REDIS_CLUSTER_NODES), as change records
applied through the same atomic writer as "relgraph ingest":
  interaction {address, contract}  the address sent a transaction to a contract (an address with code)
  nft {address, contract}          the address holds a token of an ERC-721 collection (Transfer with
                                   four topics) or an ERC-1155 one (TransferSingle, TransferBatch);
                                   deleted when its balance of the collection falls to zero
ERC-20 transfers (Transfer with three topics) make no nft record; the zero address is never a holder.

The position (block number and hash), the hashes and undo of the recent blocks, and the balances
are stored with the changes they cover, in the same unit: a restarted or killed indexer resumes from
the store, and never applies a block twice or skips one. A reorg is undone back to the common
ancestor, and the new branch applied.

Options:
  --rpc URL              a JSON-RPC endpoint over http(s); repeat it for failover, in order of
                         preference: an endpoint that fails or rate-limits is set aside with backoff
  --from-block N         the first block, on the first run only (default 0)
  --to-block N           stop once block N is applied (default: follow the chain until stopped)
  --confirmations N      apply a block once N blocks follow it (default ${DEFAULT_CONFIRMATIONS}); 0 applies at once
                         and undoes what a reorg removes
  --finalized            follow the chain's finalized block instead
  --contracts LIST|FILE  index only these contracts: comma-separated addresses, or a file of
                         addresses (one per line or comma-separated; # starts a comment); any
                         letter case, but mixed case must carry its EIP-55 checksum
  --metrics-port PORT    serve Prometheus metrics at http://HOST:PORT/metrics (HOST as serve's):
                         head, indexed block, lag, reorgs undone and RPC errors
  --unit-blocks N        blocks read and applied as one unit at most (default ${DEFAULT_UNIT_BLOCKS})
  -h, --help             show this help

Progress: a status line on a terminal (blocks/s, records/s, lag to the head); JSON lines (pino) on
stderr otherwise. SIGINT or SIGTERM stop it after the unit in progress. An RPC that cannot be reached
is retried with backoff, never fatal once started.

Exit status: 0 stopped by a signal or after --to-block; 1 the store cannot be opened or continued
(another chain, a reorg deeper than the undo window); 2 usage or configuration error.
`;

const BLOCK = /^(0|[1-9]\d{0,15})$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** Checks `relgraph index`'s arguments (after "index"); reads a --contracts file. Throws IndexUsageError. */
export async function parseIndexArguments(argv: readonly string[]): Promise<IndexArguments> {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        rpc: { type: "string", multiple: true },
        "from-block": { type: "string" },
        "to-block": { type: "string" },
        confirmations: { type: "string" },
        finalized: { type: "boolean" },
        contracts: { type: "string" },
        "metrics-port": { type: "string" },
        "unit-blocks": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    throw new IndexUsageError((error as Error).message);
  }
  const empty: IndexArguments = { rpc: [], fromBlock: 0, toBlock: null, finality: { confirmations: DEFAULT_CONFIRMATIONS }, contracts: null, metricsPort: null, unitBlocks: DEFAULT_UNIT_BLOCKS, help: true };
  if (values.help) return empty;

  const rpc = values.rpc ?? [];
  if (rpc.length === 0) throw new IndexUsageError("--rpc URL is required (repeat it for failover)");
  for (const url of rpc) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(url);
    } catch {
      // reported below
    }
    if (parsed === null || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) throw new IndexUsageError(`--rpc must be an http:// or https:// URL, got "${url}"`);
  }
  const block = (flag: "from-block" | "to-block"): number | null => {
    const text = values[flag];
    if (text === undefined) return null;
    if (!BLOCK.test(text) || !Number.isSafeInteger(Number(text))) throw new IndexUsageError(`--${flag} must be a block number (0 or more), got "${text}"`);
    return Number(text);
  };
  const fromBlock = block("from-block") ?? 0;
  const toBlock = block("to-block");
  if (toBlock !== null && toBlock < fromBlock) throw new IndexUsageError(`--to-block (${toBlock}) must not be below --from-block (${fromBlock})`);

  if (values.finalized && values.confirmations !== undefined) throw new IndexUsageError("--confirmations and --finalized exclude each other: give one");
  let finality: Finality = { confirmations: DEFAULT_CONFIRMATIONS };
  if (values.finalized) finality = { finalized: true };
  else if (values.confirmations !== undefined) {
    const text = values.confirmations;
    if (!/^\d{1,5}$/.test(text) || Number(text) > MAX_CONFIRMATIONS) throw new IndexUsageError(`--confirmations must be an integer from 0 to ${MAX_CONFIRMATIONS}, got "${text}"`);
    finality = { confirmations: Number(text) };
  }

  const port = values["metrics-port"];
  if (port !== undefined && (!/^\d{1,5}$/.test(port) || Number(port) > 65_535)) throw new IndexUsageError(`--metrics-port must be a port from 0 to 65535, got "${port}"`);

  const unit = values["unit-blocks"] ?? String(DEFAULT_UNIT_BLOCKS);
  if (!/^[1-9]\d{0,4}$/.test(unit) || Number(unit) > MAX_UNIT_BLOCKS) throw new IndexUsageError(`--unit-blocks must be an integer from 1 to ${MAX_UNIT_BLOCKS}, got "${unit}"`);

  return {
    rpc,
    fromBlock,
    toBlock,
    finality,
    contracts: values.contracts === undefined ? null : await contractList(values.contracts),
    metricsPort: port === undefined ? null : Number(port),
    unitBlocks: Number(unit),
    help: false,
  };
}

/** --contracts: addresses separated by commas, or the name of a file of them. */
async function contractList(value: string): Promise<Set<string>> {
  let text = value;
  let source = "--contracts";
  if (!value.split(",").every((item) => ADDRESS.test(item.trim()))) {
    try {
      text = await readFile(value, "utf8");
    } catch (error) {
      throw new IndexUsageError(`--contracts is neither a list of addresses nor a readable file: "${value}" (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
    source = value;
    text = text.replace(/#[^\n]*/g, "");
  }
  const items = text.split(/[\s,]+/).filter((item) => item !== "");
  const wrong = items.find((item) => !ADDRESS.test(item));
  if (wrong !== undefined) throw new IndexUsageError(`${source}: "${wrong}" is not an address (0x and 40 hex digits)`);
  // As everywhere relgraph reads an address: a wrong checksum usually means a mistyped contract.
  const misspelled = items.find((item) => normalizeAddress(item) === null);
  if (misspelled !== undefined) throw new IndexUsageError(`${source}: "${misspelled}" has a wrong EIP-55 checksum (mixed case must match it; or write it in one case)`);
  if (items.length === 0) throw new IndexUsageError(`${source} lists no contract`);
  return new Set(items.map((item) => item.toLowerCase()));
}

/** How often progress is shown: the status line on a terminal, a JSON line otherwise. */
const STATUS_EVERY_MS = 1_000;
const LOG_PROGRESS_EVERY_MS = 5_000;

/** `relgraph index [...]`; argv holds the arguments after "index". Resolves with the exit code once stopped. */
export async function runIndex(argv: string[], io: CommandIo): Promise<number> {
  let args;
  try {
    args = await parseIndexArguments(argv);
  } catch (error) {
    if (!(error instanceof IndexUsageError)) throw error;
    io.stderr.write(`relgraph index: ${error.message}\nRun "relgraph index --help" for usage.\n`);
    return 2;
  }
  if (args.help) {
    io.stdout.write(INDEX_HELP);
    return 0;
  }
  const config = redisCommandConfig(io, "index");
  if (config === null) return 2;

  const terminal = (io.stderr as NodeJS.WriteStream).isTTY === true;
  const status = statusWriter(io.stderr, terminal);
  const logger = pino({ level: config.logLevel, base: { command: "index" } }, status.logs);
  let store;
  try {
    // The indexer reads only its own state, in bulk: read caches would only hear of every key it writes.
    store = await createStore(config, { readCaches: false });
  } catch (error) {
    io.stderr.write(`relgraph index: cannot open the store: ${describe(error)}\n`);
    return 1;
  }
  const rpc = createRpcClient({
    urls: args.rpc,
    onEndpointError: (event) => logger.warn(event, "an RPC endpoint failed; it is set aside and retried"),
  });
  const chain = createChainReader(rpc, {
    contracts: args.contracts,
    // A range that narrows says something of the provider or the chain; one that grows back, after
    // each small answer from the start, is routine.
    onLogRange: (range, reason, previous) => {
      if (range < previous) logger.info({ range, reason }, "eth_getLogs range narrowed");
      else logger.debug({ range, reason }, "eth_getLogs range widened");
    },
  });
  const indexer = createIndexer({
    store: graphLedger(store),
    chain,
    finality: args.finality,
    contracts: args.contracts,
    fromBlock: args.fromBlock,
    toBlock: args.toBlock,
    unitBlocks: args.unitBlocks,
    onReorg: (reorg) => logger.warn(reorg, "reorg: undoing back to the common ancestor"),
    onRetry: (error, waitMs) => logger.warn({ error: describe(error), waitMs }, "retrying"),
    onUnit: (unit) => logger.debug(unit, "unit applied"),
  });

  let metricsServer: Server | null = null;
  if (args.metricsPort !== null) {
    try {
      metricsServer = await serveMetrics(createIndexMetrics({ stats: () => indexer.stats(), rpcErrors: () => rpc.errors() }), config.host, args.metricsPort);
    } catch (error) {
      rpc.close();
      await store.close();
      io.stderr.write(`relgraph index: cannot serve metrics on port ${args.metricsPort}: ${describe(error)}\n`);
      return 1;
    }
    logger.info({ port: (metricsServer.address() as AddressInfo).port, path: "/metrics" }, "serving metrics");
  }

  const meter = progressMeter();
  let lastLogged = 0;
  let lastState = "";
  const tick = setInterval(() => {
    const progress = meter(indexer.stats(), Date.now());
    if (terminal) status.show(statusLine(progress));
    else if (Date.now() - lastLogged >= LOG_PROGRESS_EVERY_MS) {
      const state = JSON.stringify([progress.head, progress.indexed]);
      if (state === lastState) return;
      lastState = state;
      lastLogged = Date.now();
      logger.info(
        { head: progress.head, indexed: progress.indexed, lag: progress.lag, blocksPerSecond: round(progress.blocksPerSecond), recordsPerSecond: round(progress.recordsPerSecond), reorgs: progress.reorgs },
        "progress",
      );
    }
  }, STATUS_EVERY_MS);
  tick.unref();

  const stop = (signal: NodeJS.Signals) => {
    logger.info({ signal }, "stopping after the unit in progress");
    indexer.stop();
    // Only reads of the chain wait on the RPC: a unit being written is not interrupted.
    rpc.close();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  logger.info({ rpc: args.rpc.length, engine: store.engine, finality: args.finality, contracts: args.contracts?.size ?? "all", fromBlock: args.fromBlock, toBlock: args.toBlock }, "indexing");
  try {
    const stats = await indexer.run();
    status.clear();
    logger.info({ indexed: stats.indexed, head: stats.head, blocks: stats.blocks, records: stats.records, reorgs: stats.reorgs, blocksUndone: stats.blocksUndone }, "stopped");
    return 0;
  } catch (error) {
    status.clear();
    if (!(error instanceof LedgerMismatchError)) throw error;
    logger.error({ error: error.message }, "cannot continue this store");
    return 1;
  } finally {
    clearInterval(tick);
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    rpc.close();
    metricsServer?.closeAllConnections();
    await Promise.all([store.close(), metricsServer && new Promise((resolve) => metricsServer.close(resolve))]);
  }
}

/**
 * stderr shared by the status line and the logs: a log line first clears the status line (a
 * terminal's carriage return would otherwise leave it mixed into the log), which the next tick
 * draws again.
 */
function statusWriter(stderr: NodeJS.WritableStream, terminal: boolean) {
  let shown = false;
  const clear = () => {
    if (shown) stderr.write("\r\x1b[K");
    shown = false;
  };
  const logs = new Writable({
    write(chunk: Buffer, _encoding, done) {
      clear();
      stderr.write(chunk, done);
    },
  });
  return {
    logs,
    show(line: string) {
      if (!terminal) return;
      stderr.write(`\r\x1b[K${line}`);
      shown = true;
    },
    clear,
  };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

/** An error's message, with its cause's. */
function describe(error: unknown): string {
  const { message, cause } = error as Error;
  return cause instanceof Error && cause.message && cause.message !== message ? `${message} (${cause.message})` : String(message);
}
