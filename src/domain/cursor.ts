import { createHmac, timingSafeEqual } from "node:crypto";
import { InvalidCursorError } from "./errors.js";

/**
 * Opaque paging cursors: base64url(JSON state) + "." + base64url(HMAC-SHA256). The MAC makes a
 * forged or edited cursor detectable, and `scope` binds a cursor to the query that issued it, so a
 * cursor from another query or another user is rejected instead of silently paging something else.
 */
export interface CursorCodec {
  encode(scope: string, state: Record<string, unknown>): string;
  /** The state, or InvalidCursorError (11603). An empty cursor is the caller's "first page". */
  decode(scope: string, cursor: string): Record<string, unknown>;
}

const MAX_CURSOR_LENGTH = 2048;

/** Creates a codec keyed by `secret`; instances sharing a store must share the secret. */
export function createCursorCodec(secret: string | Uint8Array): CursorCodec {
  const mac = (scope: string, body: string) =>
    createHmac("sha256", secret).update(scope).update("\0").update(body).digest();

  return {
    encode(scope, state) {
      const body = Buffer.from(JSON.stringify(state)).toString("base64url");
      return `${body}.${mac(scope, body).toString("base64url")}`;
    },
    decode(scope, cursor) {
      const invalid = () => new InvalidCursorError("cursor is invalid: pass back the cursor of the previous page verbatim");
      if (cursor.length > MAX_CURSOR_LENGTH) throw invalid();
      const [body, tag, extra] = cursor.split(".");
      if (!body || !tag || extra !== undefined) throw invalid();
      // Compared as text, not as decoded bytes: base64 decoding ignores the spare bits of the last
      // character, so several spellings of one tag would otherwise all pass.
      const expected = Buffer.from(mac(scope, body).toString("base64url"));
      const given = Buffer.from(tag);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
      try {
        const state: unknown = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
        if (typeof state !== "object" || state === null || Array.isArray(state)) throw invalid();
        return state as Record<string, unknown>;
      } catch {
        throw invalid();
      }
    },
  };
}
