import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { G1_BASE, decodeG1, hashIdentity, pairingsEqual } from "../crypto/bls.js";
import { combineDecryptionShares, decodeDecryptionShare, verifyDecryptionShare, type DecryptionShare } from "../crypto/decryption-share.js";
import type { EncryptedPayload } from "../crypto/encryptor.js";
import { base64ToBytes, openPayload } from "../crypto/envelope-open.js";
import { decryptKey } from "../crypto/ibe.js";
import { conditionsFromJson, encryptionIdentity } from "../crypto/identity.js";
import { parsePublicKeyNetwork, resolveNodeUrl, type KeyNodeInfo, type PublicKeyNetwork } from "../crypto/key-network.js";

/**
 * The client side of encrypted results, in browsers and Node alike (`relgraph decrypt`, the examples
 * and the demo dApp all use it): ask the
 * key nodes for decryption shares with the caller's SIWE authorization, trust none of them until it
 * passes its pairing check, combine a threshold of them and open the envelope.
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
}

/** Options of fetchKeyNetwork. */
export interface FetchKeyNetworkOptions {
  fetch?: typeof fetch;
  /** Default 10 s. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** Fetches and validates the key network a relgraph server publishes at GET /key-network. */
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
    return parsePublicKeyNetwork(body);
  } catch (error) {
    throw new DecryptionError(`${url}: ${reason(error)}`, { cause: error });
  }
}

/**
 * Decrypts an EncryptedData of backend "relgraph". Asks every node at once, verifies each share that
 * comes back with e(g1, σᵢ) = e(PKᵢ, H₂(id)), stops as soon as t shares are valid, combines them and
 * checks e(g1, σ) = e(PK, H₂(id)) before decrypting. Up to n − t nodes may be down or lying.
 */
export async function decryptResult(encrypted: EncryptedPayload, options: DecryptResultOptions): Promise<Uint8Array> {
  const payload = checkPayload(encrypted);
  const network = parsePublicKeyNetwork(options.network);
  const identity = encryptionIdentity(payload.accessControlConditions, payload.dataToEncryptHash);
  const identityHash = hashIdentity(identity);
  const body = JSON.stringify({
    accessControlConditions: payload.accessControlConditions,
    dataToEncryptHash: payload.dataToEncryptHash,
    authSig: { sig: options.sig, signedMessage: options.message },
  });

  const shares = await collectShares(network, options, body, (node, share) =>
    verifyDecryptionShare(share, decodeG1(node.publicShare, "publicShare"), identityHash),
  );
  const sigma = combineDecryptionShares(shares);
  if (!pairingsEqual(G1_BASE, sigma, decodeG1(network.publicKey, "publicKey"), identityHash)) {
    throw new DecryptionError("the combined decryption key does not match the network's public key");
  }
  let key: Uint8Array;
  try {
    key = decryptKey(base64ToBytes(payload.encryptedSymmetricKey, "encryptedSymmetricKey"), sigma);
  } catch (error) {
    throw new DecryptionError(`encryptedSymmetricKey does not decrypt: ${reason(error)}`, { cause: error });
  }
  if (bytesToHex(sha256(key)) !== payload.dataToEncryptHash) {
    throw new DecryptionError("the decrypted key does not match dataToEncryptHash");
  }
  try {
    return openPayload(key, payload.encryptedString);
  } catch (error) {
    throw new DecryptionError(reason(error), { cause: error });
  } finally {
    key.fill(0);
  }
}

/** Resolves with t valid shares as soon as it has them, or rejects naming what every node did. */
function collectShares(
  network: PublicKeyNetwork,
  options: DecryptResultOptions,
  body: string,
  isValid: (node: KeyNodeInfo, share: DecryptionShare) => boolean,
): Promise<DecryptionShare[]> {
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const done = new AbortController();
  const valid: DecryptionShare[] = [];
  const failures = new Map<number, string>();

  return new Promise((resolve, reject) => {
    let pending = network.nodes.length;
    const settle = () => {
      if (done.signal.aborted) return;
      if (valid.length >= network.threshold) {
        done.abort();
        resolve(valid.slice(0, network.threshold));
      } else if (pending === 0) {
        done.abort();
        reject(
          new DecryptionError(
            `got ${valid.length} valid decryption share(s) from ${network.nodes.length} key node(s); ` +
              `${network.threshold} are needed. ` +
              [...failures].sort(([a], [b]) => a - b).map(([index, why]) => `node ${index}: ${why}`).join("; "),
          ),
        );
      }
    };
    for (const node of network.nodes) {
      requestShare(doFetch, node, options.serverUrl, body, timeoutMs, done.signal)
        .then((share) => {
          if (share.index !== node.index) throw new Error(`answered with the share index ${share.index}`);
          if (!isValid(node, share)) throw new Error("sent a share that fails its pairing check");
          valid.push(share);
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
): Promise<DecryptionShare> {
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
    return decodeDecryptionShare(answer?.signatureShare);
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
