import { keccak_256 } from "@noble/hashes/sha3.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";

/**
 * A strict parser of the common shape of an EIP-4361 (Sign-In with Ethereum) message, for the fresh
 * authorizations whose parse is otherwise most of a SIWE check: the `siwe` package's ABNF parser
 * (apg-js) costs milliseconds where this costs microseconds. It recognises only a narrow subset
 * of the grammar — a plain host domain, a statement, an http(s) URI without query or fragment,
 * version 1, the times in UTC, no Request ID and no Resources — and answers null for anything else,
 * valid or not, which the caller hands to `siwe`. So it never accepts what `siwe` rejects and never
 * reads a field differently: test/auth/eip4361.test.ts holds it to `siwe` over generated messages
 * and mutations of them.
 */

/** The fields of a message, named and valued as `siwe`'s SiweMessage has them. */
export interface Eip4361Fields {
  scheme: string | undefined;
  domain: string;
  address: string;
  statement: string | undefined;
  uri: string;
  version: string;
  chainId: number;
  nonce: string;
  issuedAt: string | undefined;
  expirationTime: string | undefined;
  notBefore: string | undefined;
  requestId: string | undefined;
  resources: string[] | undefined;
}

// A host of letters, digits and hyphens in dot-separated labels: every such string is an RFC 3986
// reg-name, whichever alternative of the grammar's host the ABNF parser settles on.
const HOST = "[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*(?::[0-9]{1,5})?";
// The grammar's statement characters, exactly (printable ASCII but " % < > \ ^ ` { | }).
const STATEMENT = "[A-Za-z0-9 !#$&-;=?@\\[\\]_~]+";
const DATE = "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]{1,9})?Z";
const COMMON_SHAPE = new RegExp(
  `^(?<domain>${HOST}) wants you to sign in with your Ethereum account:\\n` +
    "(?<address>0x[0-9a-fA-F]{40})\\n" +
    `\\n(?<statement>${STATEMENT})\\n\\n` +
    `URI: (?<uri>https?://${HOST}(?:/[A-Za-z0-9._~-]*)*)\\n` +
    "Version: 1\\n" +
    "Chain ID: (?<chainId>[0-9]{1,15})\\n" +
    "Nonce: (?<nonce>[A-Za-z0-9]{8,})\\n" +
    `Issued At: (?<issuedAt>${DATE})` +
    `(?:\\nExpiration Time: (?<expirationTime>${DATE}))?` +
    `(?:\\nNot Before: (?<notBefore>${DATE}))?$`,
);
/** The date rule `siwe` checks a date-time's meaning by (a day that exists, an hour below 24, …). */
const DATE_PARTS = /^(?<date>[0-9]{4}-(?:0[1-9]|1[012])-(?:0[1-9]|[12][0-9]|3[01]))T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]/;

/** The message's fields when it has the common shape and is valid; null when `siwe` must decide. */
export function parseCommonEip4361(message: string): Eip4361Fields | null {
  const match = COMMON_SHAPE.exec(message);
  const fields = match?.groups;
  if (fields === undefined) return null;
  const { domain, address, statement, uri, chainId, nonce, issuedAt, expirationTime, notBefore } = fields as Record<string, string>;
  if (!isChecksummed(address as string)) return null;
  for (const date of [issuedAt, expirationTime, notBefore]) {
    if (date !== undefined && !isRealDate(date)) return null;
  }
  return {
    scheme: undefined,
    domain: domain as string,
    address: address as string,
    statement,
    uri: uri as string,
    version: "1",
    chainId: Number.parseInt(chainId as string, 10),
    nonce: nonce as string,
    issuedAt,
    expirationTime,
    notBefore,
    requestId: undefined,
    resources: undefined,
  };
}

/** EIP-55: each letter upper case exactly where the keccak of the lower-case hex has a nibble ≥ 8. */
function isChecksummed(address: string): boolean {
  const hex = address.slice(2);
  const lower = hex.toLowerCase();
  const hash = bytesToHex(keccak_256(utf8ToBytes(lower)));
  for (let i = 0; i < 40; i++) {
    const char = lower[i] as string;
    const expected = Number.parseInt(hash[i] as string, 16) >= 8 ? char.toUpperCase() : char;
    if (hex[i] !== expected) return false;
  }
  return true;
}

function isRealDate(value: string): boolean {
  const date = DATE_PARTS.exec(value)?.groups?.date;
  if (date === undefined) return false;
  const parsed = new Date(date);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === date;
}
