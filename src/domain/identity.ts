// Keccak alone, not ethers (not even its address subpath, slow to load): every `relgraph ingest`
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
  if (mixed && toChecksumAddress(raw) !== raw) return null;
  return raw.toLowerCase();
}

/**
 * An address in its EIP-55 mixed-case form: a letter is upper case where the same nibble of the
 * Keccak-256 hash of the lowercase hex digits (as ASCII) is 8 or more. Throws on anything that is
 * not 20 bytes of hex. The browser client writes SIWE messages with it too, so it uses no Node API.
 */
export function toChecksumAddress(address: string): string {
  if (!ADDRESS_PATTERN.test(address)) throw new Error(`not an Ethereum address: ${address}`);
  const lower = address.slice(2).toLowerCase();
  const hash = keccak_256(new TextEncoder().encode(lower));
  let spelled = "0x";
  for (let i = 0; i < lower.length; i++) {
    const nibble = i % 2 === 0 ? hash[i >> 1]! >> 4 : hash[i >> 1]! & 0x0f;
    spelled += nibble >= 8 ? lower[i]!.toUpperCase() : lower[i]!;
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
