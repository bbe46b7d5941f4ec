import { quantity, readBlock, readHasCode, readLogs, toQuantity, type ChainBlock, type ChainHeader, type ChainLog } from "./answers.js";
import { NFT_TOPICS } from "./derive.js";
import { InvalidAnswerError, RpcResponseError, type RpcClient } from "./rpc-client.js";

/**
 * Reads a chain through an RpcClient: heads, blocks with their transactions, the NFT logs of a
 * range of blocks, and whether addresses hold code. Every answer is checked (answers.ts) and held
 * against the blocks it belongs to: logs that name a block hash other than the block read, or
 * blocks that do not chain by parent hash, mean the node's view moved under the read, and the read
 * is refused as a whole (InvalidAnswerError) rather than half applied.
 */

/** Options of createChainReader. */
export interface ChainReaderOptions {
  /** Collections and contracts indexed (lowercase); eth_getLogs asks only for these. Null: all. */
  contracts: ReadonlySet<string> | null;
  /** Blocks per eth_getLogs call at the start; adapted to the provider as answers come. */
  initialLogRange?: number;
  /** Blocks per eth_getLogs call at most. */
  maxLogRange?: number;
  /** Called when the log range changes, with the new range and why. */
  onLogRange?: (range: number, reason: string) => void;
}

/** A range of blocks read whole: the blocks in order, and their NFT logs by block number. */
export interface BlockRange {
  blocks: ChainBlock[];
  logs: Map<number, ChainLog[]>;
}

/** The chain, as the indexer reads it. */
export interface ChainReader {
  chainId(): Promise<string>;
  /** The newest block's number. */
  head(): Promise<number>;
  /** The newest finalized block's number (the `finalized` tag). */
  finalized(): Promise<number>;
  /** One block's header, or null when the node does not have it (yet). */
  header(number: number): Promise<ChainHeader | null>;
  /** Blocks from..to with their transactions and NFT logs; null when the node does not have them all yet. */
  range(from: number, to: number): Promise<BlockRange | null>;
  /** Whether each address held code at block `number`; remembered where the answer cannot change. */
  hasCode(addresses: readonly string[], number: number): Promise<boolean[]>;
  /** Blocks per eth_getLogs call now. */
  logRange(): number;
  /** Forgets what it learnt of code: after a reorg, a contract may no longer be deployed. */
  forgetCode(): void;
}

/** Blocks asked for in one JSON-RPC batch: full blocks are large, and providers cap batches. */
const BLOCKS_PER_BATCH = 20;
/** Block batches asked for at once while a range is read. */
const BATCHES_IN_FLIGHT = 2;
/** eth_getCode calls in one batch. */
const CODES_PER_BATCH = 100;
/** A log range whose answer holds fewer logs than this grows. */
const GROW_BELOW_LOGS = 2_000;
/** Addresses whose code is remembered before the memory is dropped and refilled. */
const CODE_CACHE_MAX = 200_000;

/**
 * Whether an eth_getLogs error says the answer would be too large (too many logs, too wide a
 * range), which a narrower range fixes: -32005 is the usual code (Infura, Alchemy's "limit
 * exceeded"), others say so in words only.
 */
export function isTooManyResults(error: unknown): boolean {
  if (!(error instanceof RpcResponseError)) return false;
  return error.code === -32005 || /too many|more than \d+|limit|exceed|too large|range is too|block range|response size/i.test(error.rpcMessage);
}

