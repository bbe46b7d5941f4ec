import type { EncodedCommands } from "./command-buffer.js";
import { RespSocket, respEndpointOf, type RespEndpoint } from "./socket.js";

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
 * Bulk writes (a load's or a feed unit's planned commands) over a socket of their own to a
 * standalone Redis: each batch is encoded straight into one string and answered by one promise,
 * its replies only checked for errors.
 *
 * Why not node-redis: a change load is hundreds of thousands of small commands, and node-redis's
 * per-command queue entry, promise and argument-by-argument writev were most of the writer's CPU
 * and garbage. Reads, and everything on a cluster, stay on node-redis. The caller awaits each write
 * before it reads what the write changed, so the two connections never race.
 */
export class RespWriter implements BulkWriter {
  private link: RespSocket | null = null;

  constructor(
    private readonly endpoint: RespEndpoint,
    private readonly connectTimeoutMs: number,
  ) {}

  /** Sends the commands in one write; resolves once all are answered, rejects with the first error reply. */
  async write(commands: readonly string[][]): Promise<void> {
    if (commands.length === 0) return;
    if (this.link === null || this.link.broken) this.link = new RespSocket(this.endpoint, this.connectTimeoutMs);
    await this.link.enqueue(commands, "any");
  }

  /** Sends commands already in RESP form (BulkWriter.writeEncoded), like write. */
  async writeEncoded(commands: EncodedCommands): Promise<void> {
    if (commands.count === 0) return;
    if (this.link === null || this.link.broken) this.link = new RespSocket(this.endpoint, this.connectTimeoutMs);
    await this.link.enqueueEncoded(commands.bytes, commands.count, "any");
  }

  /**
   * Drops the connection, failing what it still carries: for a write that outlived its deadline,
   * whose effect is then unknown. Every planned command is absolute, so the unit can be applied again.
   */
  async reset(): Promise<void> {
    await this.link?.close();
    this.link = null;
  }
}

/** A RespWriter for a `redis://` URL; null for any other (TLS, a unix socket), which node-redis serves. */
export function respWriter(url: string, connectTimeoutMs: number): RespWriter | null {
  const endpoint = respEndpointOf(url);
  return endpoint === null ? null : new RespWriter(endpoint, connectTimeoutMs);
}
