import type { ChainHeader } from "./answers.js";
import type { BlockRange, ChainReader } from "./chain-reader.js";
import { deriveBlock, type BlockFacts, type ContractFilter } from "./derive.js";
import {
  keysOf,
  parsePosition,
  parseWindow,
  parseWindowEntry,
  POSITION_FIELD,
  POSITION_SPACE,
  UnitPlanner,
  WINDOW_SPACE,
  type ChangeRecord,
  type Position,
  type StateChange,
  type StateKeys,
  type StateValues,
  type WindowEntry,
} from "./ledger.js";
import { InvalidAnswerError, RpcClosedError, sleep } from "./rpc-client.js";

/**
 * The indexer's loop: find the block to reach (the head less the confirmations, or the finalized
 * block), read the next range of blocks, check that it continues the stored position, derive its
 * facts, and apply them with the new position as one unit of the store's writer. A stored
 * position whose block the chain no longer holds is a reorg: the blocks back to the common
 * ancestor are undone from the undo window, in the same unit that applies the new branch.
 *
 * Anything that fails while the chain is read (an outage, an answer refused) is retried with
 * backoff: the indexer runs for days, and an outage is something to wait out. Only a store that
 * cannot be continued (another chain's position, a reorg deeper than the window) stops it.
 */

/** What the indexer needs of a store: its own kept state, and units applied under the write lease. */
export interface LedgerStore {
  /** Runs `work` as the store's only writer. */
  exclusive<T>(work: () => Promise<T>): Promise<T>;
  /** The fields' values in one space of kept state (null: absent). */
  readState(space: string, fields: readonly string[]): Promise<(string | null)[]>;
  /** Every field of one space of kept state. */
  readStateSpace(space: string): Promise<Map<string, string>>;
  /** Applies change records and state changes as ONE unit of the writer; called under `exclusive`. */
  apply(records: readonly ChangeRecord[], state: readonly StateChange[]): Promise<void>;
}

/** Thrown when the store cannot be continued from this chain; the indexer stops. */
export class LedgerMismatchError extends Error {
  override name = "LedgerMismatchError";
}

/** Which block the indexer follows: the head less some confirmations, or the finalized block. */
export type Finality = { confirmations: number } | { finalized: true };

/** Options of createIndexer. */
export interface IndexerOptions {
  store: LedgerStore;
  chain: ChainReader;
  finality: Finality;
  contracts: ContractFilter;
  /** First block indexed when the store holds no position. */
  fromBlock: number;
  /** Stop once this block is applied; null: follow the chain until stopped. */
  toBlock: number | null;
  /** Blocks read and applied as one unit at most. */
  unitBlocks?: number;
  /** Blocks behind the head whose undo is kept: the deepest reorg the indexer can undo. */
  windowBlocks?: number;
  /** How often the head is polled once the indexer has caught up. */
  pollMs?: number;
  /** Told of each unit applied. */
  onUnit?: (unit: UnitReport) => void;
  /** Told of a round that failed and will be retried. */
  onRetry?: (error: unknown, waitMs: number) => void;
  /** Told of a reorg found, before it is undone. */
  onReorg?: (reorg: { from: number; ancestor: number }) => void;
}

/** What one applied unit did. */
export interface UnitReport {
  /** The position after the unit. */
  position: Position;
  head: number;
  target: number;
  blocks: number;
  undone: number;
  records: number;
}

/** Counters since the start. */
export interface IndexerStats {
  head: number | null;
  indexed: number | null;
  target: number | null;
  blocks: number;
  records: number;
  reorgs: number;
  blocksUndone: number;
  retries: number;
}

/** The running indexer. */
export interface Indexer {
  /** Runs until stopped, or until toBlock is applied; rejects only with LedgerMismatchError or a store failure it cannot retry. */
  run(): Promise<IndexerStats>;
  /** Stops after the unit in progress (a unit not yet being written is dropped). */
  stop(): void;
  stats(): IndexerStats;
}

/** A range read with its facts. */
interface RangeRead {
  range: BlockRange;
  facts: BlockFacts[];
}

