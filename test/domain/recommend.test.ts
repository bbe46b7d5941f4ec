import { describe, expect, it } from "vitest";
import {
  SIGNALS,
  SIGNAL_WEIGHTS,
  describeCandidate,
  Ranking,
  tallyContenders,
  type SignalSets,
} from "../../src/domain/recommend.js";
import { createPrng } from "../../src/ingest/prng.js";

const counts = (partial: Partial<Record<(typeof SIGNALS)[number], number>>) => SIGNALS.map((s) => partial[s] ?? 0);

describe("recommendation scoring", () => {
  /** Signal sets with every signal empty unless given. */
  const sets = (partial: Partial<SignalSets>): SignalSets => ({
    mutualFriends: [],
    sharedContracts: [],
    sharedNfts: [],
    sharedFollowings: [],
    sharedFollowers: [],
    ...partial,
  });
  /** A ranking as one object per candidate, keyed by id. */
  const byId = (ranking: Ranking) =>
    new Map(ranking.ids(0, ranking.length).map((id, i) => [id, { score: ranking.score(i), counts: ranking.counts(i) }]));

  it("counts one occurrence per signal set membership and skips excluded users", () => {
    const contenders = tallyContenders(
      [1, 2],
      sets({
        mutualFriends: [
          [2, 3, 4], // friend set of one friend
          [1, 3], // of another friend: 1 is the user
        ],
        sharedNfts: [[3, 5]],
        sharedFollowers: [[5]],
      }),
      10,
    );
    const found = byId(contenders);
    expect([...found.keys()].sort()).toEqual([3, 4, 5]);
    expect(found.get(3)).toEqual({ counts: counts({ mutualFriends: 2, sharedNfts: 1 }), score: 2 * 3 + 2 });
    expect(found.get(4)).toEqual({ counts: counts({ mutualFriends: 1 }), score: 3 });
    expect(found.get(5)).toEqual({ counts: counts({ sharedNfts: 1, sharedFollowers: 1 }), score: 3 });
  });

  it("keeps every contender that can still make the top max once ties are broken", () => {
    // id 1 scores 3; id 2 scores 2; ids 3 and 4 score 1 each.
    const input = sets({ mutualFriends: [[1]], sharedContracts: [[2, 3, 4], [2]] });
    const ids = (max: number) => {
      const ranking = tallyContenders([], input, max);
      return ranking.ids(0, ranking.length).sort();
    };
    // Top 2: id 1 (3), id 2 (2). Top 3: the third place is a tie among 3 and 4, so both stay.
    expect(ids(2)).toEqual([1, 2]);
    expect(ids(3)).toEqual([1, 2, 3, 4]);
    expect(ids(4)).toEqual([1, 2, 3, 4]);
  });

  it("tallies thousands of candidates, sparse and colliding ids, exactly as a plain count does", () => {
    // Ids spread over the whole safe-integer range, many of them multiples of a power of two (which
    // collide in a naive hash), against a Map-based count of the same occurrences.
    const rng = createPrng("tally");
    const pool = Array.from({ length: 3_000 }, (_, i) => (i % 3 === 0 ? i * 4096 : i % 3 === 1 ? 2 ** 40 + i : rng.int(1e9)));
    const excluded = pool.slice(0, 50);
    const input = sets(
      Object.fromEntries(SIGNALS.map((signal) => [signal, Array.from({ length: 20 }, () => pool.filter(() => rng.next() < 0.1))])),
    );
    const expected = new Map<number, number[]>();
    SIGNALS.forEach((signal, s) => {
      for (const set of input[signal]) {
        for (const id of Array.from(set)) {
          if (excluded.includes(id)) continue;
          const row = expected.get(id) ?? SIGNALS.map(() => 0);
          row[s]! += 1;
          expected.set(id, row);
        }
      }
    });
    const found = byId(tallyContenders(excluded, input, expected.size));
    expect(found.size).toBe(expected.size);
    for (const [id, row] of expected) {
      expect(found.get(id)).toEqual({ counts: row, score: row.reduce((sum, n, s) => sum + n * SIGNAL_WEIGHTS[SIGNALS[s]!], 0) });
    }
  });

  it("ranks by descending score then ascending id, and serves each page's ties by ascending relationId", () => {
    // Scores: 7 → 5 (a mutual friend and an NFT); 40 and 3 → 3; 2 ** 40 and 9 → 2; 1 → 1.
    const ranking = tallyContenders(
      [],
      sets({ mutualFriends: [[40], [7, 3]], sharedNfts: [[7, 2 ** 40, 9]], sharedContracts: [[1]] }),
      10,
    );
    expect(ranking.ids(0, ranking.length)).toEqual([7, 3, 40, 9, 2 ** 40, 1]);
    expect([0, 1, 2, 3, 4, 5].map((i) => ranking.score(i))).toEqual([5, 3, 3, 2, 2, 1]);
    // Positions 1..2 tie at 3, 3..4 at 2: a window is widened to the whole runs it overlaps.
    expect(ranking.tieSpan(0, 1)).toEqual([0, 1]);
    expect(ranking.tieSpan(0, 2)).toEqual([0, 3]);
    expect(ranking.tieSpan(2, 4)).toEqual([1, 5]);
    expect(ranking.tieSpan(5, 5)).toEqual([5, 5]);
    const relationIdOf = new Map([[7, "u7"], [3, "u9"], [40, "bob"], [9, "u10"], [2 ** 40, "a"], [1, "z"]]);
    const served = (from: number, to: number) => {
      const [start, end] = ranking.tieSpan(from, to);
      return ranking.window(from, to, ranking.ids(start, end).map((id) => relationIdOf.get(id)!));
    };
    // "bob" < "u9"; "a" < "u10" as strings.
    expect(served(0, 6).map((c) => c.id)).toEqual([7, 40, 3, 2 ** 40, 9, 1]);
    expect(served(2, 4).map((c) => c.id)).toEqual([3, 2 ** 40]);
    expect(served(1, 2)).toEqual([{ id: 40, score: 3, counts: counts({ mutualFriends: 1 }) }]);
    expect(served(0, 1)).toEqual([{ id: 7, score: 5, counts: counts({ mutualFriends: 1, sharedNfts: 1 }) }]);
    expect(served(4, 4)).toEqual([]);
  });

  it("packs a ranking into bytes and back unchanged, and refuses bytes that cannot be one", () => {
    const ranking = tallyContenders([], sets({ mutualFriends: [[5, 2 ** 40 + 1]], sharedFollowers: [[5, 2 ** 52 + 3]] }), 10);
    const copy = Ranking.fromBytes(Uint8Array.from(Buffer.concat([Buffer.from([0]), ranking.bytes]).subarray(1)))!;
    expect(copy.length).toBe(3);
    expect(byId(copy)).toEqual(byId(ranking));
    expect(copy.ids(0, 3)).toEqual([5, 2 ** 40 + 1, 2 ** 52 + 3]);
    expect(Ranking.fromBytes(ranking.bytes.subarray(1))).toBeNull();
  });

  it("describes each signal present with its count, singular or plural, in a fixed order", () => {
    expect(describeCandidate(counts({ mutualFriends: 1 }))).toBe("1 mutual friend");
    expect(describeCandidate(counts({ mutualFriends: 2 }))).toBe("2 mutual friends");
    expect(describeCandidate(counts({ sharedFollowers: 3, sharedContracts: 1 }))).toBe("1 contract both interacted with, 3 followers in common");
    expect(describeCandidate(counts({ mutualFriends: 1, sharedContracts: 2, sharedNfts: 1, sharedFollowings: 1, sharedFollowers: 1 }))).toBe(
      "1 mutual friend, 2 contracts both interacted with, 1 NFT collection both hold, 1 account both follow, 1 follower in common",
    );
    expect(describeCandidate(counts({ sharedNfts: 12, sharedFollowings: 2 }))).toBe("12 NFT collections both hold, 2 accounts both follow");
  });

  it("never describes a candidate with a signal as the empty string", () => {
    for (let slot = 0; slot < SIGNALS.length; slot++) {
      const row = SIGNALS.map((_, i) => (i === slot ? 1 : 0));
      expect(describeCandidate(row)).not.toBe("");
    }
  });
});
