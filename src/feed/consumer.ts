/**
 * The change feed's consumer: reads a Redis Stream through a consumer group, applies entries in
 * units (apply-entries.ts), acknowledges them only once applied, takes over what dead consumers
 * left, and sends invalid entries to the rejected stream. Consumers read and apply under the
 * store's write lease, one at a time, so the graph takes the stream's changes in stream order. A
 * unit's acknowledgement is part of its journalled write, so a unit a dead consumer left half
 * written is completed and acknowledged by the next writer; entries read but not yet written are
 * delivered again to the next lease holder, before anything newer.
 */
import { StoreUnavailableError } from "../domain/errors.js";
import { applyEntries, compareIds, type FeedEntry, type FeedTarget, type RejectedEntry } from "./apply-entries.js";
import { decodeEntry } from "./entries.js";
import type { FeedStream, GroupLag, StreamEntry } from "./stream.js";

/** Options of createFeedConsumer; defaults beside each field. */
export interface FeedConsumerOptions {
  store: FeedTarget;
  stream: FeedStream;
  /** Where a group created now starts: "0" the whole stream (default), "$" only entries added from now on. */
  startId?: string;
  /** Most entries asked for per read (default 1,000). */
  readCount?: number;
  /** Most entries applied as one unit (default 10,000); a full read is followed by more, without waiting, up to this. */
  unitEntries?: number;
  /**
   * Bytes of records a unit holds, at most (default 64 MiB), and so what a consumer holds in memory:
   * each read asks for as many entries as fit, judged by the size of the entries read before it.
   * Entries larger than those before them can take a unit past it, by at most that one read.
   */
  unitBytes?: number;
  /** How long a read waits for new entries (default 1,000 ms); also how long a stop may wait. */
  blockMs?: number;
  /**
   * How long a unit waits for more entries on a busy stream, once (default DEFAULT_LINGER_MS; 0:
   * never): when the unit before ended less than 100 ms ago and a read finds fewer entries than it
   * asked for.
   */
  lingerMs?: number;
  /** An entry delivered this many times (default 5) without being applied goes to the rejected stream. */
  maxDeliveries?: number;
  /**
   * Consumers of the group that hold nothing and have not read for this long (default 10 minutes)
   * are removed from it, so that names of processes long gone (the
   * default HOST-PID) do not pile up. A live consumer reads every blockMs.
   */
  forgetIdleMs?: number;
  /** How often progress is reported (default 1,000 ms). */
  progressMs?: number;
  /**
   * Trim the stream of what every group has acknowledged (FeedStream.trimAcknowledged) after
   * applying, at most this often (ms); unset: never. The stream otherwise keeps every entry.
   */
  trimEveryMs?: number;
  onProgress?: (progress: FeedProgress) => void;
  logger?: FeedLogger;
}

/** A minimal structured logger; a pino logger fits. */
export interface FeedLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** Counters since the consumer started, and the group's lag as last measured. */
export interface FeedStats {
  /** Entries applied and acknowledged. */
  entries: number;
  /** Records of the applied entries. */
  records: number;
  /** Entries sent to the rejected stream. */
  rejected: number;
  /** Entries taken over from other consumers (or from this consumer's previous run). */
  claimed: number;
  /** Entries trimmed from the stream once every group had acknowledged them (trimEveryMs). */
  trimmed: number;
  /** The group's lag: undelivered and pending entries; null until first measured. */
  lag: GroupLag | null;
  /** Milliseconds from the XADD of the last applied entry to its application; null before any. */
  lastEntryAgeMs: number | null;
}

/** One progress report: the stats, and the rate since the previous report. */
export interface FeedProgress extends FeedStats {
  recordsPerSecond: number;
}

/** A running consumer. */
export interface FeedConsumer {
  /** Consumes until stop(); resolves with the final stats once the unit in hand is applied and acknowledged. */
  run(): Promise<FeedStats>;
  /** Asks the consumer to stop after the unit in hand. */
  stop(): void;
  /** The counters so far. */
  stats(): FeedStats;
}

