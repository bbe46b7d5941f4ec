import { byteOrderMarkLength } from "../ingest/read-lines.js";
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
export function decodeEntry(entry: StreamEntry & { fields: [string, Buffer][] }): DecodedEntry {
  const { id, fields } = entry;
  const record: [string, Buffer][] = [];
  const records: [string, Buffer][] = [];
  for (const field of fields) {
    if (field[0] === RECORD_FIELD) record.push(field);
    else if (field[0] === RECORDS_FIELD) records.push(field);
  }
  if (record.length + records.length === 0) return { id, reason: `the entry has neither a "${RECORD_FIELD}" nor a "${RECORDS_FIELD}" field` };
  if (record.length > 0 && records.length > 0) return { id, reason: `the entry has both a "${RECORD_FIELD}" and a "${RECORDS_FIELD}" field; send one` };
  if (record.length + records.length > 1) return { id, reason: `the entry has the field "${record.length > 0 ? RECORD_FIELD : RECORDS_FIELD}" more than once` };
  if (record.length === 1) {
    // One record: read as text, where trimming knows every kind of white space.
    const text = withoutByteOrderMark(record[0]![1]).toString("utf8").trimEnd();
    if (text.trim() === "") return { id, reason: `"${RECORD_FIELD}" is empty` };
    if (text.includes("\n")) return { id, reason: `"${RECORD_FIELD}" holds more than one line; send JSON Lines in "${RECORDS_FIELD}"` };
    return { id, bytes: Buffer.from(text), records: 1 };
  }
  // JSON Lines of no record, as an empty file is to `relgraph ingest`: valid, and applied as nothing
  // (acknowledged, not rejected), so that a producer flushing an empty batch raises no alarm.
  const bytes = withoutByteOrderMark(records[0]![1]);
  return { id, bytes, records: countLines(bytes) };
}

/**
 * The entry's bytes without a leading byte-order mark: the ingestion format tolerates one at the
 * start of a file (readLines), and `records "$(cat changes.jsonl)"` of such a file carries it.
 */
function withoutByteOrderMark(bytes: Buffer): Buffer {
  return bytes.subarray(byteOrderMarkLength(bytes, 0, bytes.length));
}

/** Non-blank lines of JSON Lines, counted without splitting them: a line of spaces, tabs and CRs is blank. */
export function countLines(bytes: Buffer): number {
  let count = 0;
  let start = 0;
  while (start <= bytes.length) {
    let end = bytes.indexOf(0x0a, start);
    if (end === -1) end = bytes.length;
    for (let i = start; i < end; i++) {
      const byte = bytes[i]!;
      if (byte !== 32 && byte !== 9 && byte !== 13) {
        count++;
        break;
      }
    }
    start = end + 1;
  }
  return count;
}
