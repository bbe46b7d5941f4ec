/**
 * What one load has recorded so far, held for the whole validation: the records read (records.ts),
 * netted to their effect (net-effect.ts) and checked against the store (references.ts).
 */
import { TextIndex } from "../../store/text-index.js";
import type { GraphStore, UserInput } from "../../store/store.js";
import { float64Column, int32Column, uint32Column, uint8Column } from "../columns.js";

/** What validation reads from the store: whether referenced users and claimed identities exist, and what deleted users held. */
export type StoredGraph = Pick<GraphStore, "resolve" | "resolveRelationIds" | "relationIds" | "users">;

// Column marks of a relation record: what it does, or that a later record or a user delete voids it.
export const UPSERT = 0;
export const DELETE = 1;
export const VOID = 2;
// A location packs the source index and the line into one double; it grows in load order.
export const LINE_SPAN = 2 ** 32;
// Store lookups go in chunks so that a million identities never make one request.
export const LOOKUP_CHUNK = 10_000;

/** An interaction or nft record, with where it is and what it does. */
export interface AssetRecord {
  address: string;
  contract: string;
  at: number;
  op: typeof UPSERT | typeof DELETE;
}

/** A user's latest release record in the load. */
export interface ReleaseRecord {
  relationId: number;
  /** Interned relationIds, or "*". */
  peers: "*" | number[];
  at: number;
  /** A release delete: withdraws the release, and is no error when the user does not exist. */
  withdraw: boolean;
}

/** The load's records, as the reader leaves them: interned names, columns of edges, the latest user and release records. */
export class LoadState {
  // relationIds interned to dense indexes: equal strings are shared, and friend pairs sort as integers.
  readonly relationIds = new TextIndex();
  // Per relationId index: 0 not defined in the load, -1 defined by an invalid record, k users[k-1].
  readonly definedAs = int32Column();
  // Per relationId index: where the load last deletes that user (0: never).
  readonly erasedAt = float64Column();
  // Addresses of user records that a later delete voided, by relationId index: their asset records
  // before the delete are voided too.
  readonly erasedAddresses = new Map<number, Set<string>>();
  // Addresses of user records that a later record of the same user replaced: a later delete voids
  // their asset records too.
  readonly replacedAddresses = new Map<number, Set<string>>();
  // The latest user record of each relationId the load defines, in order of first appearance (the
  // order ids are allocated in), and where each is.
  readonly users: UserInput[] = [];
  readonly userAt = float64Column();
  // Friend and follow records in columns of interned relationIds and descriptions: millions of
  // records held as objects until the write made garbage collection most of a large load's time.
  readonly friendA = uint32Column();
  readonly friendB = uint32Column();
  readonly friendDescription = uint32Column();
  readonly friendOp = uint8Column();
  readonly descriptions = new TextIndex();
  readonly friendAt = float64Column();
  readonly followFrom = uint32Column();
  readonly followTo = uint32Column();
  readonly followOp = uint8Column();
  readonly followAt = float64Column();
  followDeletes = 0;
  readonly interactions: AssetRecord[] = [];
  readonly nfts: AssetRecord[] = [];
  assetDeletes = 0;
  readonly releases = new Map<number, ReleaseRecord>();

  /** Whether users[k] is in the load's outcome: not followed by a delete of the same user. */
  userSurvives(k: number): boolean {
    const idx = this.relationIds.find(this.users[k]!.relationId)!;
    return this.userAt.get(k) > this.erasedAt.get(idx);
  }

  /** Whether a record at `at` naming idx is voided by a later delete of that user. */
  voidedBy(idx: number, at: number): boolean {
    return at < this.erasedAt.get(idx);
  }

  /** Whether the load defines or deletes the user: then its stored identities are the load's to move. */
  redefines(relationId: string): boolean {
    const idx = this.relationIds.find(relationId);
    return idx !== undefined && (this.definedAs.get(idx) !== 0 || this.erasedAt.get(idx) > 0);
  }
}
