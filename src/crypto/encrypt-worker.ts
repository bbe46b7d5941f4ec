import { parentPort } from "node:worker_threads";
import { encryptKey } from "./ibe.js";

/**
 * Worker-thread entry of the encryptor's pool: runs the IBE encryption (hash-to-G2 plus a pairing,
 * ~40 ms) off the event loop. It keeps nothing between jobs.
 */

/** A job posted by the pool. */
export interface EncryptJob {
  publicKey: string;
  identity: string;
  key: Uint8Array;
}

/** The worker's answer to one job. */
export type EncryptResult = { ciphertext: Uint8Array } | { error: string };

parentPort?.on("message", (job: EncryptJob) => {
  let result: EncryptResult;
  try {
    result = { ciphertext: encryptKey(job.publicKey, job.identity, job.key) };
  } catch (error) {
    result = { error: error instanceof Error ? error.message : String(error) };
  }
  job.key.fill(0);
  parentPort?.postMessage(result);
});
