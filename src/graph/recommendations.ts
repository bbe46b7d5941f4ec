import { createHash } from "node:crypto";
import type { Caller } from "../domain/caller.js";
import type { CursorCodec } from "../domain/cursor.js";
import { InvalidCursorError, RateLimitedError } from "../domain/errors.js";
import type { AssetKind, UserId, UserSetKind } from "../domain/model.js";
import { DEFAULT_RECOMMENDATION_LIMITS, type RecommendationLimits } from "../domain/recommendation-limits.js";
import { describeCandidate, Ranking, tallyContenders } from "../domain/recommend.js";
import { firstHop, hashOfId, hashOfText, withinBudget } from "../domain/sampling.js";
import { PagingStateFullError, type GraphStore } from "../store/store.js";
import { ownSet } from "./own-set.js";
import { hydrate, type DescribedUser, type Page, type PageRequest } from "./paging.js";

/** Recommendations over a store: each first page ranks and keeps a snapshot that later pages read. */
export class Recommendations {
  constructor(
    private readonly store: GraphStore,
    private readonly cursors: CursorCodec,
    private readonly limits: RecommendationLimits = DEFAULT_RECOMMENDATION_LIMITS,
  ) {}

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
   *
   * A snapshot counts toward the share of the pool of the `caller`'s ApiKey while the key's chains
   * read it; a first page past the key's share is refused, and other keys' chains are never touched.
   */
  async page(id: UserId, page: PageRequest, caller: Caller): Promise<Page<DescribedUser>> {
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
      ranking = await this.loadSnapshot(id, fingerprint, caller);
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
      hydrate(this.store, picked.map(({ position: at }) => ranking.id(at))),
      firstPage && more ? this.storeSnapshot(id, fingerprint, ranking, served, caller) : undefined,
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
   * erasing them drops it, and held by the caller's key. Within the limits on snapshots, or
   * RateLimitedError: every cursor already given out stays valid, so a refusal falls on a first page,
   * never on a chain under way.
   */
  private async storeSnapshot(id: UserId, fingerprint: string, ranking: Ranking, served: number, caller: Caller): Promise<void> {
    const chain = await this.chainOf(ranking, served);
    const { snapshotTtlSeconds, snapshotsPerUser, snapshotsPerKey, snapshotLimit } = this.limits;
    try {
      await this.store.putPagingState(snapshotKey(id, fingerprint), chain.snapshot().toString("base64"), snapshotTtlSeconds, {
        owner: id,
        holder: caller.keyId,
        limits: { perOwner: snapshotsPerUser, perHolder: snapshotsPerKey, total: snapshotLimit },
      });
    } catch (error) {
      if (!(error instanceof PagingStateFullError)) throw error;
      throw new RateLimitedError(
        `too many recommendation cursor chains are open ${REFUSED_FOR[error.limit]}; retry in ${error.retryAfterSeconds} s (a page that holds the whole answer needs none)`,
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

  private async loadSnapshot(id: UserId, fingerprint: string, caller: Caller): Promise<Ranking> {
    // Read back, a snapshot lives its whole time again: the cursor this page gives out is valid as
    // long as the first one was, however long the chain has been paged. So does the key's count of it.
    const stored = await this.store.getPagingState(snapshotKey(id, fingerprint), {
      ttlSeconds: this.limits.snapshotTtlSeconds,
      owner: id,
      holder: caller.keyId,
    });
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
      ownSet(this.store, "friends", id),
      ownSet(this.store, "following", id),
      ownSet(this.store, "followers", id),
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

/** Whose limit refused a new chain, as its desc says. */
const REFUSED_FOR: Readonly<Record<PagingStateFullError["limit"], string>> = {
  perOwner: "for this user",
  perHolder: "for this ApiKey",
  total: "on this service",
};

/** Snapshots are rankings in base64 (Ranking.snapshot); the version keeps a snapshot of an earlier layout from ever being read as one. */
function snapshotKey(id: UserId, fingerprint: string): string {
  return `rec:v4:${id}:${fingerprint}`;
}

function fingerprintOf(ranking: Ranking): string {
  return createHash("sha256").update(ranking.bytes).digest("base64url").slice(0, 22);
}
