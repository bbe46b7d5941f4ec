/**
 * Validation of one load (contract.md, "Ingestion format" and "Changes"). Records arrive one at a
 * time, in any order and from any number of files; nothing is written until every record has been
 * checked, here and against what is already stored. The rules beyond the contract's text, written
 * down in docs/reference.md ("Loading data"):
 *
 * - Every record is a JSON object with a known `type` and only that type's fields, plus an optional
 *   `op` ("upsert", the default, or "delete"); blank lines are skipped.
 * - `user`: `relationId` and `addresses` (an array, possibly empty) are required; `name` and `avatar`
 *   may be absent or null and then read as "". `social` / `game` may be absent or null; when present,
 *   `social.username` / `game.gameId` are required non-empty strings without commas (list
 *   parameters are comma-separated) or surrounding spaces, and their `name` / `avatar` default to "".
 *   A username (case-folded), an address or a game id names at most one user.
 * - `friend`: `description` may be absent and then reads as "". Self-friend and self-follow are
 *   errors, and so is a release whose peers include the releasing user.
 * - A delete names what it deletes and nothing else: `relationId` (user, release), `a`/`b` (friend,
 *   a `description` is allowed and ignored), `from`/`to`, `address`/`contract`. A release delete
 *   withdraws the release, as `"peers":[]` does. Deleting what does not exist is not an error.
 * - Records about the same thing (a user, a friend pair in either direction, a follow, an
 *   interaction, an nft, a user's release) apply in load order: the last one wins. A user delete
 *   voids every earlier record of the load that names that user (their user records, edges and
 *   releases, and their place in others' releases) and the earlier interaction and nft records of the
 *   addresses they held, then erases what is stored of them. The validator hands the store the net
 *   effect (IngestBatch), so the store never sees two records about one thing.
 * - A record that survives must only name users that exist once the load is applied: defined by the
 *   load, or stored and not deleted by it.
 * - An identity (address, username, game id) already stored for another user is an error, unless
 *   this load redefines or deletes that user, which frees the identity.
 *
 * The parts, each taking the load's state (validate/load-state.ts) explicitly: validate/records.ts
 * reads and checks records one at a time, validate/net-effect.ts nets the load to its effect, and
 * validate/references.ts checks what survives against the store. This module composes them.
 */
import type { IngestBatch } from "../store/store.js";
import { ErrorLog } from "./validate/error-log.js";
import { LINE_SPAN, LoadState, type StoredGraph } from "./validate/load-state.js";
import { batchOf, netEffect } from "./validate/net-effect.js";
import { RecordReader } from "./validate/records.js";
import { checkClaims, checkReferences } from "./validate/references.js";

export type { StoredGraph } from "./validate/load-state.js";

/** Options of createLoadValidator. */
export interface LoadValidatorOptions {
  /** Names of the sources (file paths) that error locations cite, by index. */
  sources: readonly string[];
  /** How many errors a report lists before "… and N more errors". */
  maxErrors?: number;
}

/** Collects one load's records, then checks them as a whole and hands back the batch. */
export interface LoadValidator {
  /** Records seen so far (non-blank lines). */
  readonly records: number;
  /** Errors found so far: finish will throw when there are any. */
  readonly errorsSoFar: number;
  /** Parses and checks one line of JSON Lines; blank lines are skipped. Lines are 1-based. */
  addLine(text: string, source: number, line: number): void;
  /** addLine of the line in bytes[start, end), UTF-8 without its line break: the common compact records are read without text. */
  addLineBytes(bytes: Buffer, start: number, end: number, source: number, line: number): void;
  /** Checks one already-parsed record. */
  addRecord(value: unknown, source: number, line: number): void;
  /** Records an error found outside any record; line 0 cites the source alone. */
  reject(source: number, line: number, reason: string): void;
  /** Runs the checks that need the whole load and the store; throws IngestValidationError on any error. */
  finish(store: StoredGraph): Promise<IngestBatch>;
}

/** Thrown when a load holds invalid records; nothing was written. */
export class IngestValidationError extends Error {
  /**
   * @param errors the report: `file:line: reason` lines in file and line order, up to the limit,
   *   then "… and N more errors".
   * @param total how many errors were found in all.
   */
  constructor(
    readonly errors: readonly string[],
    readonly total: number,
  ) {
    super(`${total} error${total === 1 ? "" : "s"} in the load; nothing was written`);
    this.name = "IngestValidationError";
  }
}

/** Creates a validator for one load. */
export function createLoadValidator(options: LoadValidatorOptions): LoadValidator {
  return new Validation(new ErrorLog(options.sources, options.maxErrors ?? 100));
}

/** One load's validation: a reader fills the state record by record; finish nets it and checks it against the store. */
class Validation implements LoadValidator {
  private readonly state = new LoadState();
  private readonly reader: RecordReader;

  constructor(private readonly errors: ErrorLog) {
    this.reader = new RecordReader(this.state, errors);
  }

  get records(): number {
    return this.reader.records;
  }

  get errorsSoFar(): number {
    return this.errors.count;
  }

  addLine(text: string, source: number, line: number): void {
    this.reader.addLine(text, source, line);
  }

  addLineBytes(bytes: Buffer, start: number, end: number, source: number, line: number): void {
    this.reader.addLineBytes(bytes, start, end, source, line);
  }

  addRecord(value: unknown, source: number, line: number): void {
    this.reader.addRecord(value, source, line);
  }

  reject(source: number, line: number, reason: string): void {
    this.errors.add(source * LINE_SPAN + line, reason);
  }

  async finish(store: StoredGraph): Promise<IngestBatch> {
    const { state, errors } = this;
    const net = await netEffect(state, store);
    const releases = await checkReferences(state, errors, store, net);
    await checkClaims(state, errors, store);
    if (errors.count > 0) throw new IngestValidationError(errors.report(), errors.count);
    return batchOf(state, net, releases);
  }
}
