import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { FetchRequest, Interface, JsonRpcProvider, getBytes, hashMessage, isError, keccak256, verifyMessage } from "ethers";
import { SiweMessage } from "siwe";
import { parseCommonEip4361, type Eip4361Fields } from "./eip4361.js";
import { AuthorizationExpiredError, InvalidAuthorizationError, UpstreamUnavailableError } from "../domain/errors.js";
import { PROFILE_STATEMENT, RELATIONSHIP_GRAPH_STATEMENT } from "../domain/statements.js";

export { PROFILE_STATEMENT, RELATIONSHIP_GRAPH_STATEMENT };
/** Every statement relgraph issues authorizations under: what a key node accepts. */
export const RELGRAPH_STATEMENTS: readonly string[] = [PROFILE_STATEMENT, RELATIONSHIP_GRAPH_STATEMENT];

/**
 * How far a client's clock may run ahead of ours: `issuedAt` and `notBefore` are accepted up to this
 * much in the future, so that a message signed "now" on a slightly fast clock is not refused.
 * `expirationTime` gets no such grace: an expired authorization is never accepted.
 */
export const CLOCK_SKEW_SECONDS = 60;

/**
 * Longest `message` parsed. relgraph's messages are a few hundred bytes, and its statements leave no
 * room for ReCaps; the ABNF parser runs before the signature is checked and costs about linearly in
 * the length, so at 16 KiB one unsigned request to a key node cost about fifteen normal ones, and
 * their rate limits bounded nothing.
 */
export const MAX_MESSAGE_LENGTH = 4 * 1024;
/** Budget for each EIP-1271 round trip to ETH_RPC_URL. */
const ETH_RPC_TIMEOUT_MS = 5_000;
/** EIP-1271's "valid signature" return value: bytes4(keccak256("isValidSignature(bytes32,bytes)")). */
const EIP1271_MAGIC_VALUE = "0x1626ba7e";
const EIP1271 = new Interface(["function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)"]);

/** Options of createSiweVerifier. */
export interface SiweVerifierOptions {
  /** Accepted SIWE `domain` values (SIWE_DOMAINS); empty accepts any domain. Compared case-insensitively. */
  domains: readonly string[];
  /** How old `issuedAt` may be (SIWE_MAX_AGE_SECONDS). */
  maxAgeSeconds: number;
  /** JSON-RPC endpoint for EIP-1271 contract-wallet signatures (ETH_RPC_URL); null/absent: EOAs only. */
  ethRpcUrl?: string | null;
  /** The clock; injectable for tests. */
  now?: () => Date;
  /** Verified authorizations remembered at once (each until it expires); 0 checks every signature anew. */
  cacheSize?: number;
}

/** Default of SiweVerifierOptions.cacheSize: about a megabyte of entries. */
export const DEFAULT_AUTHORIZATION_CACHE_SIZE = 10_000;

/** A SIWE authorization that passed every check. */
export interface VerifiedAuthorization {
  /** The signer (the message's address), lowercase. */
  address: string;
  domain: string;
  statement: string;
  issuedAt: Date;
  expirationTime: Date | null;
  /**
   * Names this authorization among all others: a hash of its signature and message, so two
   * authorizations never share one. Answers under one authorization may share a payload key.
   */
  id: string;
  /** When the authorization stops being accepted: its expirationTime or the end of its maximum age, whichever is first. */
  validUntil: Date;
}

/** Checks a `sig`/`message` pair; the one SIWE check shared by REST, gRPC and the key nodes. */
export interface SiweVerifier {
  /**
   * Resolves with the authorization, or rejects with InvalidAuthorizationError (10101),
   * AuthorizationExpiredError (10100) or, when ETH_RPC_URL cannot be reached, UpstreamUnavailableError.
   * `statement: null` accepts any statement.
   */
  verify(input: { sig: string; message: string; statement: string | readonly string[] | null }): Promise<VerifiedAuthorization>;
}

/**
 * Creates the verifier. The signature is checked before any time field, so that a correctly signed
 * but expired message reports 10100 while a wrongly signed one reports 10101 whatever its times.
 */
