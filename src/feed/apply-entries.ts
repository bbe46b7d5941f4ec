/**
 * The one step of the change feed that touches the graph: validate a unit of stream entries and
 * write the valid ones. Everything else in src/feed/ (reading, claiming, acknowledging, rejecting)
 * is stream mechanics and does not depend on how records are applied, so this module is the seam
 * that changes when the record format or the store's write path does.
 */
import { createLoadValidator, IngestValidationError } from "../ingest/validate.js";
import type { IngestTarget } from "../ingest/ingest.js";
import type { IngestBatch } from "../store/store.js";

/** One stream entry to apply: its stream id, and its records as JSON Lines (one line for `record`). */
export interface FeedEntry {
  id: string;
  text: string;
}

/** An entry that was not applied, and why, in words for the rejected stream. */
export interface RejectedEntry {
  id: string;
  reason: string;
}

/** What the feed needs of a store: what ingestion needs. */
export type FeedTarget = IngestTarget;

/** Errors quoted in one rejection's reason; the rest are counted. */
const REASONS_PER_ENTRY = 3;
/** Errors the validator lists per round; entries whose errors fall beyond are caught the next round. */
const ERRORS_PER_ROUND = 10_000;

/**
 * Applies the entries, in order, as far as the store allows one unit; resolves with the entries
 * that were rejected (not applied) and their reasons. Rejects only when the store failed: some of
 * the entries may have been applied, and the caller applies the whole unit again (idempotent).
 *
 * Each entry is validated as its own source, so that every error names its entry. An invalid
 * entry is dropped whole, and the rest validated again: a later entry may have depended on it.
 * Today's validator treats one load as a set, not a sequence, so two entries that record the same
 * user or relation differently cannot share a unit; the later one is applied in a unit of its own
 * after the earlier, as if it had arrived later.
 */
export async function applyEntries(store: FeedTarget, entries: readonly FeedEntry[]): Promise<{ rejected: RejectedEntry[] }> {
  const rejected: RejectedEntry[] = [];
  let rest = entries;
  while (rest.length > 0) {
    const outcome = await validate(store, rest);
    if (outcome.kind === "valid") {
      await store.write(outcome.batch);
      break;
    }
    const byId = new Map(rest.map((entry, index) => [entry.id, index]));
    let cut = rest.length;
    for (const later of outcome.conflicts.keys()) cut = Math.min(cut, byId.get(later) ?? cut);
    const bad = new Set([...outcome.reasons.keys()].filter((id) => (byId.get(id) ?? 0) < cut));
    if (bad.size === 0 && cut < rest.length) {
      // Only order conflicts before any error: apply the entries in pieces free of the conflicts
      // found, one after the other; each piece is validated (and split) again on its own.
      for (const piece of partition(rest, outcome.conflicts)) rejected.push(...(await applyEntries(store, piece)).rejected);
      break;
    }
    for (const entry of rest) {
      const reasons = outcome.reasons.get(entry.id);
      if (reasons && bad.has(entry.id)) rejected.push({ id: entry.id, reason: summarize(reasons) });
    }
    rest = rest.filter((entry) => !bad.has(entry.id));
  }
  return { rejected: rejected.sort((x, y) => compareIds(x.id, y.id)) };
}

type Outcome =
  | { kind: "valid"; batch: IngestBatch }
  /** `conflicts`: for an entry, the earlier entries that record the same thing differently. */
  | { kind: "invalid"; reasons: Map<string, string[]>; conflicts: Map<string, string[]> };

async function validate(store: FeedTarget, entries: readonly FeedEntry[]): Promise<Outcome> {
  const validator = createLoadValidator({ sources: entries.map((entry) => entry.id), maxErrors: ERRORS_PER_ROUND });
  entries.forEach((entry, source) => {
    if (!entry.text.includes("\n")) return validator.addLine(entry.text, source, 1);
    let line = 0;
    for (const text of entry.text.split("\n")) validator.addLine(text, source, ++line);
  });
  try {
    return { kind: "valid", batch: await validator.finish(store) };
  } catch (error) {
    if (!(error instanceof IngestValidationError)) throw error;
    const byId = new Map(entries.map((entry) => [entry.id, entry]));
    const reasons = new Map<string, string[]>();
    const conflicts = new Map<string, string[]>();
    for (const report of error.errors) {
      // "ENTRY-ID:LINE: reason" or "ENTRY-ID: reason"; entry ids hold no colon. The closing
      // "… and N more errors" matches nothing: those entries are caught in a later round.
      const match = /^(\d+-\d+)(?::(\d+))?: (.*)$/s.exec(report);
      if (!match) continue;
      const [, id, line, reason] = match as unknown as [string, string, string | undefined, string];
      const entry = byId.get(id);
      if (!entry) continue;
      // A record that differs from the same record in an EARLIER entry is an update, not an error.
      const earlier = /(?:differently|with a different description) at (\d+-\d+)(?::\d+)?$/.exec(reason)?.[1];
      if (earlier !== undefined && earlier !== id) {
        conflicts.set(id, [...(conflicts.get(id) ?? []), earlier]);
        continue;
      }
      const list = reasons.get(id) ?? [];
      list.push(entry.text.includes("\n") && line !== undefined ? `line ${line}: ${reason}` : reason);
      reasons.set(id, list);
    }
    if (reasons.size === 0 && conflicts.size === 0) throw error;
    return { kind: "invalid", reasons, conflicts };
  }
}

/**
 * Consecutive pieces of the entries such that no piece holds two entries found in conflict. The
 * validator names only the first record of a conflicting group, so the groups are joined first:
 * every entry of a group then starts a new piece when another of its group is in the current one.
 */
function partition(entries: readonly FeedEntry[], conflicts: ReadonlyMap<string, readonly string[]>): FeedEntry[][] {
  const parent = new Map<string, string>();
  const root = (id: string): string => {
    let top = id;
    while (parent.has(top)) top = parent.get(top)!;
    if (top !== id) parent.set(id, top);
    return top;
  };
  for (const [later, earliers] of conflicts) {
    for (const earlier of earliers) if (root(later) !== root(earlier)) parent.set(root(later), root(earlier));
  }
  const inConflict = new Set([...conflicts.keys(), ...[...conflicts.values()].flat()]);
  const pieces: FeedEntry[][] = [];
  let piece: FeedEntry[] = [];
  const groups = new Set<string>();
  for (const entry of entries) {
    if (inConflict.has(entry.id)) {
      const group = root(entry.id);
      if (groups.has(group)) {
        pieces.push(piece);
        piece = [];
        groups.clear();
      }
      groups.add(group);
    }
    piece.push(entry);
  }
  pieces.push(piece);
  return pieces;
}

function summarize(reasons: readonly string[]): string {
  const shown = reasons.slice(0, REASONS_PER_ENTRY).join("; ");
  const more = reasons.length - REASONS_PER_ENTRY;
  return more > 0 ? `${shown}; and ${more} more error${more === 1 ? "" : "s"}` : shown;
}

/** Orders stream ids ("ms-seq") numerically. */
export function compareIds(x: string, y: string): number {
  const [xm = "0", xs = "0"] = x.split("-");
  const [ym = "0", ys = "0"] = y.split("-");
  return Number(xm) - Number(ym) || Number(xs) - Number(ys);
}
