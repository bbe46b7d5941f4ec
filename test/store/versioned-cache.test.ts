import { describe, expect, it } from "vitest";
import type { UserId, UserRecord } from "../../src/domain/model.js";
import { DataVersion, IdTable } from "../../src/store/redis/versioned-cache.js";

const record = (id: UserId, name = `user ${id}`): UserRecord => ({ id, relationId: `u${id}`, name, avatar: "", addresses: [], social: null, game: null });

/** A loader that answers from `table` and records the keys it was asked for. */
function loader(table: Map<UserId, UserRecord>) {
  const asked: UserId[][] = [];
  const load = async (ids: UserId[]) => {
    asked.push(ids);
    return ids.map((id) => table.get(id) ?? null);
  };
  return { load, asked };
}

describe("DataVersion and its caches", () => {
  it("loads only what a cache does not hold, never keeps unknown keys, and keeps the caller's order", async () => {
    const version = new DataVersion();
    const users = version.cache<UserId, UserRecord>(100);
    version.note("v1");
    const { load, asked } = loader(new Map([1, 2, 3].map((id) => [id, record(id)])));
    expect((await users.getMany([2, 1, 9], load)).map((r) => r?.id ?? null)).toEqual([2, 1, null]);
    expect((await users.getMany([1, 3, 2, 9, 3], load)).map((r) => r?.id ?? null)).toEqual([1, 3, 2, null, 3]);
    expect(asked).toEqual([[2, 1, 9], [3, 9]]);
    expect(users.size).toBe(3);
  });

  it("empties every cache when the data version changes, and none when the same version is read again", async () => {
    const version = new DataVersion();
    const users = version.cache<UserId, UserRecord>(100);
    const lists = version.cache<string, number[]>(100);
    const table = new Map([[1, record(1, "old")]]);
    const { load } = loader(table);
    version.note("v1");
    await users.getMany([1], load);
    await lists.get("a", async () => [1, 2], () => true);
    table.set(1, record(1, "new"));
    version.note("v1");
    expect((await users.getMany([1], load))[0]?.name).toBe("old");
    expect(lists.size).toBe(1);
    version.note("v2");
    expect(lists.size).toBe(0);
    expect((await users.getMany([1], load))[0]?.name).toBe("new");
    version.note(null);
    expect(users.size).toBe(0);
  });

  it("does not keep a value that was being loaded when the version changed", async () => {
    const version = new DataVersion();
    const users = version.cache<UserId, UserRecord>(100);
    const lists = version.cache<string, number[]>(100);
    version.note("v1");
    let release: () => void = () => {};
    const slow = (ids: UserId[]) => new Promise<(UserRecord | null)[]>((resolve) => (release = () => resolve(ids.map((id) => record(id, "before the write")))));
    const pending = users.getMany([1], slow);
    version.note("v2");
    release();
    expect((await pending)[0]?.name).toBe("before the write");
    expect(users.size).toBe(0);
    let releaseList: () => void = () => {};
    const pendingList = lists.get("a", () => new Promise<number[]>((resolve) => (releaseList = () => resolve([7]))), () => true);
    version.note("v3");
    releaseList();
    expect(await pendingList).toEqual([7]);
    expect(lists.size).toBe(0);
  });

  it("keeps a single value only when `keep` says so, and serves it until the version changes", async () => {
    const version = new DataVersion();
    const lists = version.cache<string, number[]>(100);
    version.note("v1");
    let loads = 0;
    const load = async () => {
      loads++;
      return Array.from({ length: loads === 1 ? 3 : 300 }, (_, i) => i);
    };
    const long = (value: number[]) => value.length > 100;
    expect((await lists.get("a", load, long)).length).toBe(3);
    expect((await lists.get("a", load, long)).length).toBe(300);
    expect((await lists.get("a", load, long)).length).toBe(300);
    expect(loads).toBe(2);
  });

  it("is trusted only for a while after a version was read", () => {
    let now = 0;
    const version = new DataVersion({ maxAgeMs: 1_000, now: () => now });
    expect(version.trusted).toBe(false);
    version.note("v1");
    now = 1_000;
    expect(version.trusted).toBe(true);
    now = 1_001;
    expect(version.trusted).toBe(false);
    version.note("v1");
    expect(version.trusted).toBe(true);
  });

  it("holds at most capacity values per cache, dropping the oldest", async () => {
    const version = new DataVersion();
    const users = version.cache<UserId, UserRecord>(2);
    version.note("v1");
    const { load, asked } = loader(new Map([1, 2, 3].map((id) => [id, record(id)])));
    await users.getMany([1], load);
    await users.getMany([2], load);
    await users.getMany([3], load);
    expect(users.size).toBe(2);
    await users.getMany([2, 3], load);
    await users.getMany([1], load);
    expect(asked).toEqual([[1], [2], [3], [1]]);
  });

  it("weighs values when told to: the oldest make room for a heavy one, and one heavier than the capacity is never kept", async () => {
    const version = new DataVersion();
    const sets = version.cache<string, number[]>(10, (members) => members.length);
    version.note("v1");
    const keepAll = () => true;
    const members = (n: number) => async () => Array.from({ length: n }, (_, i) => i);
    await sets.get("a", members(4), keepAll);
    await sets.get("b", members(4), keepAll);
    expect([sets.size, sets.held]).toEqual([2, 8]);
    await sets.get("c", members(5), keepAll); // 13 > 10: "a", the oldest, goes
    expect([sets.size, sets.held]).toEqual([2, 9]);
    let loads = 0;
    const counted = async () => {
      loads++;
      return [1, 2, 3, 4];
    };
    await sets.get("b", counted, keepAll);
    expect(loads).toBe(0);
    await sets.get("a", counted, keepAll); // back, so "b" (now oldest) and then "c" make room as needed
    expect(loads).toBe(1);
    expect(sets.held).toBeLessThanOrEqual(10);
    await sets.get("huge", members(11), keepAll);
    expect(await sets.get("huge", counted, keepAll)).toEqual([1, 2, 3, 4]);
    expect(sets.held).toBeLessThanOrEqual(10);
    version.note("v2");
    expect([sets.size, sets.held]).toEqual([0, 0]);
  });

  it("keeps evicting the oldest values, exactly as a list would, through thousands of evictions and version changes", async () => {
    const version = new DataVersion();
    const weightOf = (key: number) => 1 + (key % 5);
    const sets = version.cache<number, number[]>(60, (members) => members.length);
    // The reference: a plain list, oldest first.
    let model: number[] = [];
    const modelHeld = () => model.reduce((sum, key) => sum + weightOf(key), 0);
    version.note("v0");
    let seed = 7;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let step = 0; step < 20_000; step++) {
      if (step % 4_999 === 4_998) {
        version.note(`v${step}`);
        model = [];
      }
      const key = random(80);
      let loaded = false;
      await sets.getMany([key], async (keys) => {
        loaded = true;
        return keys.map((k) => Array.from({ length: weightOf(k) }, () => k));
      });
      expect(loaded).toBe(!model.includes(key));
      if (loaded) {
        model.push(key);
        while (modelHeld() > 60) model.shift();
      }
      expect([sets.size, sets.held]).toEqual([model.length, modelHeld()]);
    }
  });
});

describe("IdTable", () => {
  it("keeps values by id, dense ids in an array and any other safe integer beside it", () => {
    const table = new IdTable<string>();
    const ids = [1, 7, 3, 2 ** 24, 2 ** 40 + 3, 0];
    ids.forEach((id) => table.set(id, `r${id}`));
    table.set(7, "r7 again");
    expect(ids.map((id) => table.get(id))).toEqual(["r1", "r7 again", "r3", `r${2 ** 24}`, `r${2 ** 40 + 3}`, "r0"]);
    expect([table.get(2), table.get(2 ** 40), table.get(5_000_000), table.get(1.5)]).toEqual([undefined, undefined, undefined, undefined]);
    expect(table.size).toBe(ids.length);
    table.clear();
    expect([table.size, table.get(1), table.get(2 ** 40 + 3)]).toEqual([0, undefined, undefined]);
  });
});
