import { createHash } from "node:crypto";
import type { CursorCodec } from "../domain/cursor.js";
import { InvalidCursorError, RateLimitedError, UserNotFoundError } from "../domain/errors.js";
import { IDENTITY_PARAM } from "../domain/identity.js";
import type { AssetKind, Identity, UserId, UserRecord, UserSetKind } from "../domain/model.js";
import { radixSort, RadixScratch } from "../domain/radix-sort.js";
import { describeCandidate, kthLargest, Ranking, tallyContenders } from "../domain/recommend.js";
import { PagingStateFullError, type GraphStore } from "../store/store.js";

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
 * Bounds that keep recommendation work flat around hubs and popular assets: a DEX router touched by
 * half the graph says nothing about who someone knows, and reading its holders would make every
 * call slow. Sets over these sizes are skipped without being read (the store checks SCARD first).
 */
export interface RecommendationLimits {
  /** Longest recommendation chain served across all pages. */
  maxResults: number;
  /**
   * Members read per signal at most. Sets are expanded smallest first, since a small shared set (a
   * niche NFT collection, a friend with few friends) says more than a big one, until the next set
   * would overrun the budget: this bounds the work of every call whatever the user's neighbourhood.
   */
  memberBudget: number;
  /** Neighbour sets larger than this (hubs) are never expanded. */
  maxNeighbourSet: number;
  /** Assets held by more users than this (a DEX router) are never expanded. */
  maxAssetHolders: number;
  /**
   * Neighbours (or assets) of the queried user considered per signal at most: a user with more is
   * answered from a fixed sample of this many (firstHop), so that the sizing and choosing behind
   * memberBudget cost no more for a hub user than for anyone. The budget then expands the smallest
   * sets of the sample, which under rarity weighting carry most of the score.
   */
  firstHopCap: number;
  /** How long a recommendation snapshot (and so its cursor chain) lives, in seconds. */
  snapshotTtlSeconds: number;
  /**
   * Snapshots one user may have at once. A user has more than one only when their ranking changed
   * between first pages (the same ranking shares one), so this bounds what a hot user, asked again
   * and again under changes, holds.
   */
  snapshotsPerUser: number;
  /** Snapshots in the whole store at once: with each at most 18 bytes × 2 × maxResults (base64: × 4/3), a bound on their memory. */
  snapshotLimit: number;
}

/** Defaults for RecommendationLimits; the snapshot TTL keeps cursors valid for the contract's 10 minutes. */
export const DEFAULT_RECOMMENDATION_LIMITS: Readonly<RecommendationLimits> = {
  maxResults: 500,
  memberBudget: 1500,
  maxNeighbourSet: 1000,
  maxAssetHolders: 1000,
  firstHopCap: 2000,
  snapshotTtlSeconds: 15 * 60,
  snapshotsPerUser: 16,
  snapshotLimit: 50_000,
};

