import type { CursorCodec } from "../domain/cursor.js";
import { InvalidCursorError } from "../domain/errors.js";
import type { UserId, UserRecord } from "../domain/model.js";
import type { GraphStore } from "../store/store.js";

/** A page request: `limit` is already validated (1..100); an empty cursor is the first page. */
export interface PageRequest {
  limit: number;
  cursor: string;
}

/** One page of results and the cursor of the next page ("" on the last page). */
export interface Page<T> {
  items: T[];
  cursor: string;
}

/** A user with the description of why it is listed. */
export interface DescribedUser {
  user: UserRecord;
  description: string;
}

/**
 * Keyset paging in ascending relationId order: the cursor holds the last relationId served, so
 * pages stay consistent without server state and every member is served exactly once.
 */
export async function keysetPage(store: GraphStore, cursors: CursorCodec, scope: string, members: readonly UserId[], page: PageRequest): Promise<Page<UserRecord>> {
  let after = "";
  if (page.cursor !== "") {
    const state = cursors.decode(scope, page.cursor);
    if (typeof state.a !== "string" || state.a === "") {
      throw new InvalidCursorError("cursor is invalid: pass back the cursor of the previous page verbatim");
    }
    after = state.a;
  }
  if (members.length <= page.limit) {
    // Everything left fits one page: one read gives both the order and the page.
    const users = (await hydrate(store, members)).filter((user) => user.relationId > after);
    return { items: users.sort((a, b) => (a.relationId < b.relationId ? -1 : 1)), cursor: "" };
  }
  const relationIds = await store.relationIds(members);
  const ordered = members
    .map((id, i) => ({ id, relationId: relationIds[i]! }))
    .filter((m) => m.relationId !== "" && m.relationId > after)
    .sort((a, b) => (a.relationId < b.relationId ? -1 : 1));
  const served = ordered.slice(0, page.limit);
  const last = served[served.length - 1];
  const cursor = ordered.length > page.limit && last ? cursors.encode(scope, { a: last.relationId }) : "";
  return { items: await hydrate(store, served.map((m) => m.id)), cursor };
}

/** The stored records of `ids`, in order; a user deleted since it was listed is left out. */
export async function hydrate(store: GraphStore, ids: readonly UserId[]): Promise<UserRecord[]> {
  if (ids.length === 0) return [];
  const users = await store.users(ids);
  // A user deleted between listing and hydration is skipped rather than failing the page.
  return users.filter((user): user is UserRecord => user !== null);
}