/** A unit of entries to apply, and whether each entry must be applied alone. */
interface Unit {
  entries: StreamEntry[];
  alone: boolean;
}

const MAX_BACKOFF_MS = 5_000;
/** A stream whose last unit ended less than this long ago is busy: its next unit lingers (readNew). */
const BUSY_STREAM_MS = 100;
/**
 * How long a unit on a busy stream waits for more entries. A unit costs about 25 round trips whatever
 * it holds (the write lease, the journal, the plan's reads, the acknowledgement): under the bench's
 * 1,000 changes/s in entries of 10, a follower lingering 25 ms applied about 62 units a second and
 * used 0.15–0.19 of a core; lingering 100 ms, about 18 units and 0.08–0.09 of a core, leaving the
 * rest to the readers on the same cores (bench/README.md, "A longer linger"). The price is that an
 * entry arriving during a steady flow waits up to this long more; one on a quiet stream waits not at all.
 */
export const DEFAULT_LINGER_MS = 100;

/** Creates a consumer; nothing is read until run(). */
export function createFeedConsumer(options: FeedConsumerOptions): FeedConsumer {
  const { store, stream, logger } = options;
  const readCount = options.readCount ?? 1_000;
  const unitEntries = options.unitEntries ?? 10_000;
  const unitBytes = options.unitBytes ?? 64 * 2 ** 20;
  const blockMs = options.blockMs ?? 1_000;
  const lingerMs = options.lingerMs ?? DEFAULT_LINGER_MS;
  // When the last unit was applied (performance.now()); -Infinity before any.
  let lastUnitEndedAt = Number.NEGATIVE_INFINITY;
  const maxDeliveries = options.maxDeliveries ?? 5;
  const progressMs = options.progressMs ?? 1_000;
  const forgetIdleMs = options.forgetIdleMs ?? 600_000;
  // Bytes per entry of the last entries read; null until the first are.
  let entryBytes: number | null = null;
  const stats: FeedStats = { entries: 0, records: 0, rejected: 0, claimed: 0, trimmed: 0, lag: null, lastEntryAgeMs: null };
  let nextTrimAt = 0;
  let stopping = false;
  let wake: (() => void) | null = null;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = null;
        resolve();
      }
      wake = done;
    });

  /** Runs `work` until it succeeds, backing off; null when asked to stop while it fails. */
  async function persist<T>(what: string, work: () => Promise<T>): Promise<T | null> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        if (stopping) return null;
        const delay = backoff(attempt);
        logger?.warn({ err: describe(error), attempt, retryInMs: delay }, `cannot ${what}; retrying`);
        await sleep(delay);
      }
    }
  }

  /**
   * Applies entries, retrying while the store is unavailable; resolves with the rejected ones, or
   * null when asked to stop before they could be applied. Any other failure is retried entry by
   * entry, and an entry that keeps failing alone is rejected with the failure as its reason.
   */
  async function apply(entries: readonly FeedEntry[]): Promise<RejectedEntry[] | null> {
    for (let attempt = 1; ; attempt++) {
      try {
        return (await applyEntries(store, entries, { acknowledge: { stream: stream.key, group: stream.group } })).rejected;
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) {
          if (entries.length > 1) return applyOneByOne(entries);
          if (attempt >= maxDeliveries) return [{ id: entries[0]!.id, reason: `could not be applied: ${describe(error)}` }];
        }
        if (stopping) return null;
        const delay = backoff(attempt);
        logger?.warn({ err: describe(error), entries: entries.length, attempt, retryInMs: delay }, "cannot apply entries; retrying");
        await sleep(delay);
      }
    }
  }

  async function applyOneByOne(entries: readonly FeedEntry[]): Promise<RejectedEntry[] | null> {
    const rejected: RejectedEntry[] = [];
    for (const entry of entries) {
      const outcome = await apply([entry]);
      if (outcome === null) return null;
      rejected.push(...outcome);
    }
    return rejected;
  }

  /** Applies, records rejections and acknowledges one group of entries; false when stopped first. */
  async function settle(entries: readonly StreamEntry[]): Promise<boolean> {
    const rejected: RejectedEntry[] = [];
    const live: FeedEntry[] = [];
    const recordsOf = new Map<string, number>();
    for (const entry of entries) {
      // Deleted from the stream (XDEL, trimming) after delivery: nothing left to apply.
      if (entry.fields === null) continue;
      const decoded = decodeEntry(entry as StreamEntry & { fields: [string, Buffer][] });
      if (decoded.records === undefined) {
        rejected.push(decoded);
      } else {
        live.push({ id: decoded.id, bytes: decoded.bytes });
        recordsOf.set(decoded.id, decoded.records);
      }
    }
    if (live.length > 0) {
      const refused = await apply(live);
      if (refused === null) return false;
      rejected.push(...refused);
    }
    const fieldsOf = new Map(entries.map((entry) => [entry.id, entry.fields ?? []]));
    rejected.sort((x, y) => compareIds(x.id, y.id));
    for (const { id, reason } of rejected) {
      recordsOf.delete(id);
      logger?.warn({ entry: id, reason }, "rejected an entry");
    }
    // All at once (node-redis pipelines them); only those that failed are sent again.
    let unsent = rejected;
    for (let attempt = 1; unsent.length > 0; attempt++) {
      const sent = await Promise.allSettled(unsent.map(({ id, reason }) => stream.reject(id, reason, fieldsOf.get(id) ?? [])));
      const failure = sent.find((outcome) => outcome.status === "rejected");
      unsent = unsent.filter((_, k) => sent[k]!.status === "rejected");
      if (unsent.length === 0) break;
      if (stopping) return false;
      logger?.warn({ err: describe(failure?.reason), entries: unsent.length, attempt }, "cannot record rejected entries; retrying");
      await sleep(backoff(attempt));
    }
    if ((await persist("acknowledge entries", () => stream.ack(entries.map((entry) => entry.id)))) === null) return false;
    stats.rejected += rejected.length;
    stats.entries += recordsOf.size;
    for (const records of recordsOf.values()) stats.records += records;
    const last = entries[entries.length - 1];
    if (last) stats.lastEntryAgeMs = Math.max(0, Date.now() - Number(last.id.split("-")[0]));
    return true;
  }

  /** Applies a unit: an entry suspected of stopping its consumers is applied alone. */
  async function handle(unit: Unit): Promise<boolean> {
    if (!unit.alone) return settle(unit.entries);
    for (const entry of unit.entries) if (!(await settle([entry]))) return false;
    return true;
  }

  /**
   * Takes over pending entries idle for `minIdleMs` (only this consumer's with `mine`). An entry
   * delivered once is in the hands of a consumer that died with it, most likely for no fault of its
   * own: such entries are taken together. An entry already delivered again and still pending may be
   * what stops its consumers: it is taken alone, and rejected once delivered maxDeliveries times.
   * XPENDING then XCLAIM rather than XAUTOCLAIM: the delivery counts are known before claiming, so
   * taking a suspect alone does not count a delivery against the entries behind it.
   */
  async function claim(minIdleMs: number, mine: boolean): Promise<Unit | null> {
    const idle = await stream.pendingIdle(minIdleMs, readCount, mine ? stream.consumer : undefined);
    if (idle.length === 0) return null;
    const poison = idle.filter((entry) => entry.deliveries >= maxDeliveries);
    if (poison.length > 0) {
      const deliveries = new Map(poison.map((entry) => [entry.id, entry.deliveries]));
      for (const entry of await stream.claim([...deliveries.keys()], minIdleMs)) {
        if (entry.fields !== null) {
          const reason = `not applied after ${deliveries.get(entry.id)} deliveries: each consumer holding it stopped before applying it`;
          await stream.reject(entry.id, reason, entry.fields);
          logger?.warn({ entry: entry.id, reason }, "rejected an entry");
          stats.rejected++;
        }
        await stream.ack([entry.id]);
      }
    }
    const rest = idle.filter((entry) => entry.deliveries < maxDeliveries);
    const first = rest[0];
    if (!first) return null;
    const alone = first.deliveries > 1;
    // As many as a unit holds: the rest are taken in the next rounds, before anything newer.
    const together = rest.filter((entry) => entry.deliveries === 1).slice(0, Math.max(1, entriesThatFit(unitBytes)));
    const ids = alone ? [first.id] : together.map((entry) => entry.id);
    const entries = await stream.claim(ids, minIdleMs);
    measure(entries);
    stats.claimed += entries.length;
    if (entries.length > 0) logger?.info({ entries: entries.length, from: [...new Set(rest.map((entry) => entry.consumer))] }, "claimed pending entries");
    return entries.length > 0 ? { entries, alone } : null;
  }

  /** Removes consumers long gone that hold nothing. */
  async function forgetGone(): Promise<void> {
    for (const other of await stream.consumers()) {
      if (other.name === stream.consumer || other.pending > 0 || other.idleMs < forgetIdleMs) continue;
      await stream.forget(other.name);
      logger?.info({ gone: other.name, idleMs: other.idleMs }, "removed a consumer gone from the group");
    }
  }

  /**
   * How many entries fit in `room` bytes, judged by the last entries read (at most readCount).
   * Before any is read, a single one: its size tells how many more to ask for.
   */
  function entriesThatFit(room: number): number {
    if (entryBytes === null) return 1;
    return Math.min(readCount, Math.floor(room / Math.max(1, entryBytes)));
  }

  /** Learns the size of entries from those just read; returns their bytes of records. */
  function measure(entries: readonly StreamEntry[]): number {
    const bytes = sizeOf(entries);
    if (entries.length > 0) entryBytes = bytes / entries.length;
    return bytes;
  }

  /**
   * New entries: one read, then more while reads come back full and the unit has room. None waits
   * (waiting is waitForWork's), but on a busy stream: when the unit before ended less than
   * BUSY_STREAM_MS ago, a short read is followed, once, by another after lingerMs. Under a steady
   * flow of small entries each unit then takes several, and its costs that do not shrink with it
   * (the write lease, the journal, the plan's reads) are paid once for them; an entry on a quiet
   * stream, such as a withdrawn release, is applied at once.
   */
  async function readNew(): Promise<Unit | null> {
    const entries: StreamEntry[] = [];
    let bytes = 0;
    let mayLinger = lingerMs > 0 && performance.now() - lastUnitEndedAt <= BUSY_STREAM_MS;
    for (;;) {
      // A unit takes at least one entry, however large.
      const fit = entries.length === 0 ? Math.max(1, entriesThatFit(unitBytes)) : entriesThatFit(unitBytes - bytes);
      const count = Math.min(unitEntries - entries.length, fit);
      if (count === 0) break;
      const read = await stream.read(count, 0);
      for (const entry of read) entries.push(entry);
      bytes += measure(read);
      if (entries.length >= unitEntries || bytes >= unitBytes || stopping) break;
      if (read.length < count) {
        if (!mayLinger || entries.length === 0) break;
        mayLinger = false;
        await sleep(lingerMs);
        if (stopping) break;
      }
    }
    return entries.length > 0 ? { entries, alone: false } : null;
  }

  /** Trims what every group acknowledged, when due; a failure is logged and tried again when next due. */
  async function trimWhenDue(): Promise<void> {
    if (options.trimEveryMs === undefined || Date.now() < nextTrimAt) return;
    nextTrimAt = Date.now() + options.trimEveryMs;
    try {
      stats.trimmed += await stream.trimAcknowledged();
    } catch (error) {
      logger?.warn({ err: describe(error) }, "cannot trim the stream; trying again later");
    }
  }

  async function report(previous: { at: number; records: number }): Promise<void> {
    try {
      stats.lag = await stream.lag();
    } catch {
      // The stream's Redis is away; the next report measures again.
    }
    const now = performance.now();
    const seconds = (now - previous.at) / 1000;
    options.onProgress?.({ ...stats, recordsPerSecond: seconds > 0 ? (stats.records - previous.records) / seconds : 0 });
    previous.at = now;
    previous.records = stats.records;
  }

  return {
    stats: () => ({ ...stats }),
    stop() {
      stopping = true;
      wake?.();
    },
    async run() {
      const previous = { at: performance.now(), records: 0 };
      const progress = setInterval(() => void report(previous), progressMs);
      try {
        if ((await persist("create the consumer group", () => stream.ensureGroup(options.startId ?? "0"))) === null) return { ...stats };
        let nextForgetAt = 0;
        // The first round takes the write lease whether or not entries wait: taking it completes a
        // load that a killed writer (`relgraph ingest`, a consumer) left half applied, which the next
        // `relgraph follow` must do as the next `relgraph ingest` does, on a quiet stream too.
        let firstRound = true;
        while (!stopping) {
          let stoppedMidUnit = false;
          try {
            // Waiting happens outside the write lease, so an idle consumer never holds up a writer.
            if (!firstRound && !(await stream.waitForWork(blockMs))) {
              if (Date.now() >= nextForgetAt) {
                nextForgetAt = Date.now() + Math.min(forgetIdleMs, 60_000);
                await forgetGone();
              }
              // What the last units left, and what other groups acknowledged since.
              await trimWhenDue();
              continue;
            }
            firstRound = false;
            if (stopping) break;
            // Reading and applying happen under the store's write lease: one consumer at a time reads
            // the next entries and applies them, so the graph takes the stream's changes in stream
            // order, whichever consumer applies them. Under the lease nobody else is applying, so an
            // entry still pending was left by a consumer that died (or stalled past its lease) with
            // it: it comes first, as it is older than anything not yet read.
            await store.exclusive(
              async () => {
                const unit = (await claim(0, false)) ?? (await readNew());
                if (unit && !(await handle(unit))) stoppedMidUnit = true;
                if (unit) lastUnitEndedAt = performance.now();
              },
              { onNotice: (message: string) => logger?.info({}, message) },
            );
            // Outside the write lease: trimming is no write to the graph.
            await trimWhenDue();
          } catch (error) {
            if (stopping) break;
            logger?.warn({ err: describe(error) }, "cannot read the stream; retrying");
            await sleep(1_000);
            // The stream or its group was deleted under us: start again as on a first run.
            if (/^NOGROUP/.test((error as Error).message)) await stream.ensureGroup(options.startId ?? "0").catch(() => {});
            continue;
          }
          if (stoppedMidUnit) {
            logger?.warn({}, "stopped before the unit in hand was applied; its entries stay pending");
            break;
          }
        }
        return { ...stats };
      } finally {
        clearInterval(progress);
        await report(previous);
      }
    },
  };
}

function sizeOf(entries: readonly StreamEntry[]): number {
  let bytes = 0;
  for (const entry of entries) for (const [, value] of entry.fields ?? []) bytes += value.length;
  return bytes;
}

function backoff(attempt: number): number {
  return Math.min(MAX_BACKOFF_MS, 100 * 2 ** (attempt - 1));
}

/** An error's message with its cause's: the operator needs to see why the store refused. */
function describe(error: unknown): string {
  const { message, cause } = error as Error;
  return cause instanceof Error && cause.message && cause.message !== message ? `${message} (${cause.message})` : String(message);
}
