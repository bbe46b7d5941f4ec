import { describe, expect, it } from "vitest";
import {
  SIGNALS,
  describeCandidate,
  occurrenceWeight,
  Ranking,
  tallyContenders,
  type SignalSets,
} from "../../src/domain/recommend.js";
import { createPrng } from "../../src/synthetic/prng.js";

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
    const w = occurrenceWeight;
    expect(found.get(3)).toEqual({ counts: counts({ mutualFriends: 2, sharedNfts: 1 }), score: w("mutualFriends", 3) + w("mutualFriends", 2) + w("sharedNfts", 2) });
    expect(found.get(4)).toEqual({ counts: counts({ mutualFriends: 1 }), score: w("mutualFriends", 3) });
    expect(found.get(5)).toEqual({ counts: counts({ sharedNfts: 1, sharedFollowers: 1 }), score: w("sharedNfts", 2) + w("sharedFollowers", 1) });
  });

  it("keeps every contender that can still make the top max once ties are broken", () => {
    // id 1 scores most (a mutual friend); id 2 next (two contracts); ids 3 and 4 tie (one contract each).
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

  it("tallies thousands of candidates, sparse and colliding ids, exactly as a plain weighted count does", () => {
    // Ids spread over the whole safe-integer range, many of them multiples of a power of two (which
    // collide in a naive hash), against a Map-based count of the same occurrences.
    const rng = createPrng("tally");
    const pool = Array.from({ length: 3_000 }, (_, i) => (i % 3 === 0 ? i * 4096 : i % 3 === 1 ? 2 ** 40 + i : rng.int(1e9)));
    const excluded = pool.slice(0, 50);
    const input = sets(
      Object.fromEntries(SIGNALS.map((signal) => [signal, Array.from({ length: 20 }, () => pool.filter(() => rng.next() < 0.1))])),
    );
    const expected = new Map<number, { counts: number[]; score: number }>();
    SIGNALS.forEach((signal, s) => {
      for (const set of input[signal]) {
        for (const id of Array.from(set)) {
          if (excluded.includes(id)) continue;
          const row = expected.get(id) ?? { counts: SIGNALS.map(() => 0), score: 0 };
          row.counts[s]! += 1;
          row.score += occurrenceWeight(signal, set.length);
          expected.set(id, row);
        }
      }
    });
    const found = byId(tallyContenders(excluded, input, expected.size));
    expect(found.size).toBe(expected.size);
    for (const [id, row] of expected) expect(found.get(id)).toEqual(row);
    // And the order: by score, ties by id, with the cutoff keeping whole runs of ties.
    const ranked = [...expected].sort(([a, x], [b, y]) => y.score - x.score || a - b).map(([id]) => id);
    const top = tallyContenders(excluded, input, 100);
    const cutoff = expected.get(ranked[99]!)!.score;
    expect(top.ids(0, top.length)).toEqual(ranked.filter((id) => expected.get(id)!.score >= cutoff));
  });

  it("ranks exactly as a plain tally and full sort do, call after call of any size (its scratch arrays carry nothing over)", () => {
    // The reference: a Map per candidate, every candidate sorted, the cut after the max-th score.
    const reference = (excluded: readonly number[], input: SignalSets, max: number): number[] => {
      const skip = new Set(excluded);
      const rows = new Map<number, { score: number; counts: number[] }>();
      SIGNALS.forEach((signal, s) => {
        for (const set of input[signal]) {
          for (const id of Array.from(set)) {
            if (skip.has(id)) continue;
            const row = rows.get(id) ?? { score: 0, counts: SIGNALS.map(() => 0) };
            row.score += occurrenceWeight(signal, set.length);
            row.counts[s]! += 1;
            rows.set(id, row);
          }
        }
      });
      const ranked = [...rows].sort(([a, x], [b, y]) => y.score - x.score || a - b);
      const cutoff = ranked.length > max ? ranked[max - 1]![1].score : 0;
      return ranked
        .filter(([, row]) => row.score >= cutoff)
        .flatMap(([id, row]) => [Math.floor(id / 2 ** 32), id % 2 ** 32, row.score, ...row.counts]);
    };
    const rng = createPrng("tally-differential");
    // Small and large calls interleaved, over a few or many distinct ids (many ties, or few), some
    // past 2^32, one past the occurrences whose scratch is kept (2^17), with excluded ids in the sets.
    const shapes = [
      { sets: 3, members: 4, ids: 10 },
      { sets: 40, members: 50, ids: 200_000 },
      { sets: 2, members: 1, ids: 3 },
      { sets: 30, members: 200, ids: 500 },
      { sets: 10, members: 30, ids: 40 },
      { sets: 25, members: 60, ids: 2 ** 45 },
    ];
    const huge = { sets: 60, members: 2_500, ids: 5_000_000 };
    for (let round = 0; round < 25; round++) {
      const shape = round === 12 ? huge : shapes[round % shapes.length]!;
      const id = () => 1 + rng.int(Math.min(shape.ids, 2 ** 31)) * (shape.ids > 2 ** 31 ? 2 ** 14 : 1);
      const excluded = Array.from({ length: 1 + rng.int(20) }, id);
      const input = sets(
        Object.fromEntries(
          SIGNALS.map((signal) => [signal, Array.from({ length: rng.int(shape.sets + 1) }, () => Array.from({ length: 1 + rng.int(shape.members) }, id))]),
        ),
      );
      for (const max of [1, 5, 500]) {
        expect(Array.from(new Uint32Array(tallyContenders(excluded, input, max).bytes.buffer.slice(0)))).toEqual(reference(excluded, input, max));
      }
    }
  });

  it("ranks by descending score then ascending id, and serves each page's ties by ascending relationId", () => {
    // Scores: 7 (a mutual friend and an NFT); 40 and 3 (a mutual friend each); 2 ** 40 and 9 (an NFT each); 1 (a contract).
    const ranking = tallyContenders(
      [],
      sets({ mutualFriends: [[40], [7, 3]], sharedNfts: [[7, 2 ** 40, 9]], sharedContracts: [[1]] }),
      10,
    );
    expect(ranking.ids(0, ranking.length)).toEqual([7, 3, 40, 9, 2 ** 40, 1]);
    const [friend, nft, contract] = [occurrenceWeight("mutualFriends", 2), occurrenceWeight("sharedNfts", 3), occurrenceWeight("sharedContracts", 1)];
    expect([0, 1, 2, 3, 4, 5].map((i) => ranking.score(i))).toEqual([friend + nft, friend, friend, nft, nft, contract]);
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
    expect(served(1, 2)).toEqual([{ id: 40, score: friend, counts: counts({ mutualFriends: 1 }) }]);
    expect(served(0, 1)).toEqual([{ id: 7, score: friend + nft, counts: counts({ mutualFriends: 1, sharedNfts: 1 }) }]);
    expect(served(4, 4)).toEqual([]);
  });

  it("weighs an occurrence by the rarity of its set: a friend of few, or a niche asset, counts more", () => {
    const hub = Array.from({ length: 500 }, (_, i) => 1000 + i);
    const ranking = tallyContenders(
      [],
      sets({
        // 10 shares one friend who has 4 friends; 11 shares two friends with 500 friends each.
        mutualFriends: [[10, 20, 21, 22], [11, ...hub], [11, ...hub.map((id) => id + 500)]],
        // 12 holds a collection of 10 holders; 13 touched a contract with 500 holders.
        sharedNfts: [[12, 30, 31, 32, 33, 34, 35, 36, 37, 38]],
        sharedContracts: [[13, ...hub.map((id) => id + 2000)]],
      }),
      2000,
    );
    const position = (id: number) => ranking.ids(0, ranking.length).indexOf(id);
    expect(position(10)).toBeLessThan(position(11));
    expect(position(12)).toBeLessThan(position(13));
    expect(ranking.counts(position(11))).toEqual(counts({ mutualFriends: 2 }));
    // The weights themselves: falling with size, never below 1, and a set of 1 weighs as one of 2.
    expect(occurrenceWeight("mutualFriends", 2)).toBeGreaterThan(occurrenceWeight("mutualFriends", 3));
    expect(occurrenceWeight("sharedContracts", 1e12)).toBe(1);
    expect(occurrenceWeight("sharedNfts", 1)).toBe(occurrenceWeight("sharedNfts", 2));
  });

  it("stores a ranking as a snapshot and reads it back unchanged, narrow or wide, and refuses bytes that cannot be one", () => {
    // Ids past 2^32 take the wide layout; small ids and counts the narrow one, 18 bytes a candidate.
    const wide = tallyContenders([], sets({ mutualFriends: [[5, 2 ** 40 + 1]], sharedFollowers: [[5, 2 ** 52 + 3]] }), 10);
    const narrow = tallyContenders([], sets({ mutualFriends: [[5, 7], [5]], sharedNfts: [[9, 7]] }), 10);
    expect(narrow.snapshot().length).toBe(4 + 3 * 18);
    for (const ranking of [wide, narrow]) {
      // Copied to an odd offset, as bytes decoded from base64 may sit.
      const copy = Ranking.fromSnapshot(Uint8Array.from(Buffer.concat([Buffer.from([0]), ranking.snapshot()]).subarray(1)))!;
      expect(copy.length).toBe(3);
      expect(byId(copy)).toEqual(byId(ranking));
      expect(copy.ids(0, 3)).toEqual(ranking.ids(0, 3));
      expect(Ranking.fromSnapshot(ranking.snapshot().subarray(0, 10))).toBeNull();
    }
    expect(wide.ids(0, 3)).toEqual([5, 2 ** 40 + 1, 2 ** 52 + 3]);
    expect(Ranking.fromSnapshot(Buffer.from([3, 0, 0, 0]))).toBeNull();
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
