import type { IdSetReads } from "./id-sets.js";

/** Bulk writes over a connection of its own: one write per batch, resolved once all are answered. */
export interface BulkWriter {
  /** Sends the commands; resolves once all are answered, rejects with the first error reply. */
  write(commands: readonly string[][]): Promise<void>;
  /** Sends commands the caller encoded itself, like write. */
  writeEncoded(commands: EncodedCommands): Promise<void>;
  /** Drops the connection, failing what it still carries; the next write opens another. */
  reset(): Promise<void>;
}

/**
 * Connections of its own that the redis engine uses on a standalone server for its busiest reads
 * and writes, when given them: the speed layer's (fast/resp/, FAST_PATHS). Each opens one for a URL
 * it can serve, or says null; everything else, and everything on a cluster, goes through node-redis.
 */
export interface OwnConnections {
  /** SCARD and SMEMBERS of UserId sets, the reads a recommendation makes by the hundred. */
  idSetReader(url: string, connectTimeoutMs: number): IdSetReads | null;
  /** A load's and a feed unit's planned writes. */
  bulkWriter(url: string, connectTimeoutMs: number): BulkWriter | null;
}

/**
 * Commands already in RESP's array-of-bulk-strings form, as bytes, and how many they are: what a
 * planner that encodes as it goes (resp-window.ts) hands a BulkWriter. The writer
 * owns the bytes from then on: the planner never writes them again.
 */
export interface EncodedCommands {
  bytes: Uint8Array;
  count: number;
}
