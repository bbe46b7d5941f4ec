import { expect } from "vitest";
import { restGet, walkChain, type Params } from "./http.js";
import { parseDescription, scoreOf } from "./reference.js";

/** One served UserInfo, as REST shows it. */
export interface ServedUser {
  relationId: { relationId: string; name: string; avatar: string };
  address: string[];
  social: unknown;
  game: unknown;
  description?: string;
}

/**
 * Walks one REST cursor chain at `limit` and checks its shape: every page is a success envelope,
 * every page but the last is full, only the last cursor is "", and no page is empty unless the
 * whole answer is. Returns the items in the order served.
 */
export async function walkRestChain(baseUrl: string, path: string, params: Params, limit: number): Promise<ServedUser[]> {
  const { pages, cursors } = await walkChain<ServedUser>(async (cursor) => {
    const reply = await restGet(baseUrl, path, { ...params, limit, cursor });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.code).toBe("0");
    return reply.body;
  });
  const items = pages.flat();
  pages.forEach((page, i) => {
    const last = i === pages.length - 1;
    if (!last) expect(page.length, `page ${i} of ${pages.length} at limit ${limit}`).toBe(limit);
    else expect(page.length).toBe(items.length === 0 ? 0 : items.length - limit * i);
    expect(cursors[i] === "", `cursor of page ${i}`).toBe(last);
  });
  return items;
}

/** The relationIds of served users. */
export const relationIds = (items: readonly ServedUser[]) => items.map((item) => item.relationId.relationId);

/** Asserts that no relationId is served twice. */
export function expectDistinct(items: readonly ServedUser[]): void {
  const ids = relationIds(items);
  expect(new Set(ids).size, "a user was served twice").toBe(ids.length);
}

/** Asserts ascending relationId order (string order, as the contract says). */
export function expectAscending(items: readonly ServedUser[]): void {
  const ids = relationIds(items);
  expect(ids).toEqual([...ids].sort());
  expectDistinct(items);
}

/**
 * Asserts the recommendation order from the descriptions alone: each parses to signal counts, and
 * the scores they imply never rise along the chain, ties in ascending relationId.
 */
export function expectRecommendationOrder(items: readonly ServedUser[]): void {
  expectDistinct(items);
  const keyed = items.map((item) => ({ id: item.relationId.relationId, score: scoreOf(parseDescription(item.description ?? "")) }));
  for (let i = 1; i < keyed.length; i++) {
    const [a, b] = [keyed[i - 1]!, keyed[i]!];
    const inOrder = a.score > b.score || (a.score === b.score && a.id < b.id);
    expect(inOrder, `${a.id} (${a.score}) before ${b.id} (${b.score})`).toBe(true);
  }
}
