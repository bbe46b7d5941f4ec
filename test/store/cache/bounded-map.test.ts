import { describe, expect, it } from "vitest";
import type { UserId, UserRecord } from "../../../src/domain/model.js";
import { createPrng } from "../../../src/synthetic/prng.js";
import { BoundedMap, IdTable } from "../../../src/store/cache/bounded-map.js";
import { cachedMany } from "../../../src/store/cache/cached-store.js";
import { KeyEpochs } from "../../../src/store/cache/key-epochs.js";

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

/** A load that answers only when told to, for a change to come in between. */
function held<T>(answer: T) {
  let release: () => void = () => {};
  const started = new Promise<T>((resolve) => (release = () => resolve(answer)));
  return { load: () => started, release: () => release() };
}

describe("cachedMany over a BoundedMap", () => {
  it("loads only what the cache does not hold, never keeps unknown keys, and keeps the caller's order", async () => {
    const users = new BoundedMap<UserId, UserRecord>(100);
    const epochs = new KeyEpochs<UserId>();
    const { load, asked } = loader(new Map([1, 2, 3].map((id) => [id, record(id)])));
    expect((await cachedMany(users, epochs, [2, 1, 9], load)).map((r) => r?.id ?? null)).toEqual([2, 1, null]);
    expect((await cachedMany(users, epochs, [1, 3, 2, 9, 3], load)).map((r) => r?.id ?? null)).toEqual([1, 3, 2, null, 3]);
    expect(asked).toEqual([[2, 1, 9], [3, 9]]);
    expect(users.size).toBe(3);
  });

  it("does not keep a value whose key was invalidated while it loaded, and keeps the others of the same load", async () => {
    const users = new BoundedMap<UserId, UserRecord>(100);
    const epochs = new KeyEpochs<UserId>();
    const slow = held([record(1, "before the write"), record(2, "untouched")]);
    const pending = cachedMany(users, epochs, [1, 2], slow.load);
    epochs.invalidate(1);
    slow.release();
    expect((await pending).map((r) => r?.name)).toEqual(["before the write", "untouched"]);
    expect([users.get(1), users.get(2)?.name]).toEqual([undefined, "untouched"]);
    // Invalidated before the load began: the load already sees the change, so it is kept.
    expect((await cachedMany(users, epochs, [1], async () => [record(1, "after")]))[0]?.name).toBe("after");
    expect(users.get(1)?.name).toBe("after");
  });

  it("keeps nothing of a load that overlapped an invalidation of everything", async () => {
    const users = new BoundedMap<UserId, UserRecord>(100);
    const epochs = new KeyEpochs<UserId>();
    const slow = held([record(1), record(2)]);
    const pending = cachedMany(users, epochs, [1, 2], slow.load);
    epochs.invalidateAll();
    slow.release();
    expect(await pending).toHaveLength(2);
    expect(users.size).toBe(0);
  });
});

describe("KeyEpochs", () => {
  it("tells, per key, whether it was invalidated since a load began", () => {
    const epochs = new KeyEpochs<string>();
    const early = epochs.now();
    epochs.invalidate("a");
    const late = epochs.now();
    epochs.invalidate("b");
    expect([epochs.unchangedSince("a", early), epochs.unchangedSince("b", early), epochs.unchangedSince("c", early)]).toEqual([false, false, true]);
    expect([epochs.unchangedSince("a", late), epochs.unchangedSince("b", late), epochs.unchangedSince("c", late)]).toEqual([true, false, true]);
    expect(epochs.unchangedSince("a", epochs.now())).toBe(true);
  });

  it("remembers a bounded number of keys, failing every earlier load once it starts over", () => {
    const epochs = new KeyEpochs<number>(3);
    const early = epochs.now();
    epochs.invalidate(1);
    const middle = epochs.now();
    for (const key of [2, 3]) epochs.invalidate(key);
    expect(epochs.unchangedSince(4, middle)).toBe(true);
    epochs.invalidate(4); // a fourth key: starts over
    expect([epochs.unchangedSince(9, early), epochs.unchangedSince(9, middle)]).toEqual([false, false]);
    const after = epochs.now();
    expect([epochs.unchangedSince(1, after), epochs.unchangedSince(4, after)]).toEqual([true, true]);
  });

  it("remembers no key while no load has begun, and still fails every load an invalidation overlaps", () => {
    const epochs = new KeyEpochs<number>(1_000);
    for (let key = 0; key < 5_000; key++) epochs.invalidate(key);
    expect(epochs.remembered).toBe(0);
    const started = epochs.now();
    expect(epochs.unchangedSince(7, started)).toBe(true);
    epochs.invalidate(7);
    epochs.invalidate(8);
    expect(epochs.remembered).toBe(2);
    expect([epochs.unchangedSince(7, started), epochs.unchangedSince(8, started), epochs.unchangedSince(9, started)]).toEqual([false, false, true]);
    // Starting over: remembering stops until the next load begins, and the loads before still fail.
    epochs.invalidateAll();
    epochs.invalidate(9);
    expect(epochs.remembered).toBe(0);
    expect(epochs.unchangedSince(9, started)).toBe(false);
    const later = epochs.now();
    epochs.invalidate(10);
    expect([epochs.unchangedSince(9, later), epochs.unchangedSince(10, later)]).toEqual([true, false]);
  });

  it("never keeps a value a later invalidation of its key overlapped, over random sequences (against a model remembering everything)", () => {
    const prng = createPrng("key-epochs");
    const random = (n: number) => prng.int(n);
    const kept: string[] = [];
    for (let round = 0; round < 200; round++) {
      const epochs = new KeyEpochs<number>(1 + random(6));
      // The model: every load still open, with the keys invalidated (or everything) since it began.
      const loads: { startedAt: number; touched: Set<number>; all: boolean }[] = [];
      for (let step = 0; step < 60; step++) {
        const roll = random(10);
        if (roll < 3) loads.push({ startedAt: epochs.now(), touched: new Set(), all: false });
        else if (roll < 9) {
          const key = random(8);
          epochs.invalidate(key);
          for (const load of loads) load.touched.add(key);
        } else {
          epochs.invalidateAll();
          for (const load of loads) load.all = true;
        }
        for (const load of loads) {
          for (let key = 0; key < 8; key++) {
            if ((load.all || load.touched.has(key)) && epochs.unchangedSince(key, load.startedAt)) kept.push(`round ${round} step ${step} key ${key}`);
          }
        }
      }
    }
    expect(kept).toEqual([]);
  });
});

