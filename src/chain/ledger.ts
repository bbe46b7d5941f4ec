import type { AddressContract, BlockFacts } from "./derive.js";

/**
 * The indexer's ledger: the state it keeps beside the graph, and the planning of one unit of
 * changes against it. Pure: the caller reads the state a unit needs (keysOf), plans the unit here,
 * and writes its records and its state changes as ONE unit of the store's writer, so that the
 * position, the undo window and the balances always describe exactly the records applied.
 *
 * State, as spaces of fields (the store keeps each space as one hash):
 * - POSITION_SPACE: the last block applied (number, hash) and the chain's id;
 * - WINDOW_SPACE: by block number, the recent blocks applied, each with its hash, parent hash and
 *   what undoes it (the balances it changed, as they were before it; the interactions it was the
 *   first to record). A reorg is undone from these back to the common ancestor;
 * - balanceSpace(collection): by holder, tokens held (every id together), while not zero;
 * - interactionSpace(contract): by address, "1" while the interaction is recorded by the indexer.
 *   An interaction repeated in a later block is not recorded again, so undoing that block leaves it.
 */

/** The last block applied. */
export const POSITION_SPACE = "chain:position";
/** Recent blocks applied, by number, with what undoes each. */
export const WINDOW_SPACE = "chain:window";
/** The one field of POSITION_SPACE. */
export const POSITION_FIELD = "block";

/** Holders' balances of one collection. */
export function balanceSpace(contract: string): string {
  return `chain:balance:${contract}`;
}

/** Addresses the indexer recorded an interaction with one contract for. */
export function interactionSpace(contract: string): string {
  return `chain:interaction:${contract}`;
}

/** One change of the kept state: a field set, or deleted (value null). */
export interface StateChange {
  space: string;
  field: string;
  value: string | null;
}

/** Where the indexer stands: the last block applied. */
export interface Position {
  number: number;
  hash: string;
  /** eth_chainId of the chain indexed (hex), so that a store is never continued from another chain. */
  chainId: string;
}

/** A block in the undo window. */
export interface WindowEntry {
  number: number;
  hash: string;
  parentHash: string;
  /** What undoes the block: balances before it ([collection, holder, balance or null]), interactions it recorded first. */
  undo: { balances: [string, string, string | null][]; interactions: [string, string][] };
}

/** A change record in the ingestion format. */
export interface ChangeRecord {
  op: "upsert" | "delete";
  type: "interaction" | "nft";
  address: string;
  contract: string;
}

/** A planned unit: its records, and the state changes written with them. */
export interface LedgerUnit {
  records: ChangeRecord[];
  state: StateChange[];
  /** Blocks applied and undone by the unit. */
  applied: number;
  undone: number;
}

/** The state fields a unit reads before it is planned, by space. */
export type StateKeys = Map<string, Set<string>>;

/** The state fields that applying `facts` and undoing `undo` read. */
export function keysOf(facts: readonly BlockFacts[], undo: readonly WindowEntry[] = []): StateKeys {
  const keys: StateKeys = new Map();
  const add = (space: string, field: string) => {
    let fields = keys.get(space);
    if (!fields) keys.set(space, (fields = new Set()));
    fields.add(field);
  };
  for (const entry of undo) {
    for (const [contract, holder] of entry.undo.balances) add(balanceSpace(contract), holder);
    for (const [address, contract] of entry.undo.interactions) add(interactionSpace(contract), address);
  }
  for (const block of facts) {
    for (const move of block.moves) add(balanceSpace(move.contract), move.holder);
    for (const { address, contract } of block.interactions) add(interactionSpace(contract), address);
  }
  return keys;
}

/** Reads of the state fields a unit needs: space → field → value (absent: not stored). */
export type StateValues = Map<string, Map<string, string>>;

const pairKey = (a: string, b: string) => `${a}|${b}`;

/**
 * Plans one unit over the state read for it: undo first (undoBlocks), then apply blocks in order
 * (applyBlock), then finish with the new position. The records it gives are the net change from
 * the state read to the state planned, one per thing changed.
 */
export class UnitPlanner {
  /** Balances before the unit and as planned, by "collection|holder". */
  private readonly balancesBefore = new Map<string, bigint>();
  private readonly balances = new Map<string, bigint>();
  /** Interactions before the unit and as planned, by "address|contract". */
  private readonly interactionsBefore = new Map<string, boolean>();
  private readonly interactions = new Map<string, boolean>();
  private readonly windowSet: WindowEntry[] = [];
  private readonly windowDeleted = new Set<number>();
  private applied = 0;
  private undone = 0;

  constructor(private readonly values: StateValues) {}

  private balance(contract: string, holder: string): bigint {
    const key = pairKey(contract, holder);
    let value = this.balances.get(key);
    if (value === undefined) {
      const stored = this.values.get(balanceSpace(contract))?.get(holder);
      value = stored === undefined ? 0n : BigInt(stored);
      this.balancesBefore.set(key, value);
      this.balances.set(key, value);
    }
    return value;
  }

