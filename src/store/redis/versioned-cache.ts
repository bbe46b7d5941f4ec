/** Options of DataVersion. */
export interface DataVersionOptions {
  /** How long a data version read stays trusted without being read again, in milliseconds. */
  maxAgeMs?: number;
  /** A monotonic clock in milliseconds; injectable for tests. */
  now?: () => number;
}

/**
 * The data version the redis engine last read, and the caches that hold data of that version. Every
 * write sets the data version (keys.ts, DATA_VERSION) to a fresh token as it starts and once it is
 * complete, and the engine reads it in the same round trip as the identity lookup that starts every
 * query, so a query sees cached data at least as new as its own start, exactly as without a cache.
 */
export class DataVersion {
  private version: string | null | undefined = undefined;
  private readAt = Number.NEGATIVE_INFINITY;
  /** Bumped whenever the version changes, so that a read begun before cannot fill a cache with older data. */
  private current = 0;
  private readonly caches: { clear(): void }[] = [];
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(options: DataVersionOptions = {}) {
    this.maxAgeMs = options.maxAgeMs ?? 1_000;
    this.now = options.now ?? (() => performance.now());
  }

  /** Takes a data version just read from the store; a different one empties every cache. */
  note(version: string | null): void {
    this.readAt = this.now();
    if (version === this.version) return;
    this.version = version;
    this.current++;
    for (const cache of this.caches) cache.clear();
  }

  /** Whether the last version read is recent enough to serve from the caches. */
  get trusted(): boolean {
    return this.now() - this.readAt <= this.maxAgeMs;
  }

  /** Changes whenever the version does. */
  get generation(): number {
    return this.current;
  }

  /**
   * A bounded map emptied whenever the version changes: it holds values whose weights add up to at
   * most `capacity` (by default each value weighs 1, so capacity counts entries).
   */
  cache<K, V>(capacity: number, weigh: (value: V) => number = () => 1): VersionedMap<K, V> {
    return this.track(new VersionedMap<K, V>(this, capacity, weigh));
  }

  /**
   * Empties `cache` whenever the version changes, for a cache with a hot path of its own; its filler
   * compares `generation` before and after a load, as VersionedMap does.
   */
  track<C extends { clear(): void }>(cache: C): C {
    this.caches.push(cache);
    return cache;
  }
}

/**
 * Values of one data version, weighing at most `capacity` in all (the oldest make room; a value
 * heavier than the whole capacity is never kept). A value loaded while the version changed is
 * returned but not kept.
 */
export class VersionedMap<K, V> {
  private readonly entries = new Map<K, V>();
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
    private readonly version: DataVersion,
    private readonly capacity: number,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}

  /** The values of `keys` (null when `load` finds none): cached ones at once, the others through `load`. */
  async getMany(keys: readonly K[], load: (keys: K[]) => Promise<(V | null)[]>): Promise<(V | null)[]> {
    const found = keys.map((key) => this.entries.get(key) ?? null);
    const missing = [...new Set(keys.filter((_, i) => found[i] === null))];
    if (missing.length === 0) return found;
    const generation = this.version.generation;
    const loaded = await load(missing);
    const byKey = new Map<K, V>();
    missing.forEach((key, i) => {
      const value = loaded[i];
      if (value != null) byKey.set(key, value);
    });
    if (generation === this.version.generation) for (const [key, value] of byKey) this.put(key, value);
    return keys.map((key, i) => found[i] ?? byKey.get(key) ?? null);
  }

  /** The value of `key`: cached, or loaded and kept when `keep` says it is worth keeping. */
  async get(key: K, load: () => Promise<V>, keep: (value: V) => boolean): Promise<V> {
    const cached = this.entries.get(key);
    if (cached !== undefined) return cached;
    const generation = this.version.generation;
    const value = await load();
    if (generation === this.version.generation && keep(value)) this.put(key, value);
    return value;
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

  private put(key: K, value: V): void {
    const weight = this.weigh(value);
    if (weight > this.capacity) return;
    this.remove(key);
    while (this.weight + weight > this.capacity && this.entries.size > 0) this.remove(this.nextOldest());
    this.entries.set(key, value);
    this.weight += weight;
  }

  private remove(key: K): void {
    const value = this.entries.get(key);
    if (value === undefined) return;
    this.entries.delete(key);
    this.weight -= this.weigh(value);
  }
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
