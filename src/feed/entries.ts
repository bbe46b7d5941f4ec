import type { FeedEntry, RejectedEntry } from "./apply-entries.js";
import type { StreamEntry } from "./stream.js";

/** The field of an entry holding one JSON record. */
export const RECORD_FIELD = "record";
/** The field of an entry holding records as JSON Lines. */
export const RECORDS_FIELD = "records";

/** An entry read from the stream, decoded: records to apply, or why it cannot be. */
export type DecodedEntry = (FeedEntry & { records: number }) | (RejectedEntry & { records?: undefined });

/**
 * Takes the records out of a live entry (fields not null). An entry holds exactly one of `record`
 * (one JSON record) and `records` (JSON Lines); other fields are the producer's and ignored.
 * Whether the records are JSON, and valid, is for the validator to say.
 */
export function decodeEntry(entry: StreamEntry & { fields: [string, string][] }): DecodedEntry {
  const { id, fields } = entry;
  const record: [string, string][] = [];
  const records: [string, string][] = [];
  for (const field of fields) {
    if (field[0] === RECORD_FIELD) record.push(field);
    else if (field[0] === RECORDS_FIELD) records.push(field);
  }
  if (record.length + records.length === 0) return { id, reason: `the entry has neither a "${RECORD_FIELD}" nor a "${RECORDS_FIELD}" field` };
  if (record.length > 0 && records.length > 0) return { id, reason: `the entry has both a "${RECORD_FIELD}" and a "${RECORDS_FIELD}" field; send one` };
  if (record.length + records.length > 1) return { id, reason: `the entry has the field "${record.length > 0 ? RECORD_FIELD : RECORDS_FIELD}" more than once` };
  if (record.length === 1) {
    const text = withoutByteOrderMark(record[0]![1]).trimEnd();
    if (text.trim() === "") return { id, reason: `"${RECORD_FIELD}" is empty` };
    if (text.includes("\n")) return { id, reason: `"${RECORD_FIELD}" holds more than one line; send JSON Lines in "${RECORDS_FIELD}"` };
    return { id, text, records: 1 };
  }
  // JSON Lines of no record, as an empty file is to `relgraph ingest`: valid, and applied as nothing
  // (acknowledged, not rejected), so that a producer flushing an empty batch raises no alarm.
  const text = withoutByteOrderMark(records[0]![1]);
  return { id, text, records: countLines(text) };
}

/**
 * The entry's text without a leading byte-order mark: the ingestion format tolerates one at the
 * start of a file (readLines), and `records "$(cat changes.jsonl)"` of such a file carries it.
 */
function withoutByteOrderMark(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Non-blank lines of JSON Lines text, counted without splitting it. */
export function countLines(text: string): number {
  let count = 0;
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf("\n", start);
    if (end === -1) end = text.length;
    for (let i = start; i < end; i++) {
      const c = text.charCodeAt(i);
      if (c !== 32 && c !== 9 && c !== 13) {
        count++;
        break;
      }
    }
    start = end + 1;
  }
  return count;
}