export function createSiweVerifier(options: SiweVerifierOptions): SiweVerifier {
  const domains = new Set(options.domains.map((domain) => domain.toLowerCase()));
  const maxAgeMs = options.maxAgeSeconds * 1000;
  const skewMs = CLOCK_SKEW_SECONDS * 1000;
  const now = options.now ?? (() => new Date());
  const ethRpcUrl = options.ethRpcUrl ?? null;
  const codeCache = createCodeCache();

  const verified = createVerifiedCache(options.cacheSize ?? DEFAULT_AUTHORIZATION_CACHE_SIZE);

  /** The checks every use makes, cached or not: the statement asked for and the time limits. */
  const admit = (entry: CheckedAuthorization, statement: string | readonly string[] | null): VerifiedAuthorization => {
    const statements = statement === null ? null : typeof statement === "string" ? [statement] : statement;
    if (statements !== null && !statements.includes(entry.statement)) {
      throw new InvalidAuthorizationError(`message statement must be ${statements.map((s) => `"${s}"`).join(" or ")}`);
    }
    checkTimes(entry, now().getTime());
    const { notBefore: _notBefore, ...authorization } = entry;
    return authorization;
  };

  const checkTimes = (entry: CheckedAuthorization, at: number) => {
    if (entry.expirationTime !== null && at >= entry.expirationTime.getTime()) {
      throw new AuthorizationExpiredError(`message expired at ${entry.expirationTime.toISOString()}`);
    }
    if (entry.notBefore !== null && entry.notBefore.getTime() > at + skewMs) {
      throw new AuthorizationExpiredError(`message is not valid before ${entry.notBefore.toISOString()}`);
    }
    if (entry.issuedAt.getTime() > at + skewMs) {
      throw new AuthorizationExpiredError(`message Issued At ${entry.issuedAt.toISOString()} is in the future`);
    }
    if (at - entry.issuedAt.getTime() > maxAgeMs) {
      throw new AuthorizationExpiredError(`message was issued more than ${options.maxAgeSeconds} seconds ago; sign a new one`);
    }
  };

  return {
    async verify({ sig, message, statement }) {
      if (typeof sig !== "string" || sig === "") throw new InvalidAuthorizationError("sig is required");
      if (typeof message !== "string" || message === "") throw new InvalidAuthorizationError("message is required");
      if (!/^0x[0-9a-fA-F]{130}$/.test(sig)) {
        throw new InvalidAuthorizationError("sig must be a 65-byte signature: 0x followed by 130 hex digits");
      }
      if (message.length > MAX_MESSAGE_LENGTH) {
        throw new InvalidAuthorizationError(`message is longer than ${MAX_MESSAGE_LENGTH} characters`);
      }
      // sig has a fixed length, so sig ‖ message names exactly one pair.
      const id = createHash("sha256").update(sig.toLowerCase()).update(message).digest("hex");
      const known = verified.get(id, now().getTime());
      if (known !== undefined) return admit(known, statement);

      const siwe = parse(message);
      const statements = statement === null ? null : typeof statement === "string" ? [statement] : statement;
      if (statements !== null && !statements.includes(siwe.statement ?? "")) {
        throw new InvalidAuthorizationError(`message statement must be ${statements.map((s) => `"${s}"`).join(" or ")}`);
      }
      if (domains.size > 0 && !domains.has(siwe.domain.toLowerCase())) {
        throw new InvalidAuthorizationError(`message domain "${siwe.domain}" is not accepted`);
      }
      const issuedAt = date(siwe.issuedAt, "Issued At");
      const expirationTime = siwe.expirationTime === undefined ? null : date(siwe.expirationTime, "Expiration Time");
      const notBefore = siwe.notBefore === undefined ? null : date(siwe.notBefore, "Not Before");

      let byContract = false;
      if (!signedByEoa(message, sig, siwe.address)) {
        if (ethRpcUrl === null || !(await signedByContract(ethRpcUrl, message, sig, siwe, codeCache))) {
          throw new InvalidAuthorizationError(`sig is not a signature of message by ${siwe.address}`);
        }
        byContract = true;
      }
      const ageLimit = issuedAt.getTime() + maxAgeMs;
      const entry: CheckedAuthorization = {
        address: siwe.address.toLowerCase(),
        domain: siwe.domain,
        statement: siwe.statement ?? "",
        issuedAt,
        expirationTime,
        notBefore,
        id,
        validUntil: new Date(expirationTime === null ? ageLimit : Math.min(ageLimit, expirationTime.getTime())),
      };
      checkTimes(entry, now().getTime());
      // A contract wallet may stop accepting a signature at any block, so only EOA signatures, which
      // cannot be withdrawn, are remembered.
      if (!byContract) verified.set(entry);
      return admit(entry, statement);
    },
  };
}

