import { describe, expect, it } from "vitest";
import { CandidateTally, SIGNALS, SIGNAL_WEIGHTS, describeCandidate, rankCandidates, type Candidate } from "../../src/domain/recommend.js";

const counts = (partial: Partial<Record<(typeof SIGNALS)[number], number>>) => SIGNALS.map((s) => partial[s] ?? 0);

describe("recommendation scoring", () => {
  it("counts one occurrence per signal set membership and skips excluded users", () => {
    const tally = new CandidateTally(new Set([1, 2]));
    tally.add("mutualFriends", [2, 3, 4]); // friend set of one friend
    tally.add("mutualFriends", [1, 3]); // of another friend: 1 is the user
    tally.add("sharedNfts", [3, 5]);
    tally.add("sharedFollowers", [5]);
    expect(tally.size).toBe(3);
    const byId = new Map(tally.contenders(10).map((c) => [c.id, c]));
    expect([...byId.keys()].sort()).toEqual([3, 4, 5]);
    expect(byId.get(3)).toEqual({ id: 3, counts: counts({ mutualFriends: 2, sharedNfts: 1 }), score: 2 * 3 + 2 });
    expect(byId.get(4)).toEqual({ id: 4, counts: counts({ mutualFriends: 1 }), score: 3 });
    expect(byId.get(5)).toEqual({ id: 5, counts: counts({ sharedNfts: 1, sharedFollowers: 1 }), score: 3 });
  });

  it("weights a mutual friend above an NFT, and an NFT above a contract, a followed account or a follower", () => {
    expect(SIGNAL_WEIGHTS.mutualFriends).toBeGreaterThan(SIGNAL_WEIGHTS.sharedNfts);
    for (const weaker of ["sharedContracts", "sharedFollowings", "sharedFollowers"] as const) {
      expect(SIGNAL_WEIGHTS.sharedNfts).toBeGreaterThan(SIGNAL_WEIGHTS[weaker]);
      expect(SIGNAL_WEIGHTS[weaker]).toBeGreaterThan(0);
    }
  });

  it("keeps every contender that can still make the top max once ties are broken", () => {
    const tally = new CandidateTally(new Set());
    tally.add("mutualFriends", [1]); // 3
    tally.add("sharedContracts", [2, 3, 4]); // 1 each
    tally.add("sharedContracts", [2]); // 2 has 2
    // Top 2: id 1 (3), id 2 (2). Top 3: the third place is a tie among 3 and 4, so both stay.
    expect(tally.contenders(2).map((c) => c.id).sort()).toEqual([1, 2]);
    expect(tally.contenders(3).map((c) => c.id).sort()).toEqual([1, 2, 3, 4]);
    expect(tally.contenders(4).map((c) => c.id).sort()).toEqual([1, 2, 3, 4]);
  });

  it("ranks by descending score, ties by ascending relationId in string order, and cuts at max", () => {
    const candidates: Candidate[] = [
      { id: 1, score: 2, counts: [] },
      { id: 2, score: 5, counts: [] },
      { id: 3, score: 2, counts: [] },
      { id: 4, score: 2, counts: [] },
      { id: 5, score: 1, counts: [] },
    ];
    const relationIds = ["u9", "u1", "u10", "bob", "a"];
    const ranked = rankCandidates(candidates, relationIds, 10);
    // "bob" < "u10" < "u9" as strings
    expect(ranked.map((c) => c.id)).toEqual([2, 4, 3, 1, 5]);
    expect(rankCandidates(candidates, relationIds, 3).map((c) => c.id)).toEqual([2, 4, 3]);
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
