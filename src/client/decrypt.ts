import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { decodeG1Wasm, hashIdentityWasm, loadWasmBls, type WasmG2 } from "../crypto/bls-wasm.js";
import {
  combineDecryptionSharesWasm,
  decodeDecryptionShareWasm,
  verifyDecryptionShareWasm,
  type WasmDecryptionShare,
} from "../crypto/decryption-share.js";
import type { EncryptedPayload } from "../crypto/encryptor.js";
import { base64ToBytes, openPayload } from "../crypto/envelope-open.js";
import { WASM_IBE, decryptKey } from "../crypto/ibe.js";
import { conditionsFromJson, encryptionIdentity } from "../crypto/identity.js";
import { parsePublicKeyNetwork, resolveNodeUrl, type KeyNodeInfo, type PublicKeyNetwork } from "../crypto/key-network.js";

/**
 * The client side of encrypted results, in browsers and Node alike (`relgraph decrypt`, the examples
 * and the demo dApp all use it): ask the key nodes for decryption shares with the caller's SIWE
 * authorization, combine a threshold of them, trust the result only once it passes its pairing check,
 * and open the envelope. The server encrypts every answer under one authorization with one payload
 * key, so a key decrypted once opens that authorization's later answers with AES alone (PayloadKeyCache).
 * The pairing work runs in WebAssembly (bls-wasm.ts).
 */

/** Thrown when an encrypted result cannot be decrypted; the message says why. */
export class DecryptionError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "DecryptionError";
  }
}

/** Options of decryptResult. */
export interface DecryptResultOptions {
  /** The key network, e.g. from fetchKeyNetwork(). */
  network: PublicKeyNetwork;
  /** The relgraph server's URL; relative node URLs (the development network's) resolve against it. */
  serverUrl?: string;
  /** The authorization that was sent with the query: `sig` and the signed EIP-4361 `message`. */
  sig: string;
  message: string;
  fetch?: typeof fetch;
  /** Budget for each node's answer. Default 10 s. */
  timeoutMs?: number;
  /**
   * Where payload keys decrypted before are kept, and this one is put; without it every call runs a
   * threshold decryption. createPayloadKeyCache() keeps them in memory only.
   */
  keyCache?: PayloadKeyCache;
}

/**
 * Decrypted payload keys by dataToEncryptHash (SHA-256 of the key, so a key is only ever found for
 * answers sealed under it). An implementation that writes keys anywhere lasting is the caller's
 * choice: a key opens every answer of its authorization.
 */
export interface PayloadKeyCache {
  get(dataToEncryptHash: string): Uint8Array | undefined;
  /** Keeps a copy of `key` until `expiresAt` (ms since the epoch), the end of its authorization. */
  set(dataToEncryptHash: string, key: Uint8Array, expiresAt: number): void;
}

/** Options of createPayloadKeyCache. */
export interface PayloadKeyCacheOptions {
  /** Keys kept at once; beyond that the oldest is dropped. Default 256. */
  maxEntries?: number;
  now?: () => number;
}

/** An in-memory PayloadKeyCache: bounded, each key dropped (and wiped) when its authorization expires. */
export function createPayloadKeyCache(options: PayloadKeyCacheOptions = {}): PayloadKeyCache {
  const maxEntries = options.maxEntries ?? 256;
  const now = options.now ?? Date.now;
  const entries = new Map<string, { key: Uint8Array; expiresAt: number }>();
  const drop = (hash: string) => {
    entries.get(hash)?.key.fill(0);
    entries.delete(hash);
  };
  return {
    get(hash) {
      const entry = entries.get(hash);
      if (entry === undefined) return undefined;
      if (entry.expiresAt <= now()) {
        drop(hash);
        return undefined;
      }
      return entry.key;
    },
    set(hash, key, expiresAt) {
      if (maxEntries <= 0 || expiresAt <= now()) return;
      drop(hash);
      while (entries.size >= maxEntries) drop(entries.keys().next().value as string);
      entries.set(hash, { key: key.slice(), expiresAt });
    },
  };
}

/**
 * Starts compiling the WebAssembly that decryption's pairings run in, so that the first decryption
 * need not wait for it: a page calls it at load, while the user reads and connects the wallet. The
 * returned promise rejects if the module cannot load; the first decryption reports that too.
 */
export function prepareDecryption(): Promise<void> {
  return loadWasmBls();
}

/** How long a key is kept when its authorization names no Expiration Time. */
const KEY_LIFETIME_WITHOUT_EXPIRY_MS = 3600_000;

