import { createCipheriv, randomBytes, randomFillSync } from "node:crypto";
import { IV_BYTES } from "./envelope-open.js";

/**
 * The payload half of the envelope: AES-256-GCM under a random 32-byte key, carried as
 * base64(12-byte IV ‖ ciphertext ‖ 16-byte tag). Only the key goes through the threshold scheme.
 * Opening lives in envelope-open.ts, free of Node built-ins, so that browsers share it.
 */

export { PayloadDecryptionError, openPayload } from "./envelope-open.js";

/** AES-256 key length, and so the length of what the threshold scheme encrypts. */
export const PAYLOAD_KEY_BYTES = 32;

/** A fresh random payload key. */
export function newPayloadKey(): Uint8Array {
  return new Uint8Array(randomBytes(PAYLOAD_KEY_BYTES));
}

/** Seals `plaintext` under `key`; returns base64(iv ‖ ct ‖ tag). */
export function sealPayload(key: Uint8Array, plaintext: Uint8Array): string {
  const iv = nextIv();
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64");
}

/**
 * IVs are drawn from a pool of CSPRNG bytes, refilled when spent: one call into the generator per
 * few hundred answers rather than one per answer, now that answers under one authorization share a
 * key and each seal is otherwise cheap. Every IV is used once and is as random as randomBytes'.
 */
const ivPool = Buffer.alloc(IV_BYTES * 256);
let ivPoolOffset = ivPool.length;

function nextIv(): Buffer {
  if (ivPoolOffset === ivPool.length) {
    randomFillSync(ivPool);
    ivPoolOffset = 0;
  }
  const iv = Buffer.from(ivPool.subarray(ivPoolOffset, ivPoolOffset + IV_BYTES));
  ivPoolOffset += IV_BYTES;
  return iv;
}
