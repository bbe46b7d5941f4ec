import type { LedgerStore } from "../../../src/chain/indexer.js";
import type { ChangeRecord, StateChange } from "../../../src/chain/ledger.js";

/**
 * A LedgerStore in memory for the indexer loop's own tests: units applied whole, one at a time,
 * and the records they hold kept as the lines chainOracle speaks. The CLI's tests run the same
 * loop on real Redis through the store's writer.
 */
export class MemoryLedger implements LedgerStore {
  readonly graph = new Set<string>();
  readonly state = new Map<string, Map<string, string>>();
  units = 0;
  private queue: Promise<unknown> = Promise.resolve();

  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work);
    this.queue = run.catch(() => {});
    return run;
  }
  async readState(space: string, fields: readonly string[]) {
    const stored = this.state.get(space);
    return fields.map((field) => stored?.get(field) ?? null);
  }
  async readStateSpace(space: string) {
    return new Map(this.state.get(space) ?? []);
  }
  async apply(records: readonly ChangeRecord[], changes: readonly StateChange[]) {
    for (const record of records) {
      const line = `${record.type} ${record.address} ${record.contract}`;
      if (record.op === "upsert") this.graph.add(line);
      else this.graph.delete(line);
    }
    for (const { space, field, value } of changes) {
      let fields = this.state.get(space);
      if (!fields) this.state.set(space, (fields = new Map()));
      if (value === null) fields.delete(field);
      else fields.set(field, value);
    }
    this.units++;
  }
  lines(): string[] {
    return [...this.graph].sort();
  }
}
