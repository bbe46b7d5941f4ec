import { toChecksumAddress } from "../domain/identity.js";
import { PROFILE_STATEMENT, RELATIONSHIP_GRAPH_STATEMENT } from "../domain/statements.js";

/**
 * EIP-4361 ("Sign-In with Ethereum") messages for relgraph's two encrypted operations, written in
 * the exact text form the standard fixes, so that any wallet can sign them and the server's SIWE
 * parser reads them back. Written by hand rather than with the siwe package, which needs ethers.
 */

/** The two operations that take an authorization, and the statement each requires. */
export const STATEMENTS = {
  profile: PROFILE_STATEMENT,
  relationshipGraph: RELATIONSHIP_GRAPH_STATEMENT,
} as const;

/** An operation that needs an authorization. */
export type AuthorizedOperation = keyof typeof STATEMENTS;

/** Options of createSiweMessage. */
export interface SiweMessageOptions {
  /** The operation to authorize; it picks the statement. */
  operation: AuthorizedOperation;
  /** The signer's address, in any letter case; the message carries its EIP-55 form. */
  address: string;
  /** The dApp's host (RFC 3986 authority), e.g. `location.host`; servers may restrict it (SIWE_DOMAINS). */
  domain: string;
  /** The URI the authorization is for, e.g. `location.origin`. */
  uri: string;
  /** EIP-155 chain id; default 1. */
  chainId?: number;
  /** How long the authorization stays valid; default one hour. It may be reused for paging until then. */
  validForSeconds?: number;
  /** Default: 16 random alphanumerics. */
  nonce?: string;
  /** The signing time; default now. */
  issuedAt?: Date;
}

const DEFAULT_VALIDITY_SECONDS = 3600;
const NONCE_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/** The EIP-4361 text to sign for `operation`. */
export function createSiweMessage(options: SiweMessageOptions): string {
  const issuedAt = options.issuedAt ?? new Date();
  const expiresAt = new Date(issuedAt.getTime() + (options.validForSeconds ?? DEFAULT_VALIDITY_SECONDS) * 1000);
  if (/[\r\n]/.test(options.domain) || /[\r\n]/.test(options.uri)) throw new Error("domain and uri must be one line each");
  return [
    `${options.domain} wants you to sign in with your Ethereum account:`,
    toChecksumAddress(options.address),
    "",
    STATEMENTS[options.operation],
    "",
    `URI: ${options.uri}`,
    "Version: 1",
    `Chain ID: ${options.chainId ?? 1}`,
    `Nonce: ${options.nonce ?? randomNonce()}`,
    `Issued At: ${issuedAt.toISOString()}`,
    `Expiration Time: ${expiresAt.toISOString()}`,
  ].join("\n");
}

function randomNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => NONCE_ALPHABET[byte % NONCE_ALPHABET.length]).join("");
}
