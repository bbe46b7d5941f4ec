import { createCipheriv, randomBytes } from "node:crypto";
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
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64");
}
