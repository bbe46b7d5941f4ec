import { createPrng } from "../../../src/synthetic/prng.js";
import type { TestAnvil } from "./anvil.js";
import { waitReceipt, type Deployed } from "./contracts.js";

/*
 * A seeded history of ordinary chain activity over the test contracts: mints, transfers, burns,
 * ERC-1155 batches, sales of a holder's last token, ERC-20 payments and plain calls. Ownership is
 * tracked here so that no transaction reverts: histories on the same contracts must share one state
 * (structuredClone it for a fork), and every receipt is checked.
 */

/** The deployed test contracts a history uses. */
export interface TestContracts {
  nft: Deployed;
  multi: Deployed;
  coin: Deployed;
  book: Deployed;
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

/**
 * Sends `count` transactions of mixed activity among `users`; resolves once all are mined, none
 * reverted. Anvil automines: mostly one block each, but a transaction that arrives while a block is
 * being mined joins the next one with others, so callers read the chain's length rather than assume it.
 */
export async function makeHistory(anvil: TestAnvil, contracts: TestContracts, users: readonly string[], count: number, seed: number, state = newHistoryState()): Promise<HistoryState> {
  const next = createPrng(seed).next;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const other = (than: string) => pick(users.filter((user) => user !== than));
  const sent: string[] = [];
  for (let i = 0; i < count; i++) {
    const roll = next();
    const owned = [...state.owners.entries()];
    const holders = [...state.multi.entries()].filter(([, ids]) => [...ids.values()].some((n) => n > 0));
    if (roll < 0.25 || (roll < 0.45 && owned.length === 0)) {
      const to = pick(users);
      const id = state.nextToken++;
      state.owners.set(id, to);
      sent.push(await contracts.nft.send(to, "mint", [to, id]));
    } else if (roll < 0.45) {
      const [id, owner] = pick(owned);
      const to = other(owner);
      state.owners.set(id, to);
      sent.push(await contracts.nft.send(owner, "transferFrom", [owner, to, id]));
    } else if (roll < 0.5 && owned.length > 0) {
      const [id, owner] = pick(owned);
      state.owners.delete(id);
      sent.push(await contracts.nft.send(owner, "burn", [id]));
    } else if (roll < 0.62 || (roll < 0.75 && holders.length === 0)) {
      const to = pick(users);
      const ids = [1, 2, 3].filter(() => next() < 0.6);
      if (ids.length === 0) ids.push(1);
      const amounts = ids.map(() => 1 + Math.floor(next() * 3));
      const held = state.multi.get(to) ?? new Map<number, number>();
      ids.forEach((id, k) => held.set(id, (held.get(id) ?? 0) + amounts[k]!));
      state.multi.set(to, held);
      sent.push(await contracts.multi.send(to, "mintBatch", [to, ids, amounts]));
    } else if (roll < 0.75) {
      // The holder sends everything it holds of the collection: the sale of its last token.
      const [from, held] = pick(holders);
      const to = other(from);
      const ids = [...held.entries()].filter(([, n]) => n > 0);
      const got = state.multi.get(to) ?? new Map<number, number>();
      for (const [id, n] of ids) got.set(id, (got.get(id) ?? 0) + n);
      state.multi.set(to, got);
      state.multi.set(from, new Map());
      sent.push(await contracts.multi.send(from, "transferBatch", [to, ids.map(([id]) => id), ids.map(([, n]) => n)]));
    } else if (roll < 0.85) {
      const from = pick(users);
      sent.push(await contracts.coin.send(from, "mint", [other(from), 1 + Math.floor(next() * 100)]));
    } else {
      sent.push(await contracts.book.send(pick(users), "sign"));
    }
  }
  for (const hash of sent) await waitReceipt(anvil, hash);
  return state;
}
