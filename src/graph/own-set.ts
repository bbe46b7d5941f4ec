import type { UserId, UserSetKind } from "../domain/model.js";
import type { GraphReader } from "../store/store.js";

/** Own sets up to this size are read whole, through the cache layer. */
const OWN_SET_BOUND = 100_000;

/**
 * One of a user's own sets, read as neighbour sets are: the cache layer keeps those, and a user's
 * set is often some neighbour's, read by an earlier query. Past OWN_SET_BOUND it is listed in pages
 * instead, so that no single reply is unbounded.
 */
export async function ownSet(store: GraphReader, kind: UserSetKind, id: UserId): Promise<readonly UserId[]> {
  const [members] = await store.userSetsBounded(kind, [id], OWN_SET_BOUND);
  return members ?? store.userSet(kind, id);
}
