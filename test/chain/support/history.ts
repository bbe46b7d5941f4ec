import type { TestAnvil } from "./anvil.js";
import { waitReceipt, type Deployed } from "./contracts.js";

/*
 * A seeded history of ordinary chain activity over the test contracts: mints, transfers, burns,
 * ERC-1155 batches, sales of a holder's last token, ERC-20 payments and plain calls. Ownership is
 * tracked here so that no transaction reverts.
 */

/** The deployed test contracts a history uses. */
export interface TestContracts {
  nft: Deployed;
  multi: Deployed;
  coin: Deployed;
  book: Deployed;
}

/** Seeded pseudo-random numbers (mulberry32). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a history generator remembers between calls: who owns what. */
export interface HistoryState {
  nextToken: number;
  owners: Map<number, string>;
  /** holder → id → amount */
  multi: Map<string, Map<number, number>>;
}

export function newHistoryState(firstToken = 1000): HistoryState {
  return { nextToken: firstToken, owners: new Map(), multi: new Map() };
}

/** Sends `count` transactions of mixed activity among `users`, one block each (anvil automines); resolves once all are mined. */
export async function makeHistory(anvil: TestAnvil, contracts: TestContracts, users: readonly string[], count: number, seed: number, state = newHistoryState()): Promise<HistoryState> {
  const next = random(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const other = (than: string) => pick(users.filter((user) => user !== than));
  let last: string | null = null;
  for (let i = 0; i < count; i++) {
    const roll = next();
    const owned = [...state.owners.entries()];
    const holders = [...state.multi.entries()].filter(([, ids]) => [...ids.values()].some((n) => n > 0));
    if (roll < 0.25 || (roll < 0.45 && owned.length === 0)) {
      const to = pick(users);
      const id = state.nextToken++;
      state.owners.set(id, to);
      last = await contracts.nft.send(to, "mint", [to, id]);
    } else if (roll < 0.45) {
      const [id, owner] = pick(owned);
      const to = other(owner);
      state.owners.set(id, to);
      last = await contracts.nft.send(owner, "transferFrom", [owner, to, id]);
    } else if (roll < 0.5 && owned.length > 0) {
      const [id, owner] = pick(owned);
      state.owners.delete(id);
      last = await contracts.nft.send(owner, "burn", [id]);
    } else if (roll < 0.62 || (roll < 0.75 && holders.length === 0)) {
      const to = pick(users);
      const ids = [1, 2, 3].filter(() => next() < 0.6);
      if (ids.length === 0) ids.push(1);
      const amounts = ids.map(() => 1 + Math.floor(next() * 3));
      const held = state.multi.get(to) ?? new Map<number, number>();
      ids.forEach((id, k) => held.set(id, (held.get(id) ?? 0) + amounts[k]!));
      state.multi.set(to, held);
      last = await contracts.multi.send(to, "mintBatch", [to, ids, amounts]);
    } else if (roll < 0.75) {
      // The holder sends everything it holds of the collection: the sale of its last token.
      const [from, held] = pick(holders);
      const to = other(from);
      const ids = [...held.entries()].filter(([, n]) => n > 0);
      const got = state.multi.get(to) ?? new Map<number, number>();
      for (const [id, n] of ids) got.set(id, (got.get(id) ?? 0) + n);
      state.multi.set(to, got);
      state.multi.set(from, new Map());
      last = await contracts.multi.send(from, "transferBatch", [to, ids.map(([id]) => id), ids.map(([, n]) => n)]);
    } else if (roll < 0.85) {
      const from = pick(users);
      last = await contracts.coin.send(from, "mint", [other(from), 1 + Math.floor(next() * 100)]);
    } else {
      last = await contracts.book.send(pick(users), "sign");
    }
  }
  if (last !== null) await waitReceipt(anvil, last);
  return state;
}
