// Keccak alone, not ethers (not even its address subpath, ~0.1 s to load): every `relgraph ingest`
// and `follow` validates addresses, and the checksum is all they need of them.
import { keccak_256 } from "@noble/hashes/sha3.js";

/** The query parameter (and proto JSON field) that names each identity kind, for requests and error messages. */
export const IDENTITY_PARAM = { address: "address", social: "socialUsername", game: "gameId" } as const;

/** Matches a relationId of the ingestion format. */
export const RELATION_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/;

/**
 * Returns the lowercase form of an EOA address, or null when it is not one. Any single letter case is
 * accepted; a mixed-case address must carry a valid EIP-55 checksum, because a wrong checksum
 * usually means a mistyped address.
 */
export function normalizeAddress(raw: string): string | null {
  if (!ADDRESS_PATTERN.test(raw)) return null;
  const hex = raw.slice(2);
  const mixed = hex !== hex.toLowerCase() && hex !== hex.toUpperCase();
  const lower = raw.toLowerCase();
  if (mixed && checksummed(lower.slice(2)) !== hex) return null;
  return lower;
}

/**
 * The EIP-55 spelling of 40 lowercase hex digits: a letter is upper case where the same nibble of
 * the Keccak-256 hash of the lowercase digits (as ASCII) is 8 or more.
 */
function checksummed(lowerHex: string): string {
  const hash = keccak_256(Buffer.from(lowerHex, "latin1"));
  let spelled = "";
  for (let i = 0; i < lowerHex.length; i++) {
    const nibble = i % 2 === 0 ? hash[i >> 1]! >> 4 : hash[i >> 1]! & 0x0f;
    const digit = lowerHex[i]!;
    spelled += nibble >= 8 ? digit.toUpperCase() : digit;
  }
  return spelled;
}

/**
 * The form a social username is matched by: NFC, then Unicode case folding, as upper then lower case
 * (which also folds "ß" with "SS" and final "ς" with "σ", where lower case alone would not). On two
 * letters only, checked against Python's str.casefold() over all of Unicode, upper then lower case
 * is not case folding: capital sharp "ẞ" folds to "ss" (lower case gives "ß"), and dotless "ı" has no
 * folding (upper case makes it "I", so "i"). Usernames are stored and returned as ingested; identity
 * indexes and lookups use this form only.
 */
export function foldSocialUsername(raw: string): string {
  let text = raw.normalize("NFC");
  if (text.includes("\u1e9e")) text = text.replaceAll("\u1e9e", "ss");
  const folded = text.includes("\u0131") ? text.split("\u0131").map(upperThenLower).join("\u0131") : upperThenLower(text);
  return folded.normalize("NFC");
}

function upperThenLower(text: string): string {
  return text.toUpperCase().toLowerCase();
}
