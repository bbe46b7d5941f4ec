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
  /** An eth_getLogs answer holding more logs than this halves the range (default 8,000). */
  shrinkAboveLogs?: number;
  /** Called when the log range changes, with the new range, why, and the range before. */
  onLogRange?: (range: number, reason: string, previous: number) => void;
}

/** A range of blocks read whole: the blocks in order, and their NFT logs by block number. */
export interface BlockRange {
  blocks: ChainBlock[];
  logs: Map<number, ChainLog[]>;
}

/** The first and last blocks of a range read by stream(). */
export interface RangeSpan {
  first: ChainHeader;
  last: ChainHeader;
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
  /**
   * Blocks from..to handed to `consume` a part at a time, in block order, as each part's blocks and
   * the logs that cover them arrive, every part checked as range() checks the whole (the parts
   * chain by parent hash; logs name their blocks' hashes). Resolves with the first and last blocks
   * once every part is consumed, or null when the node does not have them all yet: parts already
   * consumed are then to be dropped, as they are when it rejects.
   */
  stream(from: number, to: number, consume: (part: BlockRange) => Promise<void> | void): Promise<RangeSpan | null>;
  /** Whether each address held code at block `number`; remembered where the answer cannot change. */
  hasCode(addresses: readonly string[], number: number): Promise<boolean[]>;
  /** Blocks per eth_getLogs call now. */
  logRange(): number;
  /** Forgets what it learnt of code: after a reorg, a contract may no longer be deployed. */
  forgetCode(): void;
}

/** Blocks asked for in one JSON-RPC batch: full blocks are large, and providers cap batches. */
const BLOCKS_PER_BATCH = 10;
/** Block batches asked for at once while a range is read. */
const BATCHES_IN_FLIGHT = 3;
/** eth_getCode calls in one batch. */
const CODES_PER_BATCH = 100;
/** A log range whose answer holds fewer logs than this grows. */
const GROW_BELOW_LOGS = 2_000;
/**
 * A log range whose answer holds more logs than this shrinks before the provider refuses it (many
 * cap an answer at 10,000 logs), and so that a range's parts can be consumed while the rest is read.
 */
