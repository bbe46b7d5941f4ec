import type { IdentityKind } from "../domain/model.js";
import type { IngestBatch, UserInput } from "./store.js";

/* Pure helpers over ingest batches, shared by every engine so that they agree on the details. */

/** Number of records in a batch, the unit of write progress for every engine. */
export function recordCount(batch: IngestBatch): number {
  return (
    batch.users.length +
    batch.friends.length +
    batch.follows.length +
    batch.interactions.length +
    batch.nfts.length +
    batch.releases.length
  );
}

/** Every relationId a batch names, its users' first, in order of first appearance. */
export function referencedRelationIds(batch: IngestBatch): string[] {
  const referenced = new Set(batch.users.map((user) => user.relationId));
  for (const { a, b } of batch.friends) referenced.add(a).add(b);
  for (const { from, to } of batch.follows) referenced.add(from).add(to);
  for (const { relationId, peers } of batch.releases) {
    referenced.add(relationId);
    if (peers !== "*") for (const peer of peers) referenced.add(peer);
  }
  return [...referenced];
}

/** The identity index entries a user record owns. */
export function identitiesOf(user: UserInput): [IdentityKind, string][] {
  const entries: [IdentityKind, string][] = user.addresses.map((address) => ["address", address]);
  if (user.social) entries.push(["social", user.social.username]);
  if (user.game) entries.push(["game", user.game.gameId]);
  return entries;
}

/** Identity entries of the old record that the new record no longer has. */
export function staleIdentities(old: UserInput, next: UserInput): [IdentityKind, string][] {
  const kept = new Set(identitiesOf(next).map(([kind, value]) => `${kind}:${value}`));
  return identitiesOf(old).filter(([kind, value]) => !kept.has(`${kind}:${value}`));
}

/** Thrown when a batch names a relationId that is neither in it nor stored; the ingester checks this first. */
export class UnknownRelationIdError extends Error {
  constructor(relationId: string) {
    super(`relationId ${relationId} is neither in the batch nor stored`);
    this.name = "UnknownRelationIdError";
  }
}