/** Options of fetchKeyNetwork. */
export interface FetchKeyNetworkOptions {
  fetch?: typeof fetch;
  /** Default 10 s. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * Networks fetchKeyNetwork validated and froze. Validation decodes and interpolates every public share
 * in pure JavaScript, tens of milliseconds: decryptResult repeats it only for networks from elsewhere.
 */
const checkedNetworks = new WeakSet<PublicKeyNetwork>();

/** Fetches and validates the key network a relgraph server publishes at GET /key-network; the result is frozen. */
export async function fetchKeyNetwork(serverUrl: string, options: FetchKeyNetworkOptions = {}): Promise<PublicKeyNetwork> {
  const doFetch = options.fetch ?? fetch;
  const url = new URL("key-network", withSlash(serverUrl));
  let body: unknown;
  try {
    const response = await doFetch(url, { signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS) });
    if (!response.ok) throw new DecryptionError(`GET ${url} answered HTTP ${response.status}`);
    body = await response.json();
  } catch (error) {
    if (error instanceof DecryptionError) throw error;
    throw new DecryptionError(`cannot fetch the key network from ${url}: ${reason(error)}`, { cause: error });
  }
  try {
    const network = parsePublicKeyNetwork(body);
    for (const node of network.nodes) Object.freeze(node);
    Object.freeze(network.nodes);
    checkedNetworks.add(Object.freeze(network));
    return network;
  } catch (error) {
    throw new DecryptionError(`${url}: ${reason(error)}`, { cause: error });
  }
}

/**
 * Decrypts an EncryptedData of backend "relgraph". With a key cache that holds its payload key, that is
 * AES alone. Otherwise it asks every node at once, combines the first t shares that arrive and
 * decrypts with the combined σ: the IBE decryption itself refuses a wrong σ (the Fujisaki–Okamoto
 * check recomputes r from α and M and compares r·g1 with U), so a pairing check of σ beforehand would
 * only repeat it. Only when that decryption fails does it check each share with
 * e(g1, σᵢ) = e(PKᵢ, H₂(id)), drop the bad ones and wait for more. Up to n − t nodes may be down, slow
 * or lying; a lying node can make decryption fail, never succeed with another plaintext.
 */
export async function decryptResult(encrypted: EncryptedPayload, options: DecryptResultOptions): Promise<Uint8Array> {
  const payload = checkPayload(encrypted);
  const cached = options.keyCache?.get(payload.dataToEncryptHash);
  if (cached !== undefined && bytesToHex(sha256(cached)) === payload.dataToEncryptHash) return open(cached, payload);

  const network = checkedNetworks.has(options.network) ? options.network : parsePublicKeyNetwork(options.network);
  const ciphertext = base64ToBytes(payload.encryptedSymmetricKey, "encryptedSymmetricKey");
  const body = JSON.stringify({
    accessControlConditions: payload.accessControlConditions,
    dataToEncryptHash: payload.dataToEncryptHash,
    authSig: { sig: options.sig, signedMessage: options.message },
  });
  // The shares are on their way while the WebAssembly finishes loading (if it has not yet).
  const shares = collectKey(network, options, body, {
    combine: (received) => {
      try {
        return decryptKey(ciphertext, combineDecryptionSharesWasm(received), WASM_IBE);
      } catch (error) {
        return new DecryptionError(`encryptedSymmetricKey does not decrypt: ${reason(error)}`, { cause: error });
      }
    },
    isValid: (() => {
      // H₂(id) is only needed to find a bad share, after a failed decryption.
      let identityHash: WasmG2 | undefined;
      return (node: KeyNodeInfo, share: WasmDecryptionShare) => {
        identityHash ??= hashIdentityWasm(encryptionIdentity(payload.accessControlConditions, payload.dataToEncryptHash));
        return verifyDecryptionShareWasm(share, decodeG1Wasm(hexToBytes(node.publicShare), "publicShare"), identityHash);
      };
    })(),
  }, loadWasmBls());
  const key = await shares;
  if (bytesToHex(sha256(key)) !== payload.dataToEncryptHash) {
    key.fill(0);
    throw new DecryptionError("the decrypted key does not match dataToEncryptHash");
  }
  try {
    const plaintext = open(key, payload);
    options.keyCache?.set(payload.dataToEncryptHash, key, keyExpiry(options.message));
    return plaintext;
  } finally {
    key.fill(0);
  }
}

function open(key: Uint8Array, payload: EncryptedPayload): Uint8Array {
  try {
    return openPayload(key, payload.encryptedString);
  } catch (error) {
    throw new DecryptionError(reason(error), { cause: error });
  }
}

/** The end of the authorization's lifetime, as its EIP-4361 text states it. */
function keyExpiry(message: string): number {
  const stated = /^Expiration Time: (.+)$/m.exec(message)?.[1];
  const at = stated === undefined ? Number.NaN : Date.parse(stated);
  return Number.isNaN(at) ? Date.now() + KEY_LIFETIME_WITHOUT_EXPIRY_MS : at;
}

/** What collectKey does with shares: decrypt with t of them combined, or check one. */
interface ShareChecks<Key> {
  /** What t shares combined decrypt to, or why they do not. */
  combine(shares: WasmDecryptionShare[]): Key | DecryptionError;
  isValid(node: KeyNodeInfo, share: WasmDecryptionShare): boolean;
}

/**
 * Resolves with what t shares combine to as soon as they decrypt, or rejects naming what every node
 * did. While no combination has failed, shares are trusted until combined (the decryption checks
 * them all at once); after one has, every share is checked on its own before it is used, and a
 * failure of t checked shares is the ciphertext's. Shares are decoded, and combined, only once
 * `ready` (the WebAssembly) has settled; the requests go out at once.
 */