/** Creates a reader over `rpc`. */
export function createChainReader(rpc: RpcClient, options: ChainReaderOptions): ChainReader {
  const maxLogRange = options.maxLogRange ?? 2_000;
  let logRange = Math.min(options.initialLogRange ?? 500, maxLogRange);
  const addressFilter = options.contracts === null ? undefined : [...options.contracts];
  /** address → what is known of its code: present from block `since`, or absent up to block `until`. */
  const codes = new Map<string, { since: number } | { until: number }>();

  const setRange = (range: number, reason: string) => {
    if (range === logRange) return;
    logRange = range;
    options.onLogRange?.(range, reason);
  };

  async function logsOf(from: number, to: number): Promise<ChainLog[]> {
    // Asked with no address at all when nothing restricts it; an empty list would ask for none.
    if (addressFilter !== undefined && addressFilter.length === 0) return [];
    const logs: ChainLog[] = [];
    for (let start = from; start <= to; ) {
      const end = Math.min(to, start + logRange - 1);
      const filter: Record<string, unknown> = { fromBlock: toQuantity(start), toBlock: toQuantity(end), topics: [NFT_TOPICS] };
      if (addressFilter !== undefined) filter.address = addressFilter;
      let answer: unknown;
      try {
        answer = await rpc.call("eth_getLogs", [filter]);
      } catch (error) {
        if (!isTooManyResults(error) || end === start) throw error;
        setRange(Math.max(1, Math.floor((end - start + 1) / 2)), (error as RpcResponseError).rpcMessage);
        continue;
      }
      const part = readLogs(answer, start, end);
      logs.push(...part);
      if (part.length < GROW_BELOW_LOGS && end - start + 1 === logRange && logRange < maxLogRange) {
        setRange(Math.min(maxLogRange, logRange * 2), `${part.length} logs in ${end - start + 1} blocks`);
      }
      start = end + 1;
    }
    return logs;
  }

  return {
    async chainId() {
      const id = await rpc.call<unknown>("eth_chainId", []);
      return toQuantity(quantity(id, "eth_chainId"));
    },
    async head() {
      return quantity(await rpc.call("eth_blockNumber", []), "eth_blockNumber");
    },
    async finalized() {
      const block = await rpc.call<Record<string, unknown> | null>("eth_getBlockByNumber", ["finalized", false]);
      if (block === null || typeof block !== "object") throw new InvalidAnswerError("the node has no finalized block");
      return quantity(block.number, "the finalized block's number");
    },
    async header(number) {
      return readBlock(await rpc.call("eth_getBlockByNumber", [toQuantity(number), false]), number, false);
    },
    async range(from, to) {
      // The logs are asked for beside the blocks, and several block batches are in flight at once:
      // the node prepares one answer while the last is parsed. Nothing is checked any less: the
      // answers are held against each other once all are in.
      const logsRead = logsOf(from, to).then(
        (logs) => ({ logs }),
        (error: unknown) => ({ error }),
      );
      const starts: number[] = [];
      for (let start = from; start <= to; start += BLOCKS_PER_BATCH) starts.push(start);
      const batches: ChainBlock[][] = [];
      let nextBatch = 0;
      let missing = false;
      let failed = false;
      const readBatches = async () => {
        try {
          while (nextBatch < starts.length && !missing && !failed) {
            const index = nextBatch++;
            const start = starts[index]!;
            const numbers: number[] = [];
            for (let n = start; n <= Math.min(to, start + BLOCKS_PER_BATCH - 1); n++) numbers.push(n);
            const answers = await rpc.batch(numbers.map((n) => ({ method: "eth_getBlockByNumber", params: [toQuantity(n), true] })));
            const batch: ChainBlock[] = [];
            for (const [i, answer] of answers.entries()) {
              const block = readBlock(answer, numbers[i]!, true);
              if (block === null) {
                missing = true;
                return;
              }
              batch.push(block);
            }
            batches[index] = batch;
          }
        } catch (error) {
          // The range is refused as a whole: the other batches in flight stop asking.
          failed = true;
          throw error;
        }
      };
      await Promise.all(Array.from({ length: Math.min(BATCHES_IN_FLIGHT, starts.length) }, readBatches));
      const read = await logsRead;
      // Blocks the node does not have yet: their logs (or its refusal to give them) say nothing.
      if (missing) return null;
      if ("error" in read) throw read.error;
      const blocks = batches.flat();
      for (let i = 1; i < blocks.length; i++) {
        if (blocks[i]!.parentHash !== blocks[i - 1]!.hash) throw new InvalidAnswerError(`block ${blocks[i]!.number} does not follow block ${blocks[i - 1]!.number}: the chain moved while it was read`);
      }
      const hashes = new Map(blocks.map((block) => [block.number, block.hash]));
      const logs = new Map<number, ChainLog[]>();
      for (const log of read.logs) {
        if (hashes.get(log.blockNumber) !== log.blockHash) throw new InvalidAnswerError(`a log of block ${log.blockNumber} names another block hash: the chain moved while it was read`);
        const list = logs.get(log.blockNumber) ?? [];
        list.push(log);
        logs.set(log.blockNumber, list);
      }
      return { blocks, logs };
    },
    async hasCode(addresses, number) {
      const known = (address: string): boolean | undefined => {
        const fact = codes.get(address);
        if (fact === undefined) return undefined;
        if ("since" in fact) return number >= fact.since ? true : undefined;
        return number <= fact.until ? false : undefined;
      };
      const unknown = [...new Set(addresses.filter((address) => known(address) === undefined))];
      const asked = new Map<string, boolean>();
      for (let start = 0; start < unknown.length; start += CODES_PER_BATCH) {
        const part = unknown.slice(start, start + CODES_PER_BATCH);
        const answers = await rpc.batch(part.map((address) => ({ method: "eth_getCode", params: [address, toQuantity(number)] })));
        if (codes.size + part.length > CODE_CACHE_MAX) codes.clear();
        // Code, once deployed, stays at later blocks (a self-destruct is the rare exception that the
        // indexer accepts); an address without code had none at earlier blocks either.
        part.forEach((address, i) => {
          const present = readHasCode(answers[i], address);
          asked.set(address, present);
          codes.set(address, present ? { since: number } : { until: number });
        });
      }
      return addresses.map((address) => asked.get(address) ?? known(address) ?? false);
    },
    logRange: () => logRange,
    forgetCode: () => codes.clear(),
  };
}