/** What a signature check establishes, remembered for later uses of the same authorization. */
interface CheckedAuthorization extends VerifiedAuthorization {
  notBefore: Date | null;
}

/**
 * Verified authorizations by id, each until its validUntil; when full, the oldest entry makes room.
 * A hit skips the parse and the signature recovery, which are nearly all of a check's cost.
 */
function createVerifiedCache(size: number) {
  const entries = new Map<string, CheckedAuthorization>();
  return {
    get(id: string, at: number): CheckedAuthorization | undefined {
      const entry = entries.get(id);
      if (entry !== undefined && entry.validUntil.getTime() <= at) {
        entries.delete(id);
        return undefined;
      }
      return entry;
    },
    set(entry: CheckedAuthorization) {
      if (size <= 0) return;
      if (entries.size >= size) {
        const oldest = entries.keys().next();
        if (!oldest.done) entries.delete(oldest.value);
      }
      entries.set(entry.id, entry);
    },
  };
}

/** Whether an address holds contract code, per chain, as last seen. */
interface CodeCache {
  get(key: string): boolean | undefined;
  set(key: string, hasCode: boolean): void;
}

/** Addresses whose code status is remembered at once; beyond that the oldest makes room. */
const MAX_CODE_CACHE = 10_000;
/**
 * How long a code status is trusted. An EOA can gain code (a counterfactual wallet deployed later, an
 * EIP-7702 delegation), so "no code" is rechecked after 10 minutes; contracts rarely lose theirs.
 */
const NO_CODE_TTL_MS = 10 * 60_000;
const CODE_TTL_MS = 60 * 60_000;

function createCodeCache(now: () => number = Date.now): CodeCache {
  const entries = new Map<string, { hasCode: boolean; until: number }>();
  return {
    get(key) {
      const entry = entries.get(key);
      if (entry === undefined) return undefined;
      if (entry.until > now()) return entry.hasCode;
      entries.delete(key);
      return undefined;
    },
    set(key, hasCode) {
      if (entries.size >= MAX_CODE_CACHE) {
        const oldest = entries.keys().next();
        if (!oldest.done) entries.delete(oldest.value);
      }
      entries.set(key, { hasCode, until: now() + (hasCode ? CODE_TTL_MS : NO_CODE_TTL_MS) });
    },
  };
}

/**
 * Parses an EIP-4361 text: the common shape by eip4361.ts, anything else by the `siwe` package's ABNF
 * parser, turning its failure into 10101 with the parser's one-line reason when it has one.
 */
function parse(message: string): Eip4361Fields | SiweMessage {
  if (message.length > MAX_MESSAGE_LENGTH) {
    throw new InvalidAuthorizationError(`message is longer than ${MAX_MESSAGE_LENGTH} characters`);
  }
  const common = parseCommonEip4361(message);
  if (common !== null) return common;
  try {
    return new SiweMessage(message);
  } catch (error) {
    // The parser's first line reads like "line 2: invalid EIP-55 address - 0x…"; the rest is a parser state dump.
    const first = error instanceof Error ? error.message.split("\n", 1)[0] : undefined;
    const reason = first !== undefined && /^line \d+: .{1,160}$/.test(first) ? `: ${first}` : "";
    throw new InvalidAuthorizationError(`message is not a valid EIP-4361 (Sign-In with Ethereum) message${reason}`);
  }
}

function date(value: string | undefined, field: string): Date {
  const parsed = value === undefined ? Number.NaN : Date.parse(value);
  if (Number.isNaN(parsed)) throw new InvalidAuthorizationError(`message ${field} is missing or not a valid date`);
  return new Date(parsed);
}

/**
 * libsecp256k1's public-key recovery (the `secp256k1` package: native where its prebuilt binary loads,
 * else its own JavaScript). Recovery in ethers' pure JavaScript was most of a signature check's cost.
 */
