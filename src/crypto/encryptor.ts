import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import type { EncryptJob, EncryptResult } from "./encrypt-worker.js";
import { newPayloadKey, sealPayload } from "./envelope.js";
import { encryptKey } from "./ibe.js";
import { CONDITIONS_CHAIN, encryptionIdentity, onlySignerConditions, type AccessControlCondition } from "./identity.js";
import { parsePublicKeyNetwork, type PublicKeyNetwork } from "./key-network.js";

/**
 * The server side of encrypted results: every payload gets a fresh AES-256-GCM key, and only that
 * key is encrypted to the "only the signer" identity, so that a threshold of key nodes must agree
 * (after checking the signer's authorization) before anyone can read it.
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
  /** "relgraph" (local key nodes) or "lit" (Lit Protocol's network). */
  backend: "relgraph" | "lit";
}

/** Encrypts results so that only the given signer can have them decrypted. */
export interface ResultEncryptor {
  encryptFor(signerAddress: string, plaintext: Uint8Array): Promise<EncryptedPayload>;
  /** Releases worker threads or connections; call once on shutdown. */
  close(): Promise<void>;
}

/** Options of createThresholdEncryptor. */
export interface ThresholdEncryptorOptions {
  /**
   * Worker threads doing the pairing work; 0 encrypts on the calling thread. Default: cores − 1,
   * from 1 to 4. When the compiled worker file is absent (code running from TypeScript sources, as
   * under a test runner) encryption also runs on the calling thread.
   */
  workers?: number;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** The default backend: encryption to a relgraph key network (`relgraph keygen`, or the dev network). */
export function createThresholdEncryptor(
  network: PublicKeyNetwork,
  options: ThresholdEncryptorOptions = {},
): ResultEncryptor {
  const { publicKey } = parsePublicKeyNetwork(network);
  const workerFile = new URL("./encrypt-worker.js", import.meta.url);
  const size = options.workers ?? Math.max(1, Math.min(4, availableParallelism() - 1));
  const pool = size > 0 && existsSync(fileURLToPath(workerFile)) ? createWorkerPool(workerFile, size) : null;

  return {
    async encryptFor(signerAddress, plaintext) {
      if (!ADDRESS.test(signerAddress)) throw new TypeError("signerAddress must be a 0x-prefixed 20-byte address");
      const key = newPayloadKey();
      const accessControlConditions = onlySignerConditions(signerAddress);
      const dataToEncryptHash = bytesToHex(sha256(key));
      const identity = encryptionIdentity(accessControlConditions, dataToEncryptHash);
      const encryptedString = sealPayload(key, plaintext);
      // The pool works on copies and wipes them; this copy is wiped here.
      const ciphertext = pool === null ? encryptKey(publicKey, identity, key) : await pool.run({ publicKey, identity, key });
      key.fill(0);
      return {
        encryptedString,
        encryptedSymmetricKey: Buffer.from(ciphertext).toString("base64"),
        accessControlConditions,
        dataToEncryptHash,
        chain: CONDITIONS_CHAIN,
        backend: "relgraph",
      };
    },
    async close() {
      await pool?.close();
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
