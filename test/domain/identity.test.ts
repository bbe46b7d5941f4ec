import { randomBytes } from "node:crypto";
import { getAddress } from "ethers";
import { describe, expect, it } from "vitest";
import { foldSocialUsername, normalizeAddress, toChecksumAddress } from "../../src/domain/identity.js";

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

describe("normalizeAddress and toChecksumAddress", () => {
  it("agree with ethers' getAddress (EIP-55) over random addresses, and reject a checksum with one letter's case flipped", () => {
    const swapCase = (c: string) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase());
    const disagreements: string[] = [];
    for (let i = 0; i < 2_000; i++) {
      const lower = `0x${randomBytes(20).toString("hex")}`;
      const checksummed = getAddress(lower);
      if (toChecksumAddress(lower) !== checksummed) disagreements.push(`spelled ${toChecksumAddress(lower)} for ${checksummed}`);
      if (normalizeAddress(checksummed) !== lower) disagreements.push(`rejected ${checksummed}`);
      // One letter's case flipped: when that leaves the address mixed case, its checksum is wrong.
      const letters = [...checksummed].flatMap((c, k) => (k >= 2 && /[a-fA-F]/.test(c) ? [k] : []));
      if (letters.length === 0) continue;
      const at = letters[i % letters.length]!;
      const flipped = checksummed.slice(0, at) + swapCase(checksummed[at]!) + checksummed.slice(at + 1);
      if (/[a-f]/.test(flipped.slice(2)) && /[A-F]/.test(flipped.slice(2)) && normalizeAddress(flipped) !== null) disagreements.push(`accepted ${flipped}`);
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