/** Graph queries over a store: the domain operations behind every RPC, free of any protocol. */
export class GraphQueries {
  constructor(
    private readonly store: GraphStore,
    private readonly cursors: CursorCodec,
    private readonly limits: RecommendationLimits = DEFAULT_RECOMMENDATION_LIMITS,
  ) {}

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
    return this.keysetPage(scope, members, page);
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
    const [friends, release] = await Promise.all([this.store.userSet("friends", id), this.store.release(id)]);
    let released = friends;
    if (release !== "*") {
      const allowed = new Set(release);
      released = friends.filter((friend) => allowed.has(friend));
    }
    const { items: users, cursor } = await this.keysetPage(`rg:${id}`, released, page);
    const descriptions = await this.store.friendDescriptions(
      id,
      users.map((user) => user.id),
    );
    return { items: users.map((user, i) => ({ user, description: descriptions[i] ?? "" })), cursor };
  }

  /**
   * Users sharing at least one signal with `id`, best first. The first page computes and stores a
   * snapshot of the whole ranking; later pages read it, so a cursor chain never repeats a user even
   * if the graph changes meanwhile. A snapshot is keyed by user and content fingerprint, so concurrent
   * first pages share one snapshot, and an expired one is rebuilt when the graph has not changed.
   *
   * A cursor holds the score and relationId of the last user served, not a position: the next page
   * goes on after that user in (score, relationId) order. Users erased meanwhile have no relationId
   * any more and are skipped, and the others keep their order, so a chain neither repeats a user nor
   * shows an erased one.
   */
  async recommendations(id: UserId, page: PageRequest): Promise<Page<DescribedUser>> {
    const scope = `rec:${id}`;
    let ranking: Ranking;
    let fingerprint: string;
    let after: { score: number; relationId: string } | null = null;
    const firstPage = page.cursor === "";
    if (firstPage) {
      ranking = await this.rankRecommendations(id);
      fingerprint = fingerprintOf(ranking);
    } else {
      const state = this.cursors.decode(scope, page.cursor);
      if (typeof state.f !== "string" || typeof state.s !== "number" || typeof state.r !== "string" || state.r === "") {
        throw new InvalidCursorError("cursor is invalid: pass back the cursor of the previous page verbatim");
      }
      fingerprint = state.f;
      after = { score: state.s, relationId: state.r };
      ranking = await this.loadSnapshot(id, fingerprint);
    }
    // The ranking keeps every tie at the cutoff; the chain served stops at maxResults.
    const served = Math.min(ranking.length, this.limits.maxResults);
    const picked: { position: number; relationId: string }[] = [];
    let more = false;
    // Run by run of equal score, from the run of the last user served: each run in relationId order.
    let position = after === null ? 0 : firstScoreAtMost(ranking, after.score, served);
    const readAhead = readRelationIdsAhead(this.store, ranking, page.limit + 1, served);
    while (position < served && !more) {
      let end = position + 1;
      while (end < ranking.length && ranking.score(end) === ranking.score(position)) end++;
      const relationIds = await readAhead(position, end);
      // The chain stops at `served` entries: a run across the cut keeps its first by relationId.
      const run = relationIds
        .map((relationId, i) => ({ position: position + i, relationId }))
        .filter(({ relationId }) => relationId !== "")
        .sort((x, y) => (x.relationId < y.relationId ? -1 : 1))
        .slice(0, served - position)
        .filter(({ position: at, relationId }) => after === null || ranking.score(at) !== after.score || relationId > after.relationId);
      for (const entry of run) {
        if (picked.length === page.limit) {
          more = true;
          break;
        }
        picked.push(entry);
      }
      position = end;
      // A full page at the end of a run: whatever runs are left are the next page's.
      if (picked.length === page.limit && !more) more = position < served;
    }
    // A snapshot only when a next page can be asked for; stored while the page is read.
    const [users] = await Promise.all([
      this.hydrate(picked.map(({ position: at }) => ranking.id(at))),
      firstPage && more ? this.storeSnapshot(id, fingerprint, ranking, served) : undefined,
    ]);
    const countsOf = new Map(picked.map(({ position: at }) => [ranking.id(at), ranking.counts(at)]));
    const last = picked.at(-1);
    return {
      items: users.map((user) => ({ user, description: describeCandidate(countsOf.get(user.id) ?? []) })),
      cursor: more && last ? this.cursors.encode(scope, { f: fingerprint, s: ranking.score(last.position), r: last.relationId }) : "",
    };
  }

  /**
   * Stores the chain `ranking` serves as the snapshot its cursors read, owned by the user so that
   * erasing them drops it. Within the limits on snapshots, or RateLimitedError: every cursor already
   * given out stays valid, so a refusal falls on a first page, never on a chain under way.
   */
  private async storeSnapshot(id: UserId, fingerprint: string, ranking: Ranking, served: number): Promise<void> {
    const chain = await this.chainOf(ranking, served);
    const { snapshotTtlSeconds, snapshotsPerUser, snapshotLimit } = this.limits;
    try {
      await this.store.putPagingState(snapshotKey(id, fingerprint), chain.snapshot().toString("base64"), snapshotTtlSeconds, id, {
        perOwner: snapshotsPerUser,
        total: snapshotLimit,
      });
    } catch (error) {
      if (!(error instanceof PagingStateFullError)) throw error;
      const whose = error.limit === "perOwner" ? "for this user" : "on this service";
      throw new RateLimitedError(
        `too many recommendation cursor chains are open ${whose}; retry in ${error.retryAfterSeconds} s (a page that holds the whole answer needs none)`,
        error.retryAfterSeconds,
      );
    }
  }

  /**
   * The ranking a snapshot keeps: at most twice `served` candidates. The ranking keeps every tie at
   * the cut, which around a popular set can be thousands; past the bound only the run's first by
   * relationId stay, as paging would serve them. Below it the run is kept whole: reading a few
   * hundred relationIds to save a few KB cost more than it saved.
   */
  private async chainOf(ranking: Ranking, served: number): Promise<Ranking> {
    if (ranking.length <= 2 * served) return ranking;
    const [start] = ranking.tieSpan(served - 1, served);
    const relationIds = await this.store.relationIds(ranking.ids(start, ranking.length));
    const kept = relationIds
      .map((relationId, i) => ({ relationId, position: start + i }))
      .filter(({ relationId }) => relationId !== "")
      .sort((x, y) => (x.relationId < y.relationId ? -1 : 1))
      .slice(0, served - start)
      .map(({ position }) => position)
      .sort((x, y) => x - y);
    return ranking.select([...Array.from({ length: start }, (_, position) => position), ...kept]);
  }

  private async loadSnapshot(id: UserId, fingerprint: string): Promise<Ranking> {
    // Read back, a snapshot lives its whole time again: the cursor this page gives out is valid as
    // long as the first one was, however long the chain has been paged.
    const stored = await this.store.getPagingState(snapshotKey(id, fingerprint), { ttlSeconds: this.limits.snapshotTtlSeconds, owner: id });
    if (stored !== null) {
      const ranking = Ranking.fromSnapshot(Buffer.from(stored, "base64"));
      if (ranking === null) throw new InvalidCursorError("cursor has expired: start again with an empty cursor");
      return ranking;
    }
    // The snapshot expired or was evicted: a recomputation with the same fingerprint is the same chain.
    const ranking = await this.rankRecommendations(id);
    if (fingerprintOf(ranking) !== fingerprint) {
      throw new InvalidCursorError("cursor has expired: the graph changed since the first page; start again with an empty cursor");
    }
    return ranking;
  }

  private async rankRecommendations(id: UserId): Promise<Ranking> {
    const { store, limits } = this;
    const [friends, following, followers, contracts, nfts] = await Promise.all([
      this.ownSet("friends", id),
      this.ownSet("following", id),
      this.ownSet("followers", id),
      store.userAssets("contracts", id),
      store.userAssets("nfts", id),
    ]);
    const [mutualFriends, sharedFollowings, sharedFollowers, sharedContracts, sharedNfts] = await Promise.all([
      this.expandUsers("friends", friends),
      this.expandUsers("followers", following),
      this.expandUsers("following", followers),
      this.expandAssets("contracts", contracts),
      this.expandAssets("nfts", nfts),
    ]);
    return tallyContenders(
      [id, ...friends],
      { mutualFriends, sharedFollowings, sharedFollowers, sharedContracts, sharedNfts },
      limits.maxResults,
    );
  }

  /**
   * One of the user's own sets, read as neighbour sets are: the cache layer keeps those, and a
   * user's set is often some neighbour's, read by an earlier recommendation. Past OWN_SET_BOUND it
   * is listed in pages instead, so that no single reply is unbounded.
   */
  private async ownSet(kind: UserSetKind, id: UserId): Promise<readonly UserId[]> {
    const [members] = await this.store.userSetsBounded(kind, [id], OWN_SET_BOUND);
    return members ?? this.store.userSet(kind, id);
  }

  /** The `kind` sets of (some of) `ids`, chosen within the signal's member budget. */
  private async expandUsers(kind: UserSetKind, neighbours: readonly UserId[]): Promise<ArrayLike<UserId>[]> {
    const ids = firstHop(neighbours, this.limits.firstHopCap, hashOfId);
    const sizes = await this.store.userSetSizes(kind, ids);
    const chosen = withinBudget(ids, sizes, this.limits.maxNeighbourSet, this.limits.memberBudget);
    return readSets(this.store.userSetsBounded(kind, chosen, this.limits.maxNeighbourSet));
  }

  /** The holders of (some of) `assets`, chosen within the signal's member budget. */
  private async expandAssets(kind: AssetKind, held: readonly string[]): Promise<ArrayLike<UserId>[]> {
    const assets = firstHop(held, this.limits.firstHopCap, hashOfText);
    const sizes = await this.store.assetHolderCounts(kind, assets);
    const chosen = withinBudget(assets, sizes, this.limits.maxAssetHolders, this.limits.memberBudget);
    return readSets(this.store.assetHoldersBounded(kind, chosen, this.limits.maxAssetHolders));
  }

  /**
   * Keyset paging in ascending relationId order: the cursor holds the last relationId served, so
   * pages stay consistent without server state and every member is served exactly once.
   */
  private async keysetPage(scope: string, members: readonly UserId[], page: PageRequest): Promise<Page<UserRecord>> {
    let after = "";
    if (page.cursor !== "") {
      const state = this.cursors.decode(scope, page.cursor);
      if (typeof state.a !== "string" || state.a === "") {
        throw new InvalidCursorError("cursor is invalid: pass back the cursor of the previous page verbatim");
      }
      after = state.a;
    }
    if (members.length <= page.limit) {
      // Everything left fits one page: one read gives both the order and the page.
      const users = (await this.hydrate(members)).filter((user) => user.relationId > after);
      return { items: users.sort((a, b) => (a.relationId < b.relationId ? -1 : 1)), cursor: "" };
    }
    const relationIds = await this.store.relationIds(members);
    const ordered = members
      .map((id, i) => ({ id, relationId: relationIds[i]! }))
      .filter((m) => m.relationId !== "" && m.relationId > after)
      .sort((a, b) => (a.relationId < b.relationId ? -1 : 1));
    const served = ordered.slice(0, page.limit);
    const last = served[served.length - 1];
    const cursor = ordered.length > page.limit && last ? this.cursors.encode(scope, { a: last.relationId }) : "";
    return { items: await this.hydrate(served.map((m) => m.id)), cursor };
  }

  private async hydrate(ids: readonly UserId[]): Promise<UserRecord[]> {
    if (ids.length === 0) return [];
    const users = await this.store.users(ids);
    // A user deleted between listing and hydration is skipped rather than failing the page.
    return users.filter((user): user is UserRecord => user !== null);
  }
}

