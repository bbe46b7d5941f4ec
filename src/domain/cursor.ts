import { createHmac } from "node:crypto";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
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

  return {
    encode(scope, state) {
      const plaintext = Buffer.from(JSON.stringify(state), "utf8");
      const nonce = createHmac("sha256", nonceKey).update(aad(scope)).update("\0").update(plaintext).digest().subarray(0, NONCE_BYTES);
      const sealed = xchacha20poly1305(sealingKey, nonce, aad(scope)).encrypt(plaintext);
      return Buffer.concat([nonce, sealed]).toString("base64url");
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
        const opened = xchacha20poly1305(sealingKey, bytes.subarray(0, NONCE_BYTES), aad(scope)).decrypt(bytes.subarray(NONCE_BYTES));
        state = JSON.parse(Buffer.from(opened).toString("utf8"));
      } catch {
        throw invalid();
      }
      if (typeof state !== "object" || state === null || Array.isArray(state)) throw invalid();
      return state as Record<string, unknown>;
    },
  };
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
