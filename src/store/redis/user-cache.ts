import type { UserId, UserRecord } from "../../domain/model.js";

/** Options of UserRecordCache. */
export interface UserRecordCacheOptions {
  /** Most records kept; past it the oldest make room. */
  maxEntries?: number;
  /** How long a data version read stays trusted without being read again, in milliseconds. */
  maxVersionAgeMs?: number;
  /** A monotonic clock in milliseconds; injectable for tests. */
  now?: () => number;
}

/**
 * User records kept in process for one data version. Every write sets the data version (keys.ts,
 * DATA_VERSION) to a fresh token as it starts and once it is complete, and the engine reads it in the same round trip as the
 * identity lookup that starts every query, so a query sees records at least as new as its own
 * start, exactly as without the cache, while hydrating a page costs no round trip and no JSON
 * parsing (about a fifth of a REST mutual-friend request). Unknown ids are never cached.
 */
export class UserRecordCache {
  private readonly records = new Map<UserId, UserRecord>();
  private version: string | null | undefined = undefined;
  private versionReadAt = Number.NEGATIVE_INFINITY;
  /** Bumped whenever the cache empties, so that a read begun before cannot refill it with older data. */
  private generation = 0;
  private readonly maxEntries: number;
  private readonly maxVersionAgeMs: number;
  private readonly now: () => number;

  constructor(options: UserRecordCacheOptions = {}) {
    this.maxEntries = options.maxEntries ?? 100_000;
    this.maxVersionAgeMs = options.maxVersionAgeMs ?? 1_000;
    this.now = options.now ?? (() => performance.now());
  }

  /** Takes a data version just read from the store; a different one empties the cache. */
  noteVersion(version: string | null): void {
    this.versionReadAt = this.now();
    if (version === this.version) return;
    this.version = version;
    this.records.clear();
    this.generation++;
  }

  /** Whether the last version read is recent enough to serve from the cache. */
  get trusted(): boolean {
    return this.now() - this.versionReadAt <= this.maxVersionAgeMs;
  }

  /**
   * The records of `ids` (null for unknown ids): cached ones at once, the others through `load`,
   * which are then cached unless the version changed while they were being read.
   */
  async get(ids: readonly UserId[], load: (ids: UserId[]) => Promise<(UserRecord | null)[]>): Promise<(UserRecord | null)[]> {
    const found = ids.map((id) => this.records.get(id) ?? null);
    const missing = [...new Set(ids.filter((_, i) => found[i] === null))];
    if (missing.length === 0) return found;
    const generation = this.generation;
    const loaded = await load(missing);
    const byId = new Map<UserId, UserRecord>();
    missing.forEach((id, i) => {
      const record = loaded[i];
      if (record) byId.set(id, record);
    });
    if (generation === this.generation) for (const [id, record] of byId) this.put(id, record);
    return ids.map((id, i) => found[i] ?? byId.get(id) ?? null);
  }

  /** Records cached now (for tests and metrics). */
  get size(): number {
    return this.records.size;
  }

  private put(id: UserId, record: UserRecord): void {
    if (this.records.size >= this.maxEntries && !this.records.has(id)) {
      const oldest = this.records.keys().next();
      if (!oldest.done) this.records.delete(oldest.value);
    }
    this.records.set(id, record);
  }
}
