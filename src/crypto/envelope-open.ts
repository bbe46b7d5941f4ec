import { gcm } from "@noble/ciphers/aes.js";

/**
 * Opening the payload half of the envelope (envelope.ts seals it). Kept apart from sealing and free
 * of Node built-ins, so that browsers decrypt with the same code: AES-256-GCM in pure JavaScript,
 * since WebCrypto exists only in secure contexts and a dApp may be served over plain HTTP.
 */

/** Bytes of the GCM nonce that leads a sealed payload. */
export const IV_BYTES = 12;
/** Bytes of the GCM tag that ends a sealed payload. */
export const TAG_BYTES = 16;

/** Thrown when a sealed payload is malformed or fails authentication. */
export class PayloadDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PayloadDecryptionError";
  }
}

/** Opens base64(iv ‖ ct ‖ tag) under `key`. */
export function openPayload(key: Uint8Array, sealed: string): Uint8Array {
  const bytes = base64ToBytes(sealed, "encryptedString");
  if (bytes.length < IV_BYTES + TAG_BYTES) throw new PayloadDecryptionError("encryptedString is too short");
  try {
    return gcm(key, bytes.subarray(0, IV_BYTES)).decrypt(bytes.subarray(IV_BYTES));
  } catch {
    throw new PayloadDecryptionError("encryptedString failed authentication: it was altered or belongs to another key");
  }
}

/** Decodes standard base64 (padding optional); a browser has no Buffer, but both have atob. */
export function base64ToBytes(text: string, what: string): Uint8Array {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    throw new PayloadDecryptionError(`${what} is not base64`);
  }
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}