/**
 * The items whose sets to expand: smallest first, ties by the item itself (so that the choice does
 * not depend on the order a store lists a set in), skipping empty sets and sets over `maxSet`, for as
 * long as the running total stays within the member budget.
 */
function withinBudget<T extends string | number>(items: readonly T[], sizes: readonly number[], maxSet: number, budget: number): T[] {
  const chosen: T[] = [];
  let total = 0;
  const take = (item: T, size: number) => {
    if (total + size > budget) return false;
    total += size;
    chosen.push(item);
    return true;
  };
  const expandable: number[] = [];
  for (let i = 0; i < items.length; i++) if (sizes[i]! > 0 && sizes[i]! <= maxSet) expandable.push(i);
  // UserIds and set sizes below 2^32 are sorted by a radix sort, by id and then, stably, by size: a
  // comparator over a hub's thousands of neighbours cost more than the rest of the choice, and a
  // native sort of packed (size, id) numbers still most of it. The sort needs no await, so one set
  // of working arrays serves every call.
  const sorter = BUDGET_SORTER;
  sorter.reserve(expandable.length);
  let radix = 0;
  for (; radix < expandable.length; radix++) {
    const item = items[expandable[radix]!]!;
    if (typeof item !== "number" || item >= 2 ** 32 || sizes[expandable[radix]!]! >= 2 ** 32) break;
    sorter.order[radix] = expandable[radix]!;
    sorter.keys[radix] = item;
  }
  if (radix === expandable.length) {
    radixSort(sorter, expandable.length);
    for (let i = 0; i < expandable.length; i++) sorter.keys[i] = sizes[sorter.order[i]!]!;
    radixSort(sorter, expandable.length);
    for (let i = 0; i < expandable.length; i++) if (!take(items[sorter.order[i]!]!, sizes[sorter.order[i]!]!)) break;
    return chosen;
  }
  expandable.sort((a, b) => sizes[a]! - sizes[b]! || (items[a]! < items[b]! ? -1 : items[a]! > items[b]! ? 1 : 0));
  for (const i of expandable) if (!take(items[i]!, sizes[i]!)) break;
  return chosen;
}

