import { randomBytes } from "node:crypto";
import { getAddress } from "ethers";
import { describe, expect, it } from "vitest";
import { foldSocialUsername, normalizeAddress } from "../../src/domain/identity.js";

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

describe("normalizeAddress", () => {
  it("accepts a mixed-case address exactly when ethers' getAddress spells it so (EIP-55), over random addresses", () => {
    const disagreements: string[] = [];
    for (let i = 0; i < 2_000; i++) {
      const lower = `0x${randomBytes(20).toString("hex")}`;
      const checksummed = getAddress(lower);
      // The checksummed spelling, and the same with one letter's case flipped (a wrong checksum).
      const letters = [...checksummed.slice(2)].flatMap((c, k) => (/[a-fA-F]/.test(c) ? [k + 2] : []));
      const flipAt = letters[i % Math.max(1, letters.length)];
      const flipped =
        flipAt === undefined ? checksummed : checksummed.slice(0, flipAt) + (checksummed[flipAt] === checksummed[flipAt]!.toUpperCase() ? checksummed[flipAt]!.toLowerCase() : checksummed[flipAt]!.toUpperCase()) + checksummed.slice(flipAt + 1);
      const mixed = (text: string) => /[a-f]/.test(text.slice(2)) && /[A-F]/.test(text.slice(2));
      if (normalizeAddress(checksummed) !== lower) disagreements.push(`rejected ${checksummed}`);
      if (mixed(flipped) && normalizeAddress(flipped) !== null) disagreements.push(`accepted ${flipped}`);
    }
    expect(disagreements).toEqual([]);
  });

  it("accepts one letter case whatever the checksum, and rejects what is not 20 bytes of hex", () => {
    const lower = "0x52908400098527886e0f7030069857d2e4169ee7";
    expect(normalizeAddress(lower.toUpperCase().replace("0X", "0x"))).toBe(lower);
    expect(normalizeAddress(lower)).toBe(lower);
    expect(normalizeAddress("0x52908400098527886E0F7030069857D2E4169EE7")).toBe(lower); // EIP-55's own example
    expect(normalizeAddress("0x52908400098527886e0F7030069857D2E4169EE7")).toBe(null);
    for (const bad of [lower.slice(0, -1), `${lower}0`, lower.slice(2), `0x${"g".repeat(40)}`]) expect(normalizeAddress(bad)).toBe(null);
  });
});
