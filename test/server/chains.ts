import { expect } from "vitest";
import { restGet, walkChain, type Params } from "./http.js";
import { parseDescription } from "./reference.js";

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
 * Asserts what the descriptions alone can show of a recommendation chain: no user twice, and every
 * description a non-empty reason that parses to signal counts. The order itself depends on how rare
 * each shared item is, which descriptions do not say; tests check it against referenceRecommendations.
 */
export function expectRecommendationOrder(items: readonly ServedUser[]): void {
  expectDistinct(items);
  for (const item of items) {
    const counts = parseDescription(item.description ?? "");
    expect(counts.some((n) => n > 0), `${item.relationId.relationId}: "${item.description}"`).toBe(true);
  }
}
