import type { UserId } from "../domain/model.js";

/**
 * The members of each set no larger than maxSize, and null for larger ones, given the sets' sizes:
 * `read` is asked only for the sets with members within the bound, so a hub's set is never read.
 * Shared by the redis engine and the cache layer, which size sets each their own way.
 */
export async function readWithinBound<K>(
  keys: readonly K[],
  sizes: readonly number[],
  maxSize: number,
  read: (keys: K[]) => Promise<readonly (readonly UserId[] | UserId[] | null)[]>,
): Promise<(UserId[] | null)[]> {
  const readable = keys.filter((_, i) => sizes[i]! > 0 && sizes[i]! <= maxSize);
  const members = await read(readable);
  let next = 0;
  return keys.map((_, i) => {
    if (sizes[i]! > maxSize) return null;
    if (sizes[i]! === 0) return [];
    const set = (members[next++] ?? []) as UserId[];
    // It grew past the bound after it was sized: as if sized now.
    return set.length > maxSize ? null : set;
  });
}