/** A range read ahead of the rounds: the blocks it covers, and the read (null when it failed or the node lacked a block). */
interface ReadAhead {
  from: number;
  to: number;
  read: Promise<RangeRead | null>;
}

/** Blocks per unit unless told otherwise: a backfill's units stay a few seconds' work each. */
export const DEFAULT_UNIT_BLOCKS = 200;
const DEFAULT_WINDOW_BLOCKS = 128;
const DEFAULT_POLL_MS = 250;
const RETRY_BASE_MS = 250;
const RETRY_MAX_MS = 15_000;

/** Creates an indexer; nothing runs until run(). */
export function createIndexer(options: IndexerOptions): Indexer {
  const { store, chain } = options;
  const unitBlocks = options.unitBlocks ?? DEFAULT_UNIT_BLOCKS;
  const windowBlocks = options.windowBlocks ?? DEFAULT_WINDOW_BLOCKS;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const stopping = new AbortController();
  const stats: IndexerStats = { head: null, indexed: null, target: null, blocks: 0, records: 0, reorgs: 0, blocksUndone: 0, retries: 0 };
  let chainId = "";
  /** The range after the unit being written, read meanwhile. */
  let ahead: ReadAhead | null = null;

  async function readPosition(): Promise<Position | null> {
    const [text] = await store.readState(POSITION_SPACE, [POSITION_FIELD]);
    const position = parsePosition(text);
    if (position && position.chainId !== chainId) {
      throw new LedgerMismatchError(`the store indexes chain ${position.chainId}, and the RPC serves chain ${chainId}: index another chain into another store`);
    }
    return position;
  }

  async function readTarget(): Promise<number> {
    const head = await chain.head();
    stats.head = head;
    const target = "finalized" in options.finality ? await chain.finalized() : head - options.finality.confirmations;
    stats.target = options.toBlock === null ? target : Math.min(target, options.toBlock);
    return stats.target;
  }

  /** The facts of a range: blocks with the code of their transactions' targets looked up. */
  async function factsOf(range: BlockRange): Promise<BlockFacts[]> {
    const facts: BlockFacts[] = [];
    for (const block of range.blocks) {
      const targets = [...new Set(block.transactions.flatMap((tx) => (tx.to !== null && (options.contracts === null || options.contracts.has(tx.to)) ? [tx.to] : [])))];
      const code = await chain.hasCode(targets, block.number);
      const withCode = new Set(targets.filter((_, i) => code[i]));
      facts.push(deriveBlock(block, range.logs.get(block.number) ?? [], (address) => withCode.has(address), options.contracts));
    }
    return facts;
  }

  /**
   * The common ancestor of the stored blocks and the chain, and the window entries above it
   * (newest first), which the reorg undoes.
   */
  async function findAncestor(position: Position, window: readonly WindowEntry[], chainHead = Number.POSITIVE_INFINITY): Promise<{ ancestor: ChainHeader; undo: WindowEntry[] }> {
    const undo: WindowEntry[] = [];
    // The window holds the newest blocks applied, one after another down from the position; a
    // block missing from it cannot be undone.
    for (const [i, entry] of window.entries()) {
      if (entry.number !== position.number - i) break;
      // Above the head of a chain that a reorg left shorter, no block is there any more.
      if (entry.number > chainHead) {
        undo.push(entry);
        continue;
      }
      const header = await chain.header(entry.number);
      if (header === null) throw new InvalidAnswerError(`the node has no block ${entry.number} while a reorg is traced back`);
      if (header.hash === entry.hash) return { ancestor: header, undo };
      undo.push(entry);
      if (entry.number === 0) break;
      // The oldest entry's parent, when the chain still holds it, is the ancestor (the window keeps no undo for it).
      if (i === window.length - 1) {
        const parent = await chain.header(entry.number - 1);
        if (parent !== null && parent.hash === entry.parentHash) return { ancestor: parent, undo };
      }
    }
    throw new LedgerMismatchError(
      `block ${position.number} (${position.hash}) is no longer on the chain, and the reorg reaches deeper than the blocks whose undo the store keeps: reindex into a fresh store`,
    );
  }

  /**
   * Why the node has no block at the stored position: a reorg onto a branch shorter than the one
   * applied (its ancestor and what to undo), or null for a node that is only behind, whose head's
   * block is the one the store applied at that height. Below the window nothing tells the two
   * apart, and the indexer waits as for a node behind.
   */
  async function reorgOntoShorterBranch(position: Position, head: number): Promise<{ ancestor: ChainHeader; undo: WindowEntry[] } | null> {
    if (head >= position.number) return null;
    // Only the head's own entry is read while a node lags; the whole window once a reorg is found.
    const [text] = await store.readState(WINDOW_SPACE, [String(head)]);
    if (text === null || text === undefined) return null;
    const applied = parseWindowEntry(text);
    const header = await chain.header(head);
    if (header === null || header.hash === applied.hash) return null;
    return findAncestor(position, parseWindow(await store.readStateSpace(WINDOW_SPACE)), head);
  }

  /** A range and its facts, or null when the node does not have every block of it yet. */
  async function readRange(from: number, to: number): Promise<RangeRead | null> {
    const range = await chain.range(from, to);
    return range === null ? null : { range, facts: await factsOf(range) };
  }

  /**
   * Starts reading the range after a unit while the unit is written. A read that fails is
   * dropped: the round that would have used it reads the range again, and meets the failure itself.
   */
  function readAhead(from: number, to: number): ReadAhead {
    return { from, to, read: readRange(from, to).catch(() => null) };
  }

  /** One round: applies one unit if there is one to apply; resolves false when there is nothing to do yet. */
  async function round(): Promise<boolean> {
    // The read ahead is settled before anything else is read: what it learns of code must not
    // land after a reorg found below has made the reader forget it.
    const early = ahead;
    ahead = null;
    if (early !== null) await early.read;
    const target = await readTarget();
    const position = await readPosition();
    stats.indexed = position?.number ?? null;
    if (options.toBlock !== null && position !== null && position.number >= options.toBlock) return false;

    let undo: WindowEntry[] = [];
    let base: ChainHeader | null = null;
    if (position !== null) {
      const header = await chain.header(position.number);
      // No block at the position: a node behind (the next round asks again), or a reorg onto a
      // shorter branch, undone now rather than once the new branch has outgrown the old.
      const found =
        header === null
          ? await reorgOntoShorterBranch(position, stats.head!)
          : header.hash !== position.hash
            ? await findAncestor(position, parseWindow(await store.readStateSpace(WINDOW_SPACE)))
            : null;
      if (header === null && found === null) return false;
      if (found !== null) {
        undo = found.undo;
        base = found.ancestor;
        chain.forgetCode();
        options.onReorg?.({ from: position.number, ancestor: base.number });
      } else base = header;
    }
    const from = base === null ? options.fromBlock : base.number + 1;
    let to = Math.min(target, from + unitBlocks - 1);

    // The unit is planned outside the write lease, as its blocks arrive, over kept state read as
    // they need it. That is safe because only the indexer's own units change its kept state, and
    // each moves the position: under the lease, a position other than the one read here means the
    // plan is stale and is dropped.
    // A store without a position holds no kept state either (every unit writes both): nothing to read.
    const state = position === null ? { read: async () => new Map() as StateValues } : stateReader();
    const planner = new UnitPlanner(await state.read(keysOf([], undo)));
    planner.undoBlocks(undo);
    const plan = async (facts: readonly BlockFacts[]) => {
      planner.addState(await state.read(keysOf(facts)));
      for (const block of facts) planner.applyBlock(block, block.number > stats.head! - windowBlocks);
    };
    /** Whether a range read starts on the branch the check above found; if not, the next round looks again. */
    const continuesBase = (first: { parentHash: string }) => base === null || first.parentHash === base.hash;

    let last: ChainHeader | null = null;
    // The range read ahead while the last unit was written serves when it starts where this round
    // starts and ends within its target; it goes through the same checks as a range read now.
    if (early !== null && early.from === from && early.to <= to && undo.length === 0) {
      const read = await early.read;
      if (read !== null) {
        if (!continuesBase(read.range.blocks[0]!)) return false;
        to = early.to;
        await plan(read.facts);
        last = read.range.blocks.at(-1)!;
      }
    }
    if (to >= from && last === null) {
      let offBranch = false;
      const span = await chain.stream(from, to, async (part) => {
        if (offBranch) return;
        if (part.blocks[0]!.number === from && !continuesBase(part.blocks[0]!)) offBranch = true;
        else await plan(await factsOf(part));
      });
      // Not there yet (a node behind the one that gave the head), or no longer on the branch the
      // check above found: the next round looks again.
      if (span === null || offBranch) return false;
      last = span.last;
    }
    if (last === null && undo.length === 0) return false;
    if (stopping.signal.aborted) return false;
    last ??= base!;
    const next: Position = { number: last.number, hash: last.hash, chainId };
    // The next range is read while this unit is written; the next round checks it against the
    // stored position as it checks any range.
    if (next.number < target) ahead = readAhead(next.number + 1, Math.min(target, next.number + unitBlocks));

    const report = await store.exclusive(async () => {
      // Another indexer on the same store may have moved the position since it was read: this
      // round's plan is then stale, and the next round starts from where that one left.
      const now = await readPosition();
      if (now?.number !== position?.number || now?.hash !== position?.hash) return null;
      // Blocks that fall out of the window by this unit (fields that were never written are no harm).
      const previous = position?.number ?? from - 1;
      for (let n = Math.max(0, previous - windowBlocks + 1); n <= next.number - windowBlocks; n++) planner.forget(n);
      const unit = planner.finish(next);
      await store.apply(unit.records, unit.state);
      return { position: next, head: stats.head!, target, blocks: unit.applied, undone: unit.undone, records: unit.records.length };
    });
    if (report === null) return true;
    stats.indexed = next.number;
    stats.blocks += report.blocks;
    stats.records += report.records;
    if (report.undone > 0) {
      stats.reorgs++;
      stats.blocksUndone += report.undone;
    }
    options.onUnit?.(report);
    return true;
  }

  /** Reads kept state for one round's plan, each field once however many blocks need it. */
  function stateReader(): { read(keys: StateKeys): Promise<StateValues> } {
    const asked = new Map<string, Set<string>>();
    return {
      async read(keys) {
        const values: StateValues = new Map();
        await Promise.all(
          [...keys].map(async ([space, fieldSet]) => {
            let spaceAsked = asked.get(space);
            if (spaceAsked === undefined) asked.set(space, (spaceAsked = new Set()));
            const fields: string[] = [];
            for (const field of fieldSet) {
              if (spaceAsked.has(field)) continue;
              spaceAsked.add(field);
              fields.push(field);
            }
            if (fields.length === 0) return;
            const found = await store.readState(space, fields);
            const map = new Map<string, string>();
            fields.forEach((field, i) => {
              const value = found[i];
              if (value !== null && value !== undefined) map.set(field, value);
            });
            values.set(space, map);
          }),
        );
        return values;
      },
    };
  }

  return {
    async run() {
      let failures = 0;
      while (!stopping.signal.aborted) {
        try {
          if (chainId === "") chainId = await chain.chainId();
          const moved = await round();
          failures = 0;
          if (options.toBlock !== null && stats.indexed !== null && stats.indexed >= options.toBlock) break;
          if (!moved) await sleep(pollMs, stopping.signal);
        } catch (error) {
          if (error instanceof LedgerMismatchError) throw error;
          if (error instanceof RpcClosedError || stopping.signal.aborted) break;
          failures++;
          stats.retries++;
          const backoff = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** Math.min(failures - 1, 16));
          const waitMs = backoff / 2 + Math.random() * (backoff / 2);
          options.onRetry?.(error, Math.round(waitMs));
          await sleep(waitMs, stopping.signal).catch(() => {});
        }
      }
      return { ...stats };
    },
    stop() {
      stopping.abort();
    },
    stats: () => ({ ...stats }),
  };
}