describe("BoundedMap", () => {
  it("holds at most capacity values, dropping the oldest and telling of each", () => {
    const evicted: number[] = [];
    const users = new BoundedMap<UserId, UserRecord>(2, undefined, (key) => evicted.push(key));
    for (const id of [1, 2, 3]) users.set(id, record(id));
    expect([users.size, users.get(1), users.get(3)?.id]).toEqual([2, undefined, 3]);
    users.set(2, record(2, "again")); // moves behind 3
    users.set(4, record(4));
    expect([users.get(3), users.get(2)?.name]).toEqual([undefined, "again"]);
    users.delete(2);
    expect([users.size, evicted]).toEqual([1, [1, 3]]);
  });

  it("weighs values when told to: the oldest make room for a heavy one, and one heavier than the capacity is never kept", () => {
    const sets = new BoundedMap<string, number[]>(10, (members) => members.length);
    const members = (n: number) => Array.from({ length: n }, (_, i) => i);
    sets.set("a", members(4));
    sets.set("b", members(4));
    expect([sets.size, sets.held]).toEqual([2, 8]);
    sets.set("c", members(5)); // 13 > 10: "a", the oldest, goes
    expect([sets.size, sets.held, sets.get("a")]).toEqual([2, 9, undefined]);
    sets.set("a", members(4)); // "b" (now oldest) and then "c" make room as needed
    expect(sets.held).toBeLessThanOrEqual(10);
    sets.set("huge", members(11));
    expect(sets.get("huge")).toBeUndefined();
    expect(sets.held).toBeLessThanOrEqual(10);
    sets.delete("a");
    sets.clear();
    expect([sets.size, sets.held]).toEqual([0, 0]);
  });

  it("keeps evicting the oldest values, exactly as a list would, through thousands of evictions, deletes and clears, whatever the keys", () => {
    // Keys the array indexes (small non-negative integers) and keys only the Map holds (past its
    // range, fractional, negative), mixed in one map.
    const keys = Array.from({ length: 80 }, (_, n) => [n, 2 ** 22 + n, n + 0.5, -n - 1][n % 4]!);
    const weightOf = (key: number) => 1 + (keys.indexOf(key) % 5);
    const sets = new BoundedMap<number, number[]>(60, (members) => members.length);
    // The reference: a plain list, oldest first.
    let model: number[] = [];
    const modelHeld = () => model.reduce((sum, key) => sum + weightOf(key), 0);
    let seed = 7;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let step = 0; step < 20_000; step++) {
      if (step % 4_999 === 4_998) {
        sets.clear();
        model = [];
      }
      const key = keys[random(80)]!;
      if (step % 7 === 3) {
        sets.delete(key);
        model = model.filter((k) => k !== key);
      } else if (sets.get(key) === undefined) {
        expect(model.includes(key)).toBe(false);
        sets.set(key, Array.from({ length: weightOf(key) }, () => key));
        model.push(key);
        while (modelHeld() > 60) model.shift();
      } else {
        expect(model.includes(key)).toBe(true);
      }
      expect([sets.size, sets.held]).toEqual([model.length, modelHeld()]);
      if (step % 100 === 0) expect(keys.filter((k) => sets.get(k) !== undefined)).toEqual(keys.filter((k) => model.includes(k)));
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
    table.delete(7);
    table.delete(2 ** 40 + 3);
    table.delete(5);
    expect([table.size, table.get(7), table.get(2 ** 40 + 3), table.get(1)]).toEqual([ids.length - 2, undefined, undefined, "r1"]);
    table.clear();
    expect([table.size, table.get(1), table.get(2 ** 24)]).toEqual([0, undefined, undefined]);
  });
});
