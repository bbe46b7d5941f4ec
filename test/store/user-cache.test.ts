import { describe, expect, it } from "vitest";
import type { UserId, UserRecord } from "../../src/domain/model.js";
import { UserRecordCache } from "../../src/store/redis/user-cache.js";

const record = (id: UserId, name = `user ${id}`): UserRecord => ({ id, relationId: `u${id}`, name, avatar: "", addresses: [], social: null, game: null });

/** A loader that answers from `table` and counts the ids it was asked for. */
function loader(table: Map<UserId, UserRecord>) {
  const asked: UserId[][] = [];
  const load = async (ids: UserId[]) => {
    asked.push(ids);
    return ids.map((id) => table.get(id) ?? null);
  };
  return { load, asked };
}

describe("UserRecordCache", () => {
  it("loads only what it does not hold, never caches unknown ids, and keeps the caller's order", async () => {
    const cache = new UserRecordCache();
    cache.noteVersion("v1");
    const { load, asked } = loader(new Map([1, 2, 3].map((id) => [id, record(id)])));
    expect((await cache.get([2, 1, 9], load)).map((r) => r?.id ?? null)).toEqual([2, 1, null]);
    expect((await cache.get([1, 3, 2, 9, 3], load)).map((r) => r?.id ?? null)).toEqual([1, 3, 2, null, 3]);
    expect(asked).toEqual([[2, 1, 9], [3, 9]]);
    expect(cache.size).toBe(3);
  });

  it("empties when the data version changes, and not when the same version is read again", async () => {
    const cache = new UserRecordCache();
    const table = new Map([[1, record(1, "old")]]);
    const { load } = loader(table);
    cache.noteVersion("v1");
    await cache.get([1], load);
    table.set(1, record(1, "new"));
    cache.noteVersion("v1");
    expect((await cache.get([1], load))[0]?.name).toBe("old");
    cache.noteVersion("v2");
    expect((await cache.get([1], load))[0]?.name).toBe("new");
    cache.noteVersion(null);
    expect(cache.size).toBe(0);
  });

  it("does not keep a read that was in flight when the version changed", async () => {
    const cache = new UserRecordCache();
    cache.noteVersion("v1");
    let release: () => void = () => {};
    const slow = (ids: UserId[]) => new Promise<(UserRecord | null)[]>((resolve) => (release = () => resolve(ids.map((id) => record(id, "before the write")))));
    const pending = cache.get([1], slow);
    cache.noteVersion("v2");
    release();
    expect((await pending)[0]?.name).toBe("before the write");
    expect(cache.size).toBe(0);
  });

  it("is trusted only for a while after a version was read", () => {
    let now = 0;
    const cache = new UserRecordCache({ maxVersionAgeMs: 1_000, now: () => now });
    expect(cache.trusted).toBe(false);
    cache.noteVersion("v1");
    now = 1_000;
    expect(cache.trusted).toBe(true);
    now = 1_001;
    expect(cache.trusted).toBe(false);
    cache.noteVersion("v1");
    expect(cache.trusted).toBe(true);
  });

  it("holds at most maxEntries records, dropping the oldest", async () => {
    const cache = new UserRecordCache({ maxEntries: 2 });
    cache.noteVersion("v1");
    const { load, asked } = loader(new Map([1, 2, 3].map((id) => [id, record(id)])));
    await cache.get([1], load);
    await cache.get([2], load);
    await cache.get([3], load);
    expect(cache.size).toBe(2);
    await cache.get([2, 3], load);
    await cache.get([1], load);
    expect(asked).toEqual([[1], [2], [3], [1]]);
  });
});