const secp256k1 = createRequire(import.meta.url)("secp256k1") as {
  ecdsaRecover(signature: Uint8Array, recoveryId: number, digest: Uint8Array, compressed: boolean): Uint8Array;
};

/** EIP-191 recovery over the exact text received, which is what the wallet signed. */
function signedByEoa(message: string, sig: string, address: string): boolean {
  try {
    const bytes = getBytes(sig);
    const v = bytes[64] as number;
    const recoveryId = v >= 27 ? v - 27 : v;
    // ethers refuses an s with its top bit set, which libsecp256k1 would recover from; refused alike.
    // Any v but 27/28 (or 0/1) is left to ethers, which knows the rarer encodings.
    if (recoveryId !== 0 && recoveryId !== 1) return verifyMessage(message, sig).toLowerCase() === address.toLowerCase();
    if (((bytes[32] as number) & 0x80) !== 0) return false;
    const publicKey = secp256k1.ecdsaRecover(bytes.subarray(0, 64), recoveryId, getBytes(hashMessage(message)), false);
    return `0x${keccak256(publicKey.subarray(1)).slice(-40)}` === address.toLowerCase();
  } catch {
    // Well-formed hex that is no valid secp256k1 signature (bad v, r or s) may still satisfy a contract wallet.
    return false;
  }
}

/**
 * EIP-1271: asks the contract at the message's address whether it accepts `sig` for the message's
 * EIP-191 hash. Per EIP-4361 contract accounts are resolved on the message's Chain ID, so a message
 * for another chain than ETH_RPC_URL serves is not valid rather than checked on the wrong chain.
 * A revert or a non-contract address means "not valid"; any other failure is the upstream's. Only an
 * address that holds code is asked (eth_getCode first, its answer cached), so a bad EOA signature
 * costs one call the first time its address is seen, and none after.
 */
async function signedByContract(url: string, message: string, sig: string, siwe: Eip4361Fields | SiweMessage, codeCache: CodeCache): Promise<boolean> {
  if (!Number.isSafeInteger(siwe.chainId) || siwe.chainId < 1) return false;
  const key = `${siwe.chainId}:${siwe.address.toLowerCase()}`;
  // An address known to hold no code is an EOA: its bad signature is simply bad, with no call.
  if (codeCache.get(key) === false) return false;
  const request = new FetchRequest(url);
  request.timeout = ETH_RPC_TIMEOUT_MS;
  // A static network stops ethers from probing the chain in a retry loop when the endpoint is down.
  const provider = new JsonRpcProvider(request, siwe.chainId, { staticNetwork: true, batchMaxCount: 1 });
  try {
    if (codeCache.get(key) === undefined) {
      const hasCode = (await provider.getCode(siwe.address)) !== "0x";
      codeCache.set(key, hasCode);
      if (!hasCode) return false;
    }
    const data = EIP1271.encodeFunctionData("isValidSignature", [hashMessage(message), sig]);
    const [chainId, result] = await Promise.all([
      provider.send("eth_chainId", []) as Promise<unknown>,
      provider.call({ to: siwe.address, data }).catch((error: unknown) => {
        if (isError(error, "CALL_EXCEPTION")) return "0x";
        throw error;
      }),
    ]);
    if (typeof chainId !== "string" || BigInt(chainId) !== BigInt(siwe.chainId)) return false;
    // bytes4 is returned left-aligned in one 32-byte word.
    return result.length === 66 && result.slice(0, 10).toLowerCase() === EIP1271_MAGIC_VALUE;
  } catch (error) {
    throw new UpstreamUnavailableError(
      "the Ethereum RPC endpoint used to verify contract-wallet signatures is unavailable",
      { cause: upstreamFailure(error) },
    );
  } finally {
    provider.destroy();
  }
}

/**
 * What an operator needs of a failed JSON-RPC call (ethers' error code and short message), without
 * the rest: ethers' error carries the request it failed on, and an eth_call's data holds the user's
 * signature, which is logged with the cause of a 50300.
 */
function upstreamFailure(error: unknown): Error {
  if (!(error instanceof Error)) return new Error("unknown failure");
  const { code, shortMessage } = error as Error & { code?: unknown; shortMessage?: unknown };
  const summary = typeof shortMessage === "string" ? shortMessage : error.name;
  return new Error(typeof code === "string" ? `${code}: ${summary}` : summary);
}