/** withinBudget's working arrays. */
const BUDGET_SORTER = new RadixScratch();

/**
 * At most `cap` of `items`: all of them when they fit, else the `cap` with the smallest hash. The
 * sample is a fixed function of the set, whatever order a store lists it in, so that a ranking
 * recomputed for a cursor is the same one; and a hash is blind to degree, so the sample keeps the
 * mix of rare and common neighbours the whole set has. Sizing every neighbour to keep the rarest
 * would be the very work the cap bounds.
 */
export function firstHop<T extends string | number>(items: readonly T[], cap: number, hash: (item: T) => number): readonly T[] {
  if (items.length <= cap) return items;
  // Keys pack (hash, index) exactly, so one linear selection finds the cut and no objects are made.
  const stride = 2 ** Math.ceil(Math.log2(items.length + 1));
  const keys = new Float64Array(items.length);
  for (let i = 0; i < items.length; i++) keys[i] = -(hash(items[i]!) * stride + i);
  const cut = -kthLargest(keys.slice(), cap);
  const kept: T[] = [];
  for (let i = 0; i < items.length; i++) if (-keys[i]! <= cut) kept.push(items[i]!);
  return kept;
}

/** A UserId's place in the first-hop sample: Fibonacci hashing spreads sequential ids. */
function hashOfId(id: UserId): number {
  return Math.imul(id % 2 ** 32, 0x9e3779b1) >>> 0;
}

