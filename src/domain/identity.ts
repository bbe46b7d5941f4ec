// The subpath, not "ethers": the whole library is ~450 modules and half a second of every
// command's start-up (ingest, follow), where only the checksum is needed.
import { getAddress } from "ethers/address";

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
  if (mixed) {
    try {
      if (getAddress(raw) !== raw) return null;
    } catch {
      return null;
    }
  }
  return raw.toLowerCase();
}

/**
 * The form a social username is matched by: NFC, then case-folded (upper then lower case, which also
 * folds "ß" with "SS" and final "ς" with "σ", where lower case alone would not). Usernames are stored
 * and returned as ingested; identity indexes and lookups use this form only.
 */
export function foldSocialUsername(raw: string): string {
  return raw.normalize("NFC").toUpperCase().toLowerCase().normalize("NFC");
}
