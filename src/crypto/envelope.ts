import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * The payload half of the envelope: AES-256-GCM under a random 32-byte key, carried as
 * base64(12-byte IV ‖ ciphertext ‖ 16-byte tag). Only the key goes through the threshold scheme.
 */

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** AES-256 key length, and so the length of what the threshold scheme encrypts. */
export const PAYLOAD_KEY_BYTES = 32;

/** Thrown when a sealed payload is malformed or fails authentication. */
export class PayloadDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PayloadDecryptionError";
  }
}

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

/** Opens base64(iv ‖ ct ‖ tag) under `key`. */
export function openPayload(key: Uint8Array, sealed: string): Uint8Array {
  const bytes = Buffer.from(sealed, "base64");
  if (bytes.length < IV_BYTES + TAG_BYTES) throw new PayloadDecryptionError("encryptedString is too short");
  const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, IV_BYTES));
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  try {
    return new Uint8Array(Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]));
  } catch {
    throw new PayloadDecryptionError("encryptedString failed authentication: it was altered or belongs to another key");
  }
}
