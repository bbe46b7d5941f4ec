/**
 * The one step of the change feed that touches the graph: validate a unit of stream entries and
 * write the valid ones. Everything else in src/feed/ (reading, claiming, acknowledging, rejecting)
 * is stream mechanics and does not depend on how records are applied, so this module is the seam
 * that changes when the record format or the store's write path does.
 */
import { createLoadValidator, IngestValidationError } from "../ingest/validate.js";
import type { IngestTarget } from "../ingest/ingest.js";
import type { GraphStore } from "../store/store.js";
import type { IngestBatch } from "../store/store.js";

/** One stream entry to apply: its stream id, and its records as JSON Lines in UTF-8 (one line for `record`). */
export interface FeedEntry {
  id: string;
  bytes: Buffer;
}

/** An entry that was not applied, and why, in words for the rejected stream. */
export interface RejectedEntry {
  id: string;
  reason: string;
}

/** What the feed needs of a store: what ingestion needs. */
export type FeedTarget = IngestTarget & Pick<GraphStore, "exclusive">;

/** Options of applyEntries. */
export interface ApplyOptions {
  /**
   * The stream and group the entries came from: the entries applied are acknowledged as part of
   * the store's write, so that a write completed by another writer after a crash acknowledges them
   * too (redis engine; rejected entries are the caller's to acknowledge).
   */
  acknowledge?: { stream: string; group: string };
}

/** Errors quoted in one rejection's reason; the rest are counted. */
const REASONS_PER_ENTRY = 3;
/** Errors the validator lists per round; entries whose errors fall beyond are caught the next round. */
const ERRORS_PER_ROUND = 10_000;

/**
 * Applies the entries, in order, as far as the store allows one unit; resolves with the entries
 * that were rejected (not applied) and their reasons. Rejects only when the store failed: some of
 * the entries may have been applied, and the caller applies the whole unit again (idempotent).
 *
 * The entries are validated as one load, each as its own source so that every error names its
 * entry; records about the same thing apply in entry order, as in a load. An invalid entry is
 * dropped whole, and the rest validated again: a later entry may have depended on it.
 */
export async function applyEntries(store: FeedTarget, entries: readonly FeedEntry[], options: ApplyOptions = {}): Promise<{ rejected: RejectedEntry[] }> {
  const rejected: RejectedEntry[] = [];
  let rest = entries;
  while (rest.length > 0) {
    const outcome = await validate(store, rest);
    if (outcome.kind === "valid") {
      const ack = options.acknowledge;
      await store.write(outcome.batch, ack ? { acknowledge: { ...ack, ids: rest.map((entry) => entry.id) } } : {});
      break;
    }
    for (const entry of rest) {
      const reasons = outcome.reasons.get(entry.id);
      if (reasons) rejected.push({ id: entry.id, reason: summarize(reasons) });
    }
    rest = rest.filter((entry) => !outcome.reasons.has(entry.id));
  }
  return { rejected: rejected.sort((x, y) => compareIds(x.id, y.id)) };
}

type Outcome = { kind: "valid"; batch: IngestBatch } | { kind: "invalid"; reasons: Map<string, string[]> };

async function validate(store: FeedTarget, entries: readonly FeedEntry[]): Promise<Outcome> {
  const validator = createLoadValidator({ sources: entries.map((entry) => entry.id), maxErrors: ERRORS_PER_ROUND });
  entries.forEach(({ bytes }, source) => {
    // As bytes, as Redis holds them, so that the compact records are read without a string each
    // (validate.ts). Lines end at LF only.
    let line = 0;
    for (let start = 0; start <= bytes.length; ) {
      const lf = bytes.indexOf(0x0a, start);
      const end = lf === -1 ? bytes.length : lf;
      validator.addLineBytes(bytes, start, end, source, ++line);
      start = end + 1;
    }
  });
  try {
    return { kind: "valid", batch: await validator.finish(store) };
  } catch (error) {
    if (!(error instanceof IngestValidationError)) throw error;
    const byId = new Map(entries.map((entry) => [entry.id, entry]));
    const reasons = new Map<string, string[]>();
    for (const report of error.errors) {
      // "ENTRY-ID:LINE: reason" or "ENTRY-ID: reason"; entry ids hold no colon. The closing
      // "… and N more errors" matches nothing: those entries are caught in a later round.
      const match = /^(\d+-\d+)(?::(\d+))?: (.*)$/s.exec(report);
      if (!match) continue;
      const [, id, line, reason] = match as unknown as [string, string, string | undefined, string];
      const entry = byId.get(id);
      if (!entry) continue;
      const list = reasons.get(id) ?? [];
      list.push(entry.bytes.includes(0x0a) && line !== undefined ? `line ${line}: ${reason}` : reason);
      reasons.set(id, list);
    }
    if (reasons.size === 0) throw error;
    return { kind: "invalid", reasons };
  }
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