const DEFAULT_SHRINK_ABOVE_LOGS = 8_000;
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
  const shrinkAboveLogs = options.shrinkAboveLogs ?? DEFAULT_SHRINK_ABOVE_LOGS;
  // Small at first, so that a dense range's first parts are consumed while the rest is read; a sparse
  // chain doubles it call by call.
  let logRange = Math.min(options.initialLogRange ?? BLOCKS_PER_BATCH, maxLogRange);
  const addressFilter = options.contracts === null ? undefined : [...options.contracts];
  /** address → what is known of its code: present from block `since`, or absent up to block `until`. */
  const codes = new Map<string, { since: number } | { until: number }>();

  const setRange = (range: number, reason: string) => {
    if (range === logRange) return;
    const previous = logRange;
    logRange = range;
    options.onLogRange?.(range, reason, previous);
  };

  /** The NFT logs of from..to, handed to `got` range by range in block order, with the last block each covers. */
  async function logsOf(from: number, to: number, got: (logs: ChainLog[], through: number) => void, going: () => boolean): Promise<void> {
    // Asked with no address at all when nothing restricts it; an empty list would ask for none.
    if (addressFilter !== undefined && addressFilter.length === 0) return got([], to);
    for (let start = from; start <= to && going(); ) {
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
      got(part, end);
      if (part.length < GROW_BELOW_LOGS && end - start + 1 === logRange && logRange < maxLogRange) {
        setRange(Math.min(maxLogRange, logRange * 2), `${part.length} logs in ${end - start + 1} blocks`);
      } else if (part.length > shrinkAboveLogs && end > start) {
        setRange(Math.max(1, Math.floor((end - start + 1) / 2)), `${part.length} logs in ${end - start + 1} blocks`);
      }
      start = end + 1;
    }
  }

  /**
   * The blocks are asked for in batches, several in flight, and the logs beside them, range after
   * range: the node prepares one answer while the last is parsed, and a part is consumed as soon as
   * its blocks and the logs that cover them are in. Nothing is checked any less than a whole range
   * would be: each part chains to the one before, and each log names its block's hash.
   */
  async function stream(from: number, to: number, consume: (part: BlockRange) => Promise<void> | void): Promise<RangeSpan | null> {
    if (to < from) throw new RangeError(`an empty range of blocks was asked for (${from} to ${to})`);
    const starts: number[] = [];
    for (let start = from; start <= to; start += BLOCKS_PER_BATCH) starts.push(start);
    const batches: (ChainBlock[] | undefined)[] = [];
    const logsByBlock = new Map<number, ChainLog[]>();
    let logsThrough = from - 1;
    let nextBatch = 0;
    let nextPart = 0;
    let missing = false;
    let failure: { error: unknown } | null = null;
    let previous: ChainHeader | null = null;
    let first: ChainHeader | null = null;
    let consumed: Promise<void> = Promise.resolve();

    const fail = (error: unknown) => {
      failure ??= { error };
    };
    /** Hands over, in order, every part whose blocks and logs are all in. */
    const handOver = () => {
      while (failure === null && !missing && nextPart < starts.length) {
        const blocks = batches[nextPart];
        if (blocks === undefined || blocks.at(-1)!.number > logsThrough) return;
        batches[nextPart++] = undefined;
        const part: BlockRange = { blocks, logs: new Map() };
        for (const block of blocks) {
          if (previous !== null && block.parentHash !== previous.hash) {
            return fail(new InvalidAnswerError(`block ${block.number} does not follow block ${previous.number}: the chain moved while it was read`));
          }
          previous = { number: block.number, hash: block.hash, parentHash: block.parentHash };
          first ??= previous;
          const logs = logsByBlock.get(block.number);
          if (logs === undefined) continue;
          logsByBlock.delete(block.number);
          for (const log of logs) {
            if (log.blockHash !== block.hash) return fail(new InvalidAnswerError(`a log of block ${log.blockNumber} names another block hash: the chain moved while it was read`));
          }
          part.logs.set(block.number, logs);
        }
        consumed = consumed.then(() => (failure === null ? consume(part) : undefined)).catch(fail);
      }
    };

    const logsRead = logsOf(from, to, (logs, through) => {
      for (const log of logs) {
        const list = logsByBlock.get(log.blockNumber);
        if (list === undefined) logsByBlock.set(log.blockNumber, [log]);
        else list.push(log);
      }
      logsThrough = through;
      handOver();
    }, () => failure === null && !missing).catch(fail);
    const readBatches = async () => {
      while (nextBatch < starts.length && !missing && failure === null) {
        const index = nextBatch++;
        const start = starts[index]!;
        const numbers: number[] = [];
        for (let n = start; n <= Math.min(to, start + BLOCKS_PER_BATCH - 1); n++) numbers.push(n);
        try {
          const answers = await rpc.batch(numbers.map((n) => ({ method: "eth_getBlockByNumber", params: [toQuantity(n), true] })));
          const batch: ChainBlock[] = [];
          for (const [i, answer] of answers.entries()) {
            const block = readBlock(answer, numbers[i]!, true);
            // Blocks the node does not have yet: the range is not there yet, whatever else arrives.
            if (block === null) {
              missing = true;
              return;
            }
            batch.push(block);
          }
          batches[index] = batch;
          handOver();
        } catch (error) {
          // The range is refused as a whole: the other batches in flight stop asking.
          return fail(error);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(BATCHES_IN_FLIGHT, starts.length) }, readBatches));
    await logsRead;
    await consumed;
    // Blocks the node does not have yet: their logs (or its refusal to give them) say nothing.
    if (missing) return null;
    if (failure !== null) throw (failure as { error: unknown }).error;
    for (const number of logsByBlock.keys()) throw new InvalidAnswerError(`a log names block ${number}, which the range read does not hold`);
    return { first: first!, last: previous! };
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
      const blocks: ChainBlock[] = [];
      const logs = new Map<number, ChainLog[]>();
      const span = await stream(from, to, (part) => {
        blocks.push(...part.blocks);
        for (const [number, list] of part.logs) logs.set(number, list);
      });
      return span === null ? null : { blocks, logs };
    },
    stream,
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
