import { createCipheriv, createDecipheriv, createHmac } from "node:crypto";
import { hchacha } from "@noble/ciphers/chacha.js";
import { InvalidCursorError } from "./errors.js";

/**
 * Opaque paging cursors: base64url(nonce ‖ XChaCha20-Poly1305(JSON state)), with the query's scope
 * as associated data. The encryption hides what a cursor holds (relationIds, scores); the tag makes
 * a forged or edited cursor, or one issued under another key, detectable; and the scope binds a
 * cursor to the query that issued it, so a cursor from another query or another user is rejected
 * instead of silently paging something else.
 *
 * The nonce is synthetic: a keyed hash (under a subkey of its own) of the scope and the state. So
 * one page asked twice, on any instance or protocol, gets the same cursor, as clients and caches
 * may expect of a read-only API; all that reveals is that two cursors are the same cursor. Distinct
 * states never share a nonce, and XChaCha's 192 bits leave no room for chance collisions.
 */
export interface CursorCodec {
  encode(scope: string, state: Record<string, unknown>): string;
  /** The state, or InvalidCursorError (11603). An empty cursor is the caller's "first page". */
  decode(scope: string, cursor: string): Record<string, unknown>;
}

/** Bytes of a cursor key (CURSOR_KEY, or the store's shared one). */
export const CURSOR_KEY_BYTES = 32;
const NONCE_BYTES = 24;
const TAG_BYTES = 16;
const MAX_CURSOR_LENGTH = 2048;

/** Creates a codec keyed by a 32-byte `key`; instances sharing a store must share the key. */
export function createCursorCodec(key: Uint8Array): CursorCodec {
  if (key.length !== CURSOR_KEY_BYTES) throw new RangeError(`a cursor key is ${CURSOR_KEY_BYTES} bytes, got ${key.length}`);
  // Independent subkeys, so that the nonce's hash and the cipher never share a key.
  const sealingKey = createHmac("sha256", key).update("relgraph cursor: sealing key").digest();
  const nonceKey = createHmac("sha256", key).update("relgraph cursor: nonce key").digest();
  const aad = (scope: string) => Buffer.from(scope, "utf8");

  const sealingWords = littleEndianWords(sealingKey);

  return {
    encode(scope, state) {
      const plaintext = Buffer.from(JSON.stringify(state), "utf8");
      const nonce = createHmac("sha256", nonceKey).update(aad(scope)).update("\0").update(plaintext).digest().subarray(0, NONCE_BYTES);
      const { key, iv } = xchachaSubkey(sealingWords, nonce);
      const cipher = createCipheriv("chacha20-poly1305", key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(aad(scope), { plaintextLength: plaintext.length });
      return Buffer.concat([nonce, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]).toString("base64url");
    },
    decode(scope, cursor) {
      const invalid = () => new InvalidCursorError("cursor is invalid: pass back the cursor of the previous page verbatim");
      if (cursor.length > MAX_CURSOR_LENGTH) throw invalid();
      const bytes = Buffer.from(cursor, "base64url");
      // Only the one spelling issued is accepted: base64 decoding skips stray characters and the
      // spare bits of the last one, so several texts would otherwise open as the same cursor.
      if (bytes.length < NONCE_BYTES + TAG_BYTES || bytes.toString("base64url") !== cursor) throw invalid();
      let state: unknown;
      try {
        const { key, iv } = xchachaSubkey(sealingWords, bytes.subarray(0, NONCE_BYTES));
        const sealed = bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES);
        const decipher = createDecipheriv("chacha20-poly1305", key, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(aad(scope), { plaintextLength: sealed.length });
        decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
        state = JSON.parse(Buffer.concat([decipher.update(sealed), decipher.final()]).toString("utf8"));
      } catch {
        throw invalid();
      }
      if (typeof state !== "object" || state === null || Array.isArray(state)) throw invalid();
      return state as Record<string, unknown>;
    },
  };
}

/**
 * XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha) with the AEAD itself in OpenSSL: HChaCha20 of the key
 * and the nonce's first 16 bytes gives a subkey, under which ChaCha20-Poly1305 (RFC 8439) runs with
 * the nonce's last 8 bytes behind four zero bytes. Byte for byte what @noble/ciphers' xchacha20poly1305
 * writes (test/domain/cursor.test.ts holds it to that), at native speed.
 */
function xchachaSubkey(keyWords: Uint32Array, nonce: Uint8Array): { key: Buffer; iv: Buffer } {
  const subkey = new Uint32Array(8);
  hchacha(SIGMA, keyWords, littleEndianWords(nonce.subarray(0, 16)), subkey);
  const key = Buffer.alloc(32);
  for (let i = 0; i < 8; i++) key.writeUInt32LE(subkey[i]!, 4 * i);
  const iv = Buffer.alloc(12);
  iv.set(nonce.subarray(16, 24), 4);
  return { key, iv };
}

/** "expand 32-byte k", ChaCha's constant, as four little-endian words. */
const SIGMA = Uint32Array.of(0x61707865, 0x3320646e, 0x79622d32, 0x6b206574);

function littleEndianWords(bytes: Uint8Array): Uint32Array {
  const words = new Uint32Array(bytes.length / 4);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < words.length; i++) words[i] = view.getUint32(4 * i, true);
  return words;
}

/**
 * Reads a cursor key written as 64 hex digits or as base64/base64url of 32 bytes (CURSOR_KEY);
 * null when the text is neither.
 */
export function parseCursorKey(text: string): Uint8Array | null {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, "hex");
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) return null;
  const bytes = Buffer.from(text.replace(/\+/g, "-").replace(/\//g, "_").replace(/=$/, ""), "base64url");
  return bytes.length === CURSOR_KEY_BYTES ? bytes : null;
}