function collectKey<Key>(
  network: PublicKeyNetwork,
  options: DecryptResultOptions,
  body: string,
  checks: ShareChecks<Key>,
  ready: Promise<void>,
): Promise<Key> {
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const done = new AbortController();
  const nodes = new Map(network.nodes.map((node) => [node.index, node]));
  let received: WasmDecryptionShare[] = [];
  let checkEach = false;
  const failures = new Map<number, string>();

  return new Promise((resolve, reject) => {
    let pending = network.nodes.length;
    const finish = (error: unknown, key?: Key) => {
      done.abort();
      if (error === undefined) resolve(key as Key);
      else reject(error);
    };
    const tryCombine = () => {
      if (received.length < network.threshold) return;
      const used = received.slice(0, network.threshold);
      const key = checks.combine(used);
      if (!(key instanceof DecryptionError)) return finish(undefined, key);
      if (checkEach) return finish(key);
      // Some share is bad (or the ciphertext is): check each, drop the bad ones, wait for others.
      checkEach = true;
      received = received.filter((share) => {
        if (checks.isValid(nodes.get(share.index) as KeyNodeInfo, share)) return true;
        failures.set(share.index, "sent a share that fails its pairing check");
        return false;
      });
      if (used.every((share) => received.includes(share))) return finish(key);
      tryCombine();
    };
    const settle = () => {
      if (done.signal.aborted) return;
      tryCombine();
      if (!done.signal.aborted && pending === 0) {
        finish(
          new DecryptionError(
            `got ${received.length} valid decryption share(s) from ${network.nodes.length} key node(s); ` +
              `${network.threshold} are needed. ` +
              [...failures].sort(([a], [b]) => a - b).map(([index, why]) => `node ${index}: ${why}`).join("; "),
          ),
        );
      }
    };
    const loaded = ready.then(
      () => true,
      (error: unknown) => {
        finish(new DecryptionError(`the pairing library did not load: ${reason(error)}`, { cause: error }));
        return false;
      },
    );
    for (const node of network.nodes) {
      requestShare(doFetch, node, options.serverUrl, body, timeoutMs, done.signal)
        .then(async (answer) => {
          if (!(await loaded)) return;
          const share = decodeDecryptionShareWasm(answer);
          if (share.index !== node.index) throw new Error(`answered with the share index ${share.index}`);
          if (checkEach && !checks.isValid(node, share)) throw new Error("sent a share that fails its pairing check");
          received.push(share);
        })
        .catch((error: unknown) => {
          if (!done.signal.aborted) failures.set(node.index, reason(error));
        })
        .finally(() => {
          pending--;
          settle();
        });
    }
  });
}

async function requestShare(
  doFetch: typeof fetch,
  node: KeyNodeInfo,
  serverUrl: string | undefined,
  body: string,
  timeoutMs: number,
  done: AbortSignal,
): Promise<unknown> {
  const url = new URL("v1/decryption-share", withSlash(resolveNodeUrl(node, serverUrl)));
  const abort = new AbortController();
  const onDone = () => abort.abort();
  done.addEventListener("abort", onDone, { once: true });
  const timer = setTimeout(() => abort.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  try {
    const response = await doFetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      signal: abort.signal,
    });
    const answer = (await response.json().catch(() => null)) as Record<string, unknown> | null;
    if (!response.ok) {
      const message = typeof answer?.message === "string" ? `: ${answer.message}` : "";
      throw new Error(`refused with HTTP ${response.status}${message}`);
    }
    return answer?.signatureShare;
  } catch (error) {
    if (abort.signal.aborted && abort.signal.reason instanceof Error) throw abort.signal.reason;
    throw error;
  } finally {
    clearTimeout(timer);
    done.removeEventListener("abort", onDone);
  }
}

/** Checks the fields decryption relies on, so that a malformed input fails with a clear message. */
function checkPayload(encrypted: EncryptedPayload): EncryptedPayload {
  const value = encrypted as unknown as Record<string, unknown>;
  if (typeof value !== "object" || value === null) throw new DecryptionError("the encrypted data must be an object");
  if (value.backend !== undefined && value.backend !== "relgraph") {
    throw new DecryptionError(
      `this data was encrypted by the "${String(value.backend)}" backend; decrypt it with that network's SDK`,
    );
  }
  for (const field of ["encryptedString", "encryptedSymmetricKey", "dataToEncryptHash"]) {
    if (typeof value[field] !== "string" || value[field] === "") throw new DecryptionError(`${field} is missing`);
  }
  if (!/^[0-9a-f]{64}$/.test(value.dataToEncryptHash as string)) {
    throw new DecryptionError("dataToEncryptHash must be 64 lowercase hex digits");
  }
  const accessControlConditions = conditionsFromJson(value.accessControlConditions);
  if (accessControlConditions === null || accessControlConditions.length === 0) {
    throw new DecryptionError("accessControlConditions is missing or not a list of access-control conditions");
  }
  return { ...encrypted, accessControlConditions };
}

function withSlash(url: string): string {
  return url.endsWith("/") ? url : `${url}/`;
}

function reason(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}
