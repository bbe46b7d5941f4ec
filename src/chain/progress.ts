import type { IndexerStats } from "./indexer.js";

/** How fast the indexer goes, between two readings of its stats. */
export interface IndexProgress {
  head: number | null;
  indexed: number | null;
  /** Blocks between the head and the last block applied (null before the first reading). */
  lag: number | null;
  blocksPerSecond: number;
  recordsPerSecond: number;
  reorgs: number;
}

/** Rates from successive stats readings: call it at each tick with the stats and the time (ms). */
export function progressMeter(): (stats: IndexerStats, nowMs: number) => IndexProgress {
  let last: { stats: IndexerStats; at: number } | null = null;
  return (stats, nowMs) => {
    const seconds = last === null ? 0 : (nowMs - last.at) / 1000;
    const rate = (now: number, before: number | undefined) => (seconds > 0 && before !== undefined ? (now - before) / seconds : 0);
    const progress: IndexProgress = {
      head: stats.head,
      indexed: stats.indexed,
      lag: stats.head === null ? null : stats.head - (stats.indexed ?? -1),
      blocksPerSecond: rate(stats.blocks, last?.stats.blocks),
      recordsPerSecond: rate(stats.records, last?.stats.records),
      reorgs: stats.reorgs,
    };
    last = { stats, at: nowMs };
    return progress;
  };
}

/** The status line a terminal shows: where the indexer is, how fast it goes, how far behind. */
export function statusLine(progress: IndexProgress): string {
  const number = (value: number | null) => (value === null ? "—" : value.toLocaleString("en-US"));
  const rate = (value: number) => (value >= 100 ? Math.round(value).toLocaleString("en-US") : value.toFixed(1));
  return [
    `block ${number(progress.indexed)} of ${number(progress.head)}`,
    `${rate(progress.blocksPerSecond)} blocks/s`,
    `${rate(progress.recordsPerSecond)} records/s`,
    `lag ${number(progress.lag)} blocks`,
    ...(progress.reorgs > 0 ? [`${progress.reorgs} reorg${progress.reorgs === 1 ? "" : "s"} undone`] : []),
  ].join(" · ");
}
