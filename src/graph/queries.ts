import type { Caller } from "../domain/caller.js";
import type { CursorCodec } from "../domain/cursor.js";
import { UserNotFoundError } from "../domain/errors.js";
import { IDENTITY_PARAM } from "../domain/identity.js";
import type { Identity, UserId, UserRecord } from "../domain/model.js";
import { DEFAULT_RECOMMENDATION_LIMITS, type RecommendationLimits } from "../domain/recommendation-limits.js";
import type { GraphStore } from "../store/store.js";
import { ownSet } from "./own-set.js";
import { hydrate, keysetPage, type DescribedUser, type Page, type PageRequest } from "./paging.js";
import { Recommendations } from "./recommendations.js";

export type { DescribedUser, Page, PageRequest } from "./paging.js";

/** Graph queries over a store: the domain operations behind every RPC, free of any protocol. */
export class GraphQueries {
  private readonly recommender: Recommendations;

  constructor(
    private readonly store: GraphStore,
    private readonly cursors: CursorCodec,
    limits: RecommendationLimits = DEFAULT_RECOMMENDATION_LIMITS,
  ) {
    this.recommender = new Recommendations(store, cursors, limits);
  }

  /** Resolves identities to distinct users; UserNotFoundError names the first unknown one. */
  async resolveUsers(identities: readonly Identity[]): Promise<UserId[]> {
    const ids = await this.store.resolve(identities);
    const distinct = new Set<UserId>();
    ids.forEach((id, i) => {
      if (id === null) {
        const missing = identities[i]!;
        throw new UserNotFoundError(`no user has ${IDENTITY_PARAM[missing.kind]} "${missing.value}"`);
      }
      distinct.add(id);
    });
    return [...distinct];
  }

  /** Loads one user; UserNotFoundError when it vanished between resolution and load. */
  async user(id: UserId): Promise<UserRecord> {
    const [user] = await this.store.users([id]);
    if (!user) throw new UserNotFoundError("the queried user does not exist");
    return user;
  }

  /** How many users `id` follows, and how many follow `id`. */
  async followCounts(id: UserId): Promise<{ followingCount: number; followerCount: number }> {
    const [following, followers] = await Promise.all([
      this.store.userSetSizes("following", [id]),
      this.store.userSetSizes("followers", [id]),
    ]);
    return { followingCount: following[0] ?? 0, followerCount: followers[0] ?? 0 };
  }

  /** Users who are friends of every one of `ids`, in ascending relationId order. */
  async mutualFriends(ids: readonly UserId[], page: PageRequest): Promise<Page<UserRecord>> {
    const scope = `mf:${[...ids].sort((a, b) => a - b).join(",")}`;
    const members = await this.store.userSetIntersection("friends", ids);
    return keysetPage(this.store, this.cursors, scope, members, page);
  }

  /**
   * Contracts every address interacted with, lowercase and ascending. An address that interacted
   * with a contract is known, so only an empty answer needs the (costlier) check that every address
   * exists: the common case takes one store call.
   */
  async mutualContracts(addresses: readonly string[]): Promise<string[]> {
    const contracts = await this.store.contractIntersection(addresses);
    if (contracts.length === 0) {
      const known = await this.store.addressesKnown(addresses);
      const unknown = addresses.find((_, i) => !known[i]);
      if (unknown !== undefined) throw new UserNotFoundError(`address "${unknown}" is not known to relgraph`);
    }
    return contracts.sort();
  }

  /** The user's released friends, in ascending relationId order, with each relation's description. */
  async relationshipGraph(id: UserId, page: PageRequest): Promise<Page<DescribedUser>> {
    const [friends, release] = await Promise.all([ownSet(this.store, "friends", id), this.store.release(id)]);
    let released = friends;
    if (release !== "*") {
      const allowed = new Set(release);
      released = friends.filter((friend) => allowed.has(friend));
    }
    const { items: users, cursor } = await keysetPage(this.store, this.cursors, `rg:${id}`, released, page);
    const descriptions = await this.store.friendDescriptions(
      id,
      users.map((user) => user.id),
    );
    return { items: users.map((user, i) => ({ user, description: descriptions[i] ?? "" })), cursor };
  }

  /** Users sharing at least one signal with `id`, best first, in pages (recommendations.ts), held open for `caller`'s ApiKey. */
  recommendations(id: UserId, page: PageRequest, caller: Caller): Promise<Page<DescribedUser>> {
    return this.recommender.page(id, page, caller);
  }
}
