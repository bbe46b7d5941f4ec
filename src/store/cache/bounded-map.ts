/**
 * Values weighing at most `capacity` in all (by default each weighs 1, so capacity counts entries):
 * the oldest make room, and a value heavier than the whole capacity is never kept. Storage only;
 * what may be kept, and when it must go, is the cache layer's business (cached-store.ts).
 *
 * Small non-negative integer keys (UserIds, and the set caches' numbers for user sets) are also
 * indexed by an array: a recommendation looks up a few hundred of them at random in maps of
 * hundreds of thousands of entries, where a Map lookup costs several cache misses (~150 ns) and an
 * array slot about one. The Map still holds every entry, for its order of eviction.
 */
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, V>();
  /** The values of dense keys (isDenseKey) by key, undefined where none is held. */
  private dense: (V | undefined)[] = [];
  private weight = 0;
  /**
   * Walks the entries oldest first, across calls. A Map keeps deleted entries as holes until it
   * rehashes, so a fresh `entries.keys()` per eviction walked past every earlier eviction: once full,
   * each insertion cost time in proportion to the evictions before it, which with a few million
   * entries made cache upkeep the largest cost of a recommendation. Entries put again move behind
   * it, so it always meets the oldest live entry next.
   */
  private oldest: IterableIterator<K> = this.entries.keys();

  constructor(
    private readonly capacity: number,
    private readonly weigh: (value: V) => number = () => 1,
    /** Told of each value dropped to make room (not of deletes), for indexes kept beside the map. */
    private readonly onEvict: (key: K) => void = () => {},
  ) {}

  get(key: K): V | undefined {
    return isDenseKey(key) ? this.dense[key] : this.entries.get(key);
  }

  /** Keeps `value` as the newest entry, making room by dropping the oldest. */
  set(key: K, value: V): void {
    const weight = this.weigh(value);
    if (weight > this.capacity) return;
    this.delete(key);
    while (this.weight + weight > this.capacity && this.entries.size > 0) {
      const oldest = this.nextOldest();
      this.delete(oldest);
      this.onEvict(oldest);
    }
    this.entries.set(key, value);
    if (isDenseKey(key)) {
      // Filled up to the key, so the array stays packed rather than turning into a dictionary.
      while (this.dense.length < key) this.dense.push(undefined);
      this.dense[key] = value;
    }
    this.weight += weight;
  }

  delete(key: K): void {
    const value = this.entries.get(key);
    if (value === undefined) return;
    this.entries.delete(key);
    if (isDenseKey(key)) this.dense[key] = undefined;
    this.weight -= this.weigh(value);
  }

  /** Values held now (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  /** Sum of the weights of the values held now. */
  get held(): number {
    return this.weight;
  }

  clear(): void {
    this.entries.clear();
    this.dense = [];
    this.weight = 0;
    this.oldest = this.entries.keys();
  }

  /** The oldest key held; only called while something is held (the weight is over capacity). */
  private nextOldest(): K {
    let next = this.oldest.next();
    if (next.done) {
      // An exhausted iterator stays exhausted, even once keys are added behind it.
      this.oldest = this.entries.keys();
      next = this.oldest.next();
    }
    return next.value as K;
  }
}

/** Keys below this are indexed by BoundedMap's array as well: 32 MB of it at most. */
const DENSE_KEYS = 1 << 22;

/** Whether BoundedMap indexes `key` by its array. */
function isDenseKey(key: unknown): key is number {
  return typeof key === "number" && key >= 0 && key < DENSE_KEYS && Number.isInteger(key);
}

/**
 * Values by UserId, for the relationId cache: recommendations look up ~700 ids per call, at random
 * across the whole graph, and a Map lookup there costs several cache misses (~500 ns) where an
 * array slot costs one. UserIds come from INCR, so they are dense from 1: ids under DENSE_IDS index
 * an array, any other safe integer falls back to a Map.
 */
export class IdTable<V> {
  private dense: (V | undefined)[] = [];
  private sparse = new Map<number, V>();
  private count = 0;

  get(id: number): V | undefined {
    return id >= 0 && id < DENSE_IDS && Number.isInteger(id) ? this.dense[id] : this.sparse.get(id);
  }

  set(id: number, value: V): void {
    if (id >= 0 && id < DENSE_IDS && Number.isInteger(id)) {
      // Filled up to the id, so the array stays packed rather than turning into a dictionary.
      while (this.dense.length < id) this.dense.push(undefined);
      if (this.dense[id] === undefined) this.count++;
      this.dense[id] = value;
    } else {
      if (!this.sparse.has(id)) this.count++;
      this.sparse.set(id, value);
    }
  }

  delete(id: number): void {
    if (id >= 0 && id < DENSE_IDS && Number.isInteger(id)) {
      if (this.dense[id] === undefined) return;
      this.dense[id] = undefined;
      this.count--;
    } else if (this.sparse.delete(id)) {
      this.count--;
    }
  }

  /** Values held. */
  get size(): number {
    return this.count;
  }

  clear(): void {
    this.dense = [];
    this.sparse = new Map();
    this.count = 0;
  }
}

/** Ids below this are kept in IdTable's array: 8 bytes per id up to the highest one held, 128 MB at most. */
const DENSE_IDS = 1 << 24;
