import { createLoadValidator } from "../ingest/validate.js";
import type { GraphStore } from "../store/store.js";
import { LedgerMismatchError, type LedgerStore } from "./indexer.js";
import type { ChangeRecord, StateChange } from "./ledger.js";

/**
 * The indexer's ledger on a graph store: its change records go through the same validation as a
 * load of `relgraph ingest` (the same "Changes" rules, the same net effect), and are written with
 * the ledger's state (position, undo window, balances) as one unit of the store's writer, so that
 * a unit killed at any point is completed whole by the next writer, state included.
 */
export function graphLedger(store: GraphStore): LedgerStore {
  return {
    exclusive: (work) => store.exclusive(work).catch(fatal),
    readState: (space, fields) => store.keptState(space, fields),
    readStateSpace: (space) => store.keptSpace(space),
    async apply(records: readonly ChangeRecord[], state: readonly StateChange[]) {
      const validator = createLoadValidator({ sources: ["chain"] });
      records.forEach((record, i) => validator.addRecord(record, 0, i + 1));
      const batch = await validator.finish(store);
      await store.write(batch, { keep: state });
    },
  };
}

/** A journal this relgraph cannot finish (another version's) is no outage to wait out: the indexer stops. */
function fatal(error: unknown): never {
  if ((error as Error).name === "JournalFormatError") throw new LedgerMismatchError((error as Error).message);
  throw error;
}
