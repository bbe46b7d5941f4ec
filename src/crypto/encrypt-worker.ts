import { parentPort } from "node:worker_threads";
import { hexToBytes } from "@noble/hashes/utils.js";
import type { WasmG1 } from "./bls-wasm.js";
import { loadEncryptionCurve } from "./encryption-curve.js";
import { encryptKey } from "./ibe.js";

/**
 * Worker-thread entry of the encryptor's pool: runs the IBE encryption (hash-to-G2 plus a pairing, in
 * WebAssembly) off the event loop. It keeps nothing between jobs but the decoded network key.
 */

/** A job posted by the pool. */
export interface EncryptJob {
  publicKey: string;
  identity: string;
  key: Uint8Array;
}

/** The worker's answer to one job. */
export type EncryptResult = { ciphertext: Uint8Array } | { error: string };

const ready = loadEncryptionCurve();
const publicKeys = new Map<string, WasmG1>();

parentPort?.on("message", async (job: EncryptJob) => {
  let result: EncryptResult;
  try {
    const curve = await ready;
    let publicKey = publicKeys.get(job.publicKey);
    if (publicKey === undefined) {
      publicKey = curve.publicKey(hexToBytes(job.publicKey));
      publicKeys.set(job.publicKey, publicKey);
    }
    result = { ciphertext: encryptKey(publicKey, job.identity, job.key, curve) };
  } catch (error) {
    result = { error: error instanceof Error ? error.message : String(error) };
  }
  job.key.fill(0);
  parentPort?.postMessage(result);
});
