import { existsSync } from "node:fs";
import { defaultEncryptionWorkers } from "../config/config.js";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import type { EncryptJob, EncryptResult } from "./encrypt-worker.js";
import { newPayloadKey, sealPayload } from "./envelope.js";
import { hexToBytes } from "@noble/hashes/utils.js";
import type { WasmG1, WasmG2 } from "./bls-wasm.js";
import { loadEncryptionCurve } from "./encryption-curve.js";
import { encryptKey, type IbeCurve } from "./ibe.js";
import { CONDITIONS_CHAIN, encryptionIdentity, onlySignerConditions, type AccessControlCondition } from "./identity.js";
import { parsePublicKeyNetwork, type PublicKeyNetwork } from "./key-network.js";

/**
 * The server side of encrypted results: a payload is sealed with AES-256-GCM, and only its key is
 * encrypted to the "only the signer" identity, so that a threshold of key nodes must agree (after
 * checking the signer's authorization) before anyone can read it. Answers under one authorization
 * share one payload key (the contract allows it for the authorization's lifetime), so its client
 * runs one threshold decryption per authorization rather than one per answer; each answer still
 * gets its own IV and its own content.
 */

/** An encrypted result; field names mirror the proto message relgraph.v1.EncryptedData. */
export interface EncryptedPayload {
  /** Base64 of the AES-256-GCM sealed payload: 12-byte IV ‖ ciphertext ‖ 16-byte tag. */
  encryptedString: string;
  /** Base64 of the identity-based ciphertext of the 32-byte AES key (Lit's `ciphertext`). */
  encryptedSymmetricKey: string;
  /** "Only the signer" conditions; part of the encryption identity. */
  accessControlConditions: AccessControlCondition[];
  /** Lowercase hex SHA-256 of the AES key; part of the encryption identity. */
  dataToEncryptHash: string;
  chain: string;
  /** Always "relgraph": relgraph's key nodes hold the decryption key. */
  backend: "relgraph";
}

/** The verified authorization an answer is given under (src/auth/siwe.ts's VerifiedAuthorization has this shape). */
export interface AnswerAuthorization {
  /** The signer, who alone may have the answer decrypted. */
  address: string;
  /** Distinguishes this authorization from every other (a hash of its message and signature). */
  id: string;
  /** When the authorization stops being accepted; its payload key is not used from then on. */
  validUntil: Date;
}

/** Encrypts results so that only the given signer can have them decrypted. */
export interface ResultEncryptor {
  /** Encrypts under a fresh payload key of its own. */
  encryptFor(signerAddress: string, plaintext: Uint8Array): Promise<EncryptedPayload>;
  /**
   * Encrypts under the payload key of `authorization`, made at its first answer and used for every
   * later one until the authorization expires: a client that decrypted one of its answers reads the
   * rest with AES alone.
   */
  encryptForAuthorization(authorization: AnswerAuthorization, plaintext: Uint8Array): Promise<EncryptedPayload>;
  /** Releases worker threads or connections; call once on shutdown. */
  close(): Promise<void>;
}

/** Options of createThresholdEncryptor. */
export interface ThresholdEncryptorOptions {
  /**
   * Worker threads doing the pairing work; 0 encrypts on the calling thread. Default:
   * defaultEncryptionWorkers() (config.ts, as ENCRYPTION_WORKERS): a burst of new authorizations may use
   * the whole machine, and the system shares it with the event loop. When the compiled worker file is absent (code running from TypeScript sources, as
   * under a test runner) encryption also runs on the calling thread.
   */
  workers?: number;
  /** Authorizations whose payload key is kept at once; beyond that the oldest makes room. Default 10,000. */
  keyCacheSize?: number;
  /** The clock; injectable for tests. */
  now?: () => number;
}

const DEFAULT_KEY_CACHE_SIZE = 10_000;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** The default backend: encryption to a relgraph key network (`relgraph keygen`, or the dev network). */
export function createThresholdEncryptor(
  network: PublicKeyNetwork,
  options: ThresholdEncryptorOptions = {},
): ResultEncryptor {
  const { publicKey } = parsePublicKeyNetwork(network);
  const workerFile = new URL("./encrypt-worker.js", import.meta.url);
  const size = options.workers ?? defaultEncryptionWorkers();
  const pool = size > 0 && existsSync(fileURLToPath(workerFile)) ? createWorkerPool(workerFile, size) : null;

  const now = options.now ?? Date.now;
  let inline: Promise<{ curve: IbeCurve<WasmG1, WasmG2>; key: WasmG1 }> | undefined;
  /** Encrypts on this thread (encryption-curve.ts). */
  const encryptInline = async (identity: string, key: Uint8Array) => {
    inline ??= loadEncryptionCurve().then((curve) => ({ curve, key: curve.publicKey(hexToBytes(publicKey)) }));
    const { curve, key: networkKey } = await inline;
    return encryptKey(networkKey, identity, key, curve);
  };

  /** A payload key with everything about it that does not depend on the answer. */
  const makeKey = async (signerAddress: string): Promise<PayloadKey> => {
    if (!ADDRESS.test(signerAddress)) throw new TypeError("signerAddress must be a 0x-prefixed 20-byte address");
    const key = newPayloadKey();
    const accessControlConditions = onlySignerConditions(signerAddress);
    const dataToEncryptHash = bytesToHex(sha256(key));
    const identity = encryptionIdentity(accessControlConditions, dataToEncryptHash);
    // The pool works on a copy and wipes it.
    const ciphertext = pool === null ? await encryptInline(identity, key) : await pool.run({ publicKey, identity, key });
    return { key, encryptedSymmetricKey: Buffer.from(ciphertext).toString("base64"), accessControlConditions, dataToEncryptHash };
  };
  const keys = createPayloadKeyCache(options.keyCacheSize ?? DEFAULT_KEY_CACHE_SIZE, now);

  const seal = (payloadKey: PayloadKey, plaintext: Uint8Array): EncryptedPayload => {
    // A wiped key (the encryptor was closed under a request in flight) would seal for everyone to read.
    if (payloadKey.key.every((byte) => byte === 0)) throw new Error("the encryptor is closed");
    return sealWith(payloadKey, plaintext);
  };
  const sealWith = (payloadKey: PayloadKey, plaintext: Uint8Array): EncryptedPayload => ({
    encryptedString: sealPayload(payloadKey.key, plaintext),
    encryptedSymmetricKey: payloadKey.encryptedSymmetricKey,
    accessControlConditions: payloadKey.accessControlConditions,
    dataToEncryptHash: payloadKey.dataToEncryptHash,
    chain: CONDITIONS_CHAIN,
    backend: "relgraph",
  });

  return {
    async encryptFor(signerAddress, plaintext) {
      const payloadKey = await makeKey(signerAddress);
      try {
        return seal(payloadKey, plaintext);
      } finally {
        payloadKey.key.fill(0);
      }
    },
    async encryptForAuthorization(authorization, plaintext) {
      return seal(await keys.get(authorization, () => makeKey(authorization.address)), plaintext);
    },
    async close() {
      keys.clear();
      await pool?.close();
    },
  };
}

