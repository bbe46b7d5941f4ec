/**
 * A netted load checked against the store: every user a surviving record names exists once the load
 * is applied, and every identity names at most one user.
 */
import type { Identity, IdentityKind } from "../../domain/model.js";
import { identitiesOf } from "../../store/batch.js";
import type { UserInput } from "../../store/store.js";
import type { ErrorLog } from "./error-log.js";
import { show } from "./fields.js";
import { LOOKUP_CHUNK, UPSERT, type LoadState, type ReleaseRecord, type StoredGraph } from "./load-state.js";
import type { NetEffect } from "./net-effect.js";

/**
 * Every user a surviving upsert names must exist once the load is applied: defined by the load,
 * or stored and not deleted by it. Deletes may name anyone. Resolves with the releases to apply:
 * a release delete of a user that does not exist withdraws nothing, and is dropped.
 */
export async function checkReferences(state: LoadState, errors: ErrorLog, store: StoredGraph, net: NetEffect): Promise<ReleaseRecord[]> {
  const { releases } = net;
  const names = state.relationIds.texts;
  // Per relationId index: 1 exists, 2 deleted by the load, 3 must be looked up, 4 not stored, 0 not named.
  const known = new Uint8Array(names.length);
  const lookups: number[] = [];
  const stateOf = (idx: number): number => {
    if (known[idx] === 0) {
      const defined = state.definedAs.get(idx);
      if (defined < 0 || (defined > 0 && state.userSurvives(defined - 1))) known[idx] = 1;
      else if (state.erasedAt.get(idx) > 0) known[idx] = 2;
      else {
        known[idx] = 3;
        lookups.push(idx);
      }
    }
    return known[idx]!;
  };
  // Two passes over the references, the second only when some name is missing: a large load names
  // stored users millions of times, and keeping each reference to report it later cost an object apiece.
  let missing = false;
  forEachReference(state, net, (idx) => {
    if (stateOf(idx) === 2) missing = true;
  });
  for (const release of releases) if (release.withdraw) stateOf(release.relationId);
  for (let start = 0; start < lookups.length; start += LOOKUP_CHUNK) {
    const chunk = lookups.slice(start, start + LOOKUP_CHUNK);
    const ids = await store.resolveRelationIds(chunk.map((idx) => names[idx]!));
    chunk.forEach((idx, k) => {
      known[idx] = ids[k] === null ? 4 : 1;
      if (ids[k] === null) missing = true;
    });
  }
  if (missing) {
    forEachReference(state, net, (idx, at) => {
      if (known[idx] === 2) errors.add(at, `relationId ${show(names[idx]!)} is deleted at ${errors.where(state.erasedAt.get(idx))} and not defined again after it`);
      else if (known[idx] === 4) errors.add(at, `unknown relationId ${show(names[idx]!)}: not in this load and not stored`);
    });
  }
  return releases.filter((release) => !release.withdraw || known[release.relationId] === 1);
}

/** Every relationId a surviving upsert names, with where: friend ends, follow ends, then releasers and their peers. */
function forEachReference(state: LoadState, net: NetEffect, visit: (idx: number, at: number) => void): void {
  const friendMarks = net.friends.marks;
  const followMarks = net.follows.marks;
  for (let i = 0; i < friendMarks.length; i++) {
    if (friendMarks[i] !== UPSERT) continue;
    visit(state.friendA.get(i), state.friendAt.get(i));
    visit(state.friendB.get(i), state.friendAt.get(i));
  }
  for (let i = 0; i < followMarks.length; i++) {
    if (followMarks[i] !== UPSERT) continue;
    visit(state.followFrom.get(i), state.followAt.get(i));
    visit(state.followTo.get(i), state.followAt.get(i));
  }
  for (const release of net.releases) {
    if (release.withdraw) continue;
    visit(release.relationId, release.at);
    if (release.peers !== "*") for (const peer of release.peers) visit(peer, release.at);
  }
}

/**
 * Each identity (address, case-folded username, game id) names at most one user once the load is
 * applied: no two users of the load claim one, and none is stored for a user the load leaves as it is.
 */
export async function checkClaims(state: LoadState, errors: ErrorLog, store: StoredGraph): Promise<void> {
  const { users, userAt } = state;
  const owners: Record<IdentityKind, Map<string, number>> = { address: new Map(), social: new Map(), game: new Map() };
  const claims: { identity: Identity; user: number }[] = [];
  for (let k = 0; k < users.length; k++) {
    if (!state.userSurvives(k)) continue;
    for (const [kind, value] of identitiesOf(users[k]!)) {
      const owner = owners[kind].get(value);
      if (owner === undefined) {
        owners[kind].set(value, k);
        claims.push({ identity: { kind, value }, user: k });
        continue;
      }
      // Reported at the later of the two records.
      const [first, second] = userAt.get(owner) < userAt.get(k) ? [owner, k] : [k, owner];
      errors.add(userAt.get(second), `${identityLabel(kind, value, users[second]!)} already belongs to user ${show(users[first]!.relationId)} (${errors.where(userAt.get(first))})`);
    }
  }
  for (let start = 0; start < claims.length; start += LOOKUP_CHUNK) {
    const chunk = claims.slice(start, start + LOOKUP_CHUNK);
    const ids = await store.resolve(chunk.map((claim) => claim.identity));
    const hits = chunk.flatMap((claim, k) => (ids[k] == null ? [] : [{ claim, id: ids[k] }]));
    if (hits.length === 0) continue;
    const stored = await store.relationIds(hits.map((hit) => hit.id));
    hits.forEach(({ claim }, k) => {
      const owner = stored[k]!;
      const user = users[claim.user]!;
      if (owner === user.relationId || owner === "" || state.redefines(owner)) return;
      errors.add(userAt.get(claim.user), `${identityLabel(claim.identity.kind, claim.identity.value, user)} already belongs to stored user ${show(owner)}`);
    });
  }
}

/** How an error names an identity: a username as the user wrote it, not its folded form. */
function identityLabel(kind: IdentityKind, value: string, user: UserInput): string {
  if (kind === "address") return `address ${value}`;
  return kind === "social" ? `social username ${show(user.social?.username ?? value)}` : `game id ${show(value)}`;
}
