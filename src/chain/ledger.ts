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
  // Gathered by contract first: a space's name is made once per contract, not once per move.
  const balances = new Map<string, Set<string>>();
  const interactions = new Map<string, Set<string>>();
  const newSet = () => new Set<string>();
  for (const entry of undo) {
    for (const [contract, holder] of entry.undo.balances) inner(balances, contract, newSet).add(holder);
    for (const [address, contract] of entry.undo.interactions) inner(interactions, contract, newSet).add(address);
  }
  for (const block of facts) {
    for (const move of block.moves) inner(balances, move.contract, newSet).add(move.holder);
    for (const { address, contract } of block.interactions) inner(interactions, contract, newSet).add(address);
  }
  const keys: StateKeys = new Map();
  for (const [contract, holders] of balances) keys.set(balanceSpace(contract), holders);
  for (const [contract, addresses] of interactions) keys.set(interactionSpace(contract), addresses);
  return keys;
}

/** Reads of the state fields a unit needs: space → field → value (absent: not stored). */
export type StateValues = Map<string, Map<string, string>>;

/** What `outer` holds at `key`, made and added when absent. */
function inner<K, T>(outer: Map<K, T>, key: K, make: () => T): T {
  let value = outer.get(key);
  if (value === undefined) outer.set(key, (value = make()));
  return value;
}

/** The state read for a unit, and the same state as planned, by contract then address. */
class Planned<V> {
  private readonly contracts = new Map<string, { before: Map<string, V>; after: Map<string, V>; stored: ReadonlyMap<string, string> }>();

  constructor(
    private readonly stored: (contract: string) => ReadonlyMap<string, string>,
    private readonly decode: (value: string | undefined) => V,
  ) {}

  /** The contract of the last look-up and its maps: moves and calls come in runs of one contract. */
  private last: { contract: string; maps: { before: Map<string, V>; after: Map<string, V>; stored: ReadonlyMap<string, string> } } | null = null;

  private of(contract: string) {
    if (this.last?.contract === contract) return this.last.maps;
    let maps = this.contracts.get(contract);
    if (maps === undefined) this.contracts.set(contract, (maps = { before: new Map<string, V>(), after: new Map<string, V>(), stored: this.stored(contract) }));
    this.last = { contract, maps };
    return maps;
  }

  /** The value as planned, read from the state at first. */
  get(contract: string, address: string): V {
    const maps = this.of(contract);
    let value = maps.after.get(address);
    if (value === undefined) {
      value = this.decode(maps.stored.get(address));
      maps.before.set(address, value);
      maps.after.set(address, value);
    }
    return value;
  }

  /** Sets the value as planned (after a get() of the same pair). */
  set(contract: string, address: string, value: V): void {
    this.of(contract).after.set(address, value);
  }

  /** Calls `changed` for each pair whose planned value differs from the value read. */
  forEachChange(changed: (contract: string, address: string, before: V, after: V) => void): void {
    for (const [contract, { before, after }] of this.contracts) {
      for (const [address, value] of after) {
        const was = before.get(address)!;
        if (value !== was) changed(contract, address, was, value);
      }
    }
  }
}

/**
 * Plans one unit over the state read for it: undo first (undoBlocks), then apply blocks in order
 * (applyBlock), then finish with the new position. The records it gives are the net change from
 * the state read to the state planned, one per thing changed.
 */
export class UnitPlanner {
  /** Balances by collection, then holder. */
  private readonly balances: Planned<bigint>;
  /** Interactions by contract, then address. */
  private readonly interactions: Planned<boolean>;
  private readonly windowSet: WindowEntry[] = [];
  private readonly windowDeleted = new Set<number>();
  private applied = 0;
  private undone = 0;

  constructor(private readonly values: StateValues) {
    // A space absent from the state read gets its (empty) map now, which addState fills later.
    const space = (name: string) => inner(values, name, () => new Map<string, string>());
    this.balances = new Planned((contract) => space(balanceSpace(contract)), (stored) => (stored === undefined ? 0n : BigInt(stored)));
    this.interactions = new Planned((contract) => space(interactionSpace(contract)), (stored) => stored !== undefined);
  }

  /**
   * Adds state read after the planner was made, for blocks yet to be applied: a field the plan has
   * already used keeps its planned value.
   */
  addState(values: StateValues): void {
    for (const [space, fields] of values) {
      const known = this.values.get(space);
      if (known === undefined) this.values.set(space, new Map(fields));
      else for (const [field, value] of fields) known.set(field, value);
    }
  }

  /** Undoes window entries, newest first (the caller gives them so), back to their common ancestor. */
  undoBlocks(entries: readonly WindowEntry[]): void {
    for (const entry of entries) {
      for (const [contract, holder, before] of entry.undo.balances) {
        this.balances.get(contract, holder);
        this.balances.set(contract, holder, before === null ? 0n : BigInt(before));
      }
      for (const [address, contract] of entry.undo.interactions) {
        this.interactions.get(contract, address);
        this.interactions.set(contract, address, false);
      }
      this.windowDeleted.add(entry.number);
      this.undone++;
    }
  }

  /** Applies one block's facts; with `keepUndo`, the block joins the undo window. */
  applyBlock(facts: BlockFacts, keepUndo: boolean): void {
    const firsts: [string, string][] = [];
    for (const { address, contract } of facts.interactions) {
      if (this.interactions.get(contract, address)) continue;
      this.interactions.set(contract, address, true);
      firsts.push([address, contract]);
    }
    // Each balance the block changes, as it was before the block, by collection then holder.
    const before = keepUndo ? new Map<string, Map<string, [string, string, string | null]>>() : null;
    for (const { contract, holder, delta } of facts.moves) {
      const current = this.balances.get(contract, holder);
      if (before !== null) {
        const holders = inner(before, contract, () => new Map<string, [string, string, string | null]>());
        if (!holders.has(holder)) holders.set(holder, [contract, holder, current === 0n ? null : current.toString()]);
      }
      this.balances.set(contract, holder, current + delta);
    }
    if (before !== null) {
      const balances = [...before.values()].flatMap((holders) => [...holders.values()]);
      this.windowSet.push({ number: facts.number, hash: facts.hash, parentHash: facts.parentHash, undo: { balances, interactions: firsts } });
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
    this.interactions.forEachChange((contract, address, _, after) => {
      records.push({ op: after ? "upsert" : "delete", type: "interaction", address, contract });
      state.push({ space: interactionSpace(contract), field: address, value: after ? "1" : null });
    });
    this.balances.forEachChange((contract, holder, before, after) => {
      state.push({ space: balanceSpace(contract), field: holder, value: after === 0n ? null : after.toString() });
      // A holder holds while its balance is above zero. A balance below zero is one whose tokens
      // came before the first block indexed (--from-block): it is not taken for a holding.
      if (after > 0n !== before > 0n) records.push({ op: after > 0n ? "upsert" : "delete", type: "nft", address: holder, contract });
    });
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

/** One stored entry of the undo window. */
export function parseWindowEntry(text: string): WindowEntry {
  return JSON.parse(text) as WindowEntry;
}

/** The stored undo window, newest block first. */
export function parseWindow(fields: ReadonlyMap<string, string>): WindowEntry[] {
  return [...fields.values()].map(parseWindowEntry).sort((x, y) => y.number - x.number);
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
