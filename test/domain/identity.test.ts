import { describe, expect, it } from "vitest";
import { foldSocialUsername } from "../../src/domain/identity.js";

/*
 * Usernames match "after Unicode NFC normalisation and case folding" (the contract): Unicode's full
 * case folding (CaseFolding.txt, statuses C and F), which Python's str.casefold() implements. Upper
 * then lower case agrees with it on every code point but two, checked against str.casefold() over
 * all of Unicode: capital sharp s "ẞ" and dotless "ı".
 */

const same = (x: string, y: string) => foldSocialUsername(x) === foldSocialUsername(y);

describe("foldSocialUsername", () => {
  it("folds letter case after NFC, many-to-one letters included", () => {
    expect(same("Café", "CAFE\u0301")).toBe(true);
    expect(same("Straße", "STRASSE")).toBe(true);
    expect(same("ΣΊΣΥΦΟΣ", "σίσυφοσ")).toBe(true);
    expect(same("ﬃx", "FFIX")).toBe(true);
    expect(same("\u212Aelvin", "kelvin")).toBe(true); // the Kelvin sign
    expect(same("alice", "alicf")).toBe(false);
  });

  it("folds capital sharp s with sharp s and ss, as Unicode case folding does", () => {
    expect(same("STRAẞE", "straße")).toBe(true);
    expect(same("STRAẞE", "STRASSE")).toBe(true);
  });

  it("keeps dotless ı apart from i, as Unicode case folding does (ı has no folding; I folds to i)", () => {
    expect(same("ıpek", "ipek")).toBe(false);
    expect(same("ıpek", "IPEK")).toBe(false);
    expect(same("Ipek", "ipek")).toBe(true);
    expect(same("ıpek", "ıPEK")).toBe(true);
    // İ (capital I with dot above) folds to i and a combining dot, as lower case gives.
    expect(same("İpek", "i\u0307pek")).toBe(true);
  });
});
