/**
 * When each key was last invalidated, so that a value loaded before an invalidation of its key but
 * answered after it is not kept: a load notes `now()` as it starts, and keeps a value only if its
 * key has not been invalidated since. Per key rather than one counter for everything: under a
 * thousand changes a second nearly every load would overlap some change, and none would be kept.
 *
 * Only invalidations newer than the oldest load still in flight matter, but loads are not tracked
 * one by one: past MAX_REMEMBERED keys the record starts over from a floor that every load begun
 * before it fails, which costs those few loads their keeping and nothing else.
 *
 * While no load has begun since the floor last rose, an invalidation is not remembered: there is no
 * load for it to fail but those the floor already fails. So a server without reads (an idle one
 * while a bulk load changes hundreds of thousands of keys) remembers nothing; remembering each key
 * was a large share of its CPU for the load's pushes.
 */
export class KeyEpochs<K> {
  private epoch = 0;
  private floor = 0;
  private readonly invalidatedAt = new Map<K, number>();
  /** Whether now() was called since the floor last rose: some load begun since may still be in flight. */
  private notedSinceFloor = false;

  constructor(private readonly maxRemembered = MAX_REMEMBERED) {}

  /** The epoch a load starting now notes. */
  now(): number {
    this.notedSinceFloor = true;
    return this.epoch;
  }

  invalidate(key: K): void {
    if (!this.notedSinceFloor) {
      // Every load in flight began before the floor, which fails it already; the record is empty.
      this.epoch++;
      return;
    }
    this.invalidatedAt.set(key, ++this.epoch);
    if (this.invalidatedAt.size > this.maxRemembered) this.invalidateAll();
  }

  /** Every key: loads begun before now are never kept. */
  invalidateAll(): void {
    this.floor = ++this.epoch;
    this.invalidatedAt.clear();
    this.notedSinceFloor = false;
  }

  /** Keys whose invalidation is remembered now. */
  get remembered(): number {
    return this.invalidatedAt.size;
  }

  /** Whether `key` has not been invalidated since `startedAt` (a value of now() noted earlier). */
  unchangedSince(key: K, startedAt: number): boolean {
    // The common case under reads alone: nothing at all happened during the load.
    if (startedAt === this.epoch) return true;
    return startedAt >= this.floor && (this.invalidatedAt.get(key) ?? 0) <= startedAt;
  }
}

/** Keys whose invalidation epoch is remembered (a few dozen bytes each). */
const MAX_REMEMBERED = 100_000;
