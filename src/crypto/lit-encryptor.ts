import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { ConfigError } from "../config/config.js";
import { UpstreamUnavailableError } from "../domain/errors.js";
import type { EncryptedPayload, ResultEncryptor } from "./encryptor.js";
import { newPayloadKey, sealPayload } from "./envelope.js";
import { CONDITIONS_CHAIN, onlySignerConditions, type AccessControlCondition } from "./identity.js";

/**
 * The optional Lit Protocol backend (ENCRYPTION_BACKEND=lit): the same envelope as the default
 * backend, but the AES key is encrypted to Lit's network key, so Lit's nodes (not relgraph's) decide
 * who may decrypt. Encryption needs only the network key that connect() fetches; clients decrypt
 * with Lit's SDK. @lit-protocol/lit-node-client (v7) is not a dependency: it is large and pins old
 * ethers/siwe, so it is loaded only when this backend is selected.
 */

/** The part of Lit's LitNodeClient (v7) this backend uses. */
export interface LitClient {
  connect(): Promise<unknown>;
  encrypt(params: {
    accessControlConditions: AccessControlCondition[];
    dataToEncrypt: Uint8Array;
  }): Promise<{ ciphertext: string; dataToEncryptHash: string }>;
  disconnect(): Promise<unknown>;
}

/** Options of createLitEncryptor. */
export interface LitEncryptorOptions {
  /** LIT_NETWORK: "datil-dev", "datil-test" or "datil". */
  network: string;
  /** Bound on each connection attempt and each encryption. Default 15 s. */
  timeoutMs?: number;
  /** Builds the client; by default a LitNodeClient from @lit-protocol/lit-node-client. Tests inject a fake. */
  createClient?: (network: string, timeoutMs: number) => LitClient | Promise<LitClient>;
}

const LIT_PACKAGE = "@lit-protocol/lit-node-client";
const DEFAULT_TIMEOUT_MS = 15_000;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * Creates the Lit backend. Fails at once with a ConfigError when the Lit SDK is not installed. The
 * connection is opened in the background and retried by the next request when it failed; a request
 * that cannot get a connected client within the timeout fails with UpstreamUnavailableError (50300).
 */
export async function createLitEncryptor(options: LitEncryptorOptions): Promise<ResultEncryptor> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const createClient = options.createClient ?? (await loadLitSdk());
  const client = await createClient(options.network, timeoutMs);
  let connected: Promise<void> | null = null;

  const connect = (): Promise<void> => {
    connected ??= withTimeout(client.connect(), timeoutMs, "connecting").then(
      () => undefined,
      (error: unknown) => {
        connected = null;
        throw new UpstreamUnavailableError(`the Lit network "${options.network}" is unavailable`, { cause: error });
      },
    );
    return connected;
  };
  // Warm up now so the first request does not pay for the connection; a failure here is retried later.
  connect().catch(() => undefined);

  return {
    async encryptFor(signerAddress, plaintext): Promise<EncryptedPayload> {
      if (!ADDRESS.test(signerAddress)) throw new TypeError("signerAddress must be a 0x-prefixed 20-byte address");
      await connect();
      const key = newPayloadKey();
      const accessControlConditions = onlySignerConditions(signerAddress);
      try {
        const encrypted = await withTimeout(
          client.encrypt({ accessControlConditions, dataToEncrypt: key.slice() }),
          timeoutMs,
          "encrypting",
        ).catch((error: unknown) => {
          throw new UpstreamUnavailableError(`the Lit network "${options.network}" did not encrypt`, { cause: error });
        });
        // Lit hashes exactly what it encrypted; a mismatch means the SDK changed under us.
        if (encrypted.dataToEncryptHash !== bytesToHex(sha256(key))) {
          throw new Error("the Lit SDK returned a dataToEncryptHash that is not SHA-256 of the key");
        }
        return {
          encryptedString: sealPayload(key, plaintext),
          encryptedSymmetricKey: encrypted.ciphertext,
          accessControlConditions,
          dataToEncryptHash: encrypted.dataToEncryptHash,
          chain: CONDITIONS_CHAIN,
          backend: "lit",
        };
      } finally {
        key.fill(0);
      }
    },
    async close() {
      await client.disconnect().catch(() => undefined);
    },
  };
}

/** Loads the Lit SDK, or explains how to install it. */
async function loadLitSdk(): Promise<NonNullable<LitEncryptorOptions["createClient"]>> {
  type LitNodeClientClass = new (config: Record<string, unknown>) => LitClient;
  let sdk: { LitNodeClient?: LitNodeClientClass; default?: { LitNodeClient?: LitNodeClientClass } };
  try {
    // A variable specifier keeps TypeScript from requiring the package at build time.
    const specifier: string = LIT_PACKAGE;
    sdk = (await import(specifier)) as typeof sdk;
  } catch (error) {
    throw new ConfigError(
      `ENCRYPTION_BACKEND=lit needs the Lit SDK, which is not installed by default and could not be loaded ` +
        `(${(error as Error).message}). Install it with: npm install ${LIT_PACKAGE}@7`,
    );
  }
  // The SDK is CommonJS; depending on how Node sees its exports the class is named or under default.
  const LitNodeClient = sdk.LitNodeClient ?? sdk.default?.LitNodeClient;
  if (LitNodeClient === undefined) throw new ConfigError(`${LIT_PACKAGE} has no LitNodeClient: install version 7`);
  return (network, timeoutMs) => new LitNodeClient({ litNetwork: network, connectTimeout: timeoutMs, debug: false });
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