/** An asset's place in the first-hop sample: FNV-1a of its address. */
function hashOfText(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** The sets that were read: one that grew past its bound since it was sized comes back null, and is skipped. */
async function readSets(sets: Promise<(ArrayLike<UserId> | null)[]>): Promise<ArrayLike<UserId>[]> {
  return (await sets).filter((set) => set !== null);
}

/**
 * The relationIds of ranking positions [from, to), read a page ahead: weighted scores rarely tie, so
 * most runs hold one user, and a read per run would cost a page a store round trip per user. A read
 * covers `ahead` positions (within `served`), widened to the end of the run it stops in.
 */
function readRelationIdsAhead(store: GraphStore, ranking: Ranking, ahead: number, served: number) {
  let readFrom = 0;
  let read: string[] = [];
  return async (from: number, to: number): Promise<string[]> => {
    if (from < readFrom || to > readFrom + read.length) {
      let end = Math.max(to, Math.min(from + ahead, served));
      while (end < ranking.length && ranking.score(end) === ranking.score(end - 1)) end++;
      read = await store.relationIds(ranking.ids(from, end));
      readFrom = from;
    }
    return read.slice(from - readFrom, to - readFrom);
  };
}

/** The first position of `ranking` (before `end`) whose score is at most `score`: scores descend. */
function firstScoreAtMost(ranking: Ranking, score: number, end: number): number {
  let low = 0;
  let high = end;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (ranking.score(middle) > score) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Own sets up to this size are read whole, through the cache layer (GraphQueries.ownSet). */
const OWN_SET_BOUND = 100_000;

/** Snapshots are rankings in base64 (Ranking.snapshot); the version keeps a snapshot of an earlier layout from ever being read as one. */
function snapshotKey(id: UserId, fingerprint: string): string {
  return `rec:v4:${id}:${fingerprint}`;
}

function fingerprintOf(ranking: Ranking): string {
  return createHash("sha256").update(ranking.bytes).digest("base64url").slice(0, 22);
}