  private interacted(address: string, contract: string): boolean {
    const key = pairKey(address, contract);
    let value = this.interactions.get(key);
    if (value === undefined) {
      value = this.values.get(interactionSpace(contract))?.has(address) ?? false;
      this.interactionsBefore.set(key, value);
      this.interactions.set(key, value);
    }
    return value;
  }

  /** Undoes window entries, newest first (the caller gives them so), back to their common ancestor. */
  undoBlocks(entries: readonly WindowEntry[]): void {
    for (const entry of entries) {
      for (const [contract, holder, before] of entry.undo.balances) {
        this.balance(contract, holder);
        this.balances.set(pairKey(contract, holder), before === null ? 0n : BigInt(before));
      }
      for (const [address, contract] of entry.undo.interactions) {
        this.interacted(address, contract);
        this.interactions.set(pairKey(address, contract), false);
      }
      this.windowDeleted.add(entry.number);
      this.undone++;
    }
  }

  /** Applies one block's facts; with `keepUndo`, the block joins the undo window. */
  applyBlock(facts: BlockFacts, keepUndo: boolean): void {
    const before = new Map<string, [string, string, string | null]>();
    const firsts: [string, string][] = [];
    for (const { address, contract } of facts.interactions) {
      if (this.interacted(address, contract)) continue;
      this.interactions.set(pairKey(address, contract), true);
      firsts.push([address, contract]);
    }
    for (const { contract, holder, delta } of facts.moves) {
      const key = pairKey(contract, holder);
      const current = this.balance(contract, holder);
      if (!before.has(key)) before.set(key, [contract, holder, current === 0n ? null : current.toString()]);
      this.balances.set(key, current + delta);
    }
    if (keepUndo) {
      this.windowSet.push({ number: facts.number, hash: facts.hash, parentHash: facts.parentHash, undo: { balances: [...before.values()], interactions: firsts } });
      this.windowDeleted.delete(facts.number);
    }
    this.applied++;
  }

  /** Drops a block from the undo window (it is deeper than any reorg the indexer undoes). */
  forget(number: number): void {
    if (!this.windowSet.some((entry) => entry.number === number)) this.windowDeleted.add(number);
  }

  /** The unit: its records and state changes, ending at `position`. */
  finish(position: Position): LedgerUnit {
    const records: ChangeRecord[] = [];
    const state: StateChange[] = [];
    for (const [key, after] of this.interactions) {
      if (after === this.interactionsBefore.get(key)) continue;
      const [address, contract] = key.split("|") as [string, string];
      records.push({ op: after ? "upsert" : "delete", type: "interaction", address, contract });
      state.push({ space: interactionSpace(contract), field: address, value: after ? "1" : null });
    }
    for (const [key, after] of this.balances) {
      const before = this.balancesBefore.get(key)!;
      if (after === before) continue;
      const [contract, holder] = key.split("|") as [string, string];
      state.push({ space: balanceSpace(contract), field: holder, value: after === 0n ? null : after.toString() });
      // A holder holds while its balance is above zero. A balance below zero is one whose tokens
      // came before the first block indexed (--from-block): it is not taken for a holding.
      if (after > 0n !== before > 0n) records.push({ op: after > 0n ? "upsert" : "delete", type: "nft", address: holder, contract });
    }
    for (const number of this.windowDeleted) state.push({ space: WINDOW_SPACE, field: String(number), value: null });
    for (const entry of this.windowSet) state.push({ space: WINDOW_SPACE, field: String(entry.number), value: JSON.stringify(entry) });
    state.push({ space: POSITION_SPACE, field: POSITION_FIELD, value: JSON.stringify(position) });
    return { records, state, applied: this.applied, undone: this.undone };
  }
}

/** A stored position, checked; null when absent. */
export function parsePosition(text: string | null | undefined): Position | null {
  if (text === null || text === undefined) return null;
  const value = JSON.parse(text) as Partial<Position>;
  if (typeof value.number !== "number" || typeof value.hash !== "string" || typeof value.chainId !== "string") {
    throw new Error(`the stored chain position is malformed: ${text.slice(0, 200)}`);
  }
  return { number: value.number, hash: value.hash, chainId: value.chainId };
}

/** The stored undo window, newest block first. */
export function parseWindow(fields: ReadonlyMap<string, string>): WindowEntry[] {
  return [...fields.values()].map((text) => JSON.parse(text) as WindowEntry).sort((x, y) => y.number - x.number);
}

/** The interactions and holdings (as pairs) a planned unit leaves, for tests and logs. */
export function recordCounts(records: readonly ChangeRecord[]): Record<"interactions" | "nfts" | "deletes", number> {
  return {
    interactions: records.filter((r) => r.op === "upsert" && r.type === "interaction").length,
    nfts: records.filter((r) => r.op === "upsert" && r.type === "nft").length,
    deletes: records.filter((r) => r.op === "delete").length,
  };
}

export type { AddressContract };