/** A payload key and the parts of EncryptedData that follow from it. */
interface PayloadKey {
  key: Uint8Array;
  encryptedSymmetricKey: string;
  accessControlConditions: AccessControlCondition[];
  dataToEncryptHash: string;
}

/**
 * Payload keys by authorization id, each until its authorization's validUntil; when full, the oldest
 * makes room. Concurrent first answers of one authorization wait for one key. A key leaving the cache
 * is only dropped, since an answer may still be about to seal with it; clear() (on close) wipes them.
 */
function createPayloadKeyCache(size: number, now: () => number) {
  const entries = new Map<string, { until: number; signer: string; key: Promise<PayloadKey> }>();
  const drop = (id: string) => entries.delete(id);
  return {
    async get(authorization: AnswerAuthorization, make: () => Promise<PayloadKey>): Promise<PayloadKey> {
      const at = now();
      const until = authorization.validUntil.getTime();
      if (until <= at) throw new RangeError("the authorization has expired; its answers get no payload key");
      const signer = authorization.address.toLowerCase();
      const known = entries.get(authorization.id);
      if (known !== undefined && known.until > at && known.signer === signer) return known.key;
      if (known !== undefined) drop(authorization.id);
      if (entries.size >= size) {
        const oldest = entries.keys().next();
        if (!oldest.done) drop(oldest.value);
      }
      const key = make();
      entries.set(authorization.id, { until, signer, key });
      // A failed encryption is not remembered: the next answer tries again.
      key.catch(() => {
        if (entries.get(authorization.id)?.key === key) entries.delete(authorization.id);
      });
      return key;
    },
    clear() {
      for (const entry of entries.values()) entry.key.then((payloadKey) => payloadKey.key.fill(0), () => undefined);
      entries.clear();
    },
  };
}

interface WorkerPool {
  run(job: EncryptJob): Promise<Uint8Array>;
  close(): Promise<void>;
}

interface Pending {
  job: EncryptJob;
  resolve: (ciphertext: Uint8Array) => void;
  reject: (error: Error) => void;
}

/**
 * A fixed-size pool, started lazily. Each worker runs one job at a time; the rest wait in a FIFO.
 * A worker is ref'd only while busy, so an idle pool never keeps the process alive.
 */
function createWorkerPool(file: URL, size: number): WorkerPool {
  const idle: Worker[] = [];
  const busy = new Map<Worker, Pending>();
  const queue: Pending[] = [];
  let started = 0;
  let closed = false;

  const spawn = () => {
    const worker = new Worker(file);
    started++;
    worker.unref();
    worker.on("message", (result: EncryptResult) => {
      const pending = busy.get(worker);
      busy.delete(worker);
      worker.unref();
      idle.push(worker);
      if (pending !== undefined) {
        if ("ciphertext" in result) pending.resolve(result.ciphertext);
        else pending.reject(new Error(`encryption failed: ${result.error}`));
      }
      dispatch();
    });
    let gone = false;
    const lost = (error: Error) => {
      // "error" is followed by "exit"; count the loss once.
      if (gone) return;
      gone = true;
      const pending = busy.get(worker);
      busy.delete(worker);
      const at = idle.indexOf(worker);
      if (at >= 0) idle.splice(at, 1);
      started--;
      pending?.reject(error);
      dispatch();
    };
    worker.on("error", lost);
    worker.on("exit", (code) => lost(new Error(`encryption worker exited with code ${code}`)));
    idle.push(worker);
  };

  const dispatch = () => {
    while (!closed && queue.length > 0) {
      if (idle.length === 0 && started < size) spawn();
      const worker = idle.pop();
      if (worker === undefined) return;
      const pending = queue.shift() as Pending;
      busy.set(worker, pending);
      worker.ref();
      // postMessage copies the job; the queued copy of the key is wiped at once.
      worker.postMessage(pending.job);
      pending.job.key.fill(0);
    }
  };

  return {
    run(job) {
      if (closed) return Promise.reject(new Error("the encryptor is closed"));
      return new Promise((resolve, reject) => {
        queue.push({ job: { ...job, key: job.key.slice() }, resolve, reject });
        dispatch();
      });
    },
    async close() {
      closed = true;
      for (const pending of queue.splice(0)) pending.reject(new Error("the encryptor is closed"));
      await Promise.all([...idle, ...busy.keys()].map((worker) => worker.terminate()));
    },
  };
}
