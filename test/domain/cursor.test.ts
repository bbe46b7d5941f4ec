import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { createCursorCodec, parseCursorKey } from "../../src/domain/cursor.js";
import { InvalidCursorError } from "../../src/domain/errors.js";

const KEY = Buffer.alloc(32, 1);
const codec = createCursorCodec(KEY);

/** decode() must refuse with InvalidCursorError (11603), naming the cursor. */
function expectRefused(decode: () => unknown): void {
  let thrown: unknown;
  try {
    decode();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(InvalidCursorError);
  expect((thrown as InvalidCursorError).code).toBe("11603");
  expect((thrown as Error).message).toContain("cursor");
}

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** Replaces the character at i with the base64url character whose 6-bit value differs by `bits`. */
function flip(text: string, i: number, bits = 0b100000): string {
  const c = BASE64URL[BASE64URL.indexOf(text[i]!) ^ bits]!;
  return text.slice(0, i) + c + text.slice(i + 1);
}

/** Seals `plaintext` as the codec does, under KEY's sealing subkey: only the content check can refuse it. */
function sealed(scope: string, plaintext: string): string {
  const nonce = Buffer.alloc(24, 9);
  const sealingKey = createHmac("sha256", KEY).update("relgraph cursor: sealing key").digest();
  const box = xchacha20poly1305(sealingKey, nonce, Buffer.from(scope)).encrypt(Buffer.from(plaintext));
  return Buffer.concat([nonce, box]).toString("base64url");
}

describe("cursor codec", () => {
  it("round-trips its state, URL-safe", () => {
    const state = { a: "u42", o: 7, f: "abc" };
    const cursor = codec.encode("mf:1,2", state);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(codec.decode("mf:1,2", cursor)).toEqual(state);
  });

  it("reveals nothing of its state: no relationId in its text or its decoded bytes", () => {
    const relationId = "rel-0xSecretRelationId-42";
    const cursors = [3, 4, 5].map((s) => codec.encode("rec:9", { f: "fingerprint", s, r: relationId }));
    for (const cursor of cursors) {
      const bytes = Buffer.from(cursor, "base64url");
      for (const view of [cursor, bytes.toString("latin1"), bytes.toString("utf8"), Buffer.from(cursor, "base64").toString("latin1")]) {
        expect(view).not.toContain(relationId);
        expect(view).not.toContain("SecretRelation");
        expect(view).not.toContain("fingerprint");
      }
    }
    // The whole state is inside the encryption, none of it is in the clear.
    expect(Buffer.from(cursors[0]!, "base64url").toString("latin1")).not.toMatch(/"r"|"f"|"s"/);
  });

  it("is the same text for the same page, on any instance with the key, and another for any other page or query", () => {
    const state = { f: "fingerprint", s: 3, r: "u9" };
    const cursor = codec.encode("rec:9", state);
    expect(createCursorCodec(Buffer.from(KEY)).encode("rec:9", { ...state })).toBe(cursor);
    const others = [codec.encode("rec:9", { ...state, r: "u8" }), codec.encode("rec:8", state), createCursorCodec(Buffer.alloc(32, 2)).encode("rec:9", state)];
    for (const other of others) expect(other).not.toBe(cursor);
    // Not even the nonce is shared between two pages.
    for (const other of others) expect(Buffer.from(other, "base64url").subarray(0, 24).equals(Buffer.from(cursor, "base64url").subarray(0, 24))).toBe(false);
  });

  it("binds a cursor to the scope (query) that issued it", () => {
    const cursor = codec.encode("mf:1,2", { a: "u5" });
    expectRefused(() => codec.decode("mf:1,2,3", cursor));
    expectRefused(() => codec.decode("rec:1", cursor));
    expectRefused(() => codec.decode("mf:1,2\0", cursor));
  });

  it("refuses any single-bit change anywhere, and any other spelling", () => {
    const cursor = codec.encode("rec:9", { f: "fingerprint", s: 20, r: "u7" });
    const bytes = Buffer.from(cursor, "base64url");
    for (let i = 0; i < bytes.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const edited = Buffer.from(bytes);
        edited[i]! ^= 1 << bit;
        expectRefused(() => codec.decode("rec:9", edited.toString("base64url")));
      }
    }
    for (let i = 0; i < cursor.length; i++) expectRefused(() => codec.decode("rec:9", flip(cursor, i)));
    // Spare bits of the last character, and stray characters base64 decoding would skip.
    const spare = cursor.length % 4 === 0 ? [] : [0b01, 0b10, 0b11];
    for (const bits of spare) expectRefused(() => codec.decode("rec:9", flip(cursor, cursor.length - 1, bits)));
    for (const variant of [`${cursor}=`, `${cursor}==`, ` ${cursor}`, `${cursor.slice(0, 10)}.${cursor.slice(10)}`, cursor.slice(0, -1), `${cursor}A`]) {
      expectRefused(() => codec.decode("rec:9", variant));
    }
  });

  it("refuses another key's cursors; a codec with the same key (another instance) opens them", () => {
    const real = codec.encode("rec:9", { f: "x", o: 10 });
    expectRefused(() => createCursorCodec(Buffer.alloc(32, 2)).decode("rec:9", real));
    expect(createCursorCodec(Buffer.from(KEY)).decode("rec:9", real)).toEqual({ f: "x", o: 10 });
  });

  it("refuses garbage without throwing anything but InvalidCursorError", () => {
    for (const garbage of ["x", ".", "a.", ".b", "a.b.c", "!!!.???", "%%%", "é.é", " ", "x".repeat(3000), "A".repeat(60), "A".repeat(2048)]) {
      expectRefused(() => codec.decode("mf:1,2", garbage));
    }
  });

  it("refuses a correctly sealed body that is not a JSON object", () => {
    expect(codec.decode("mf:1,2", sealed("mf:1,2", '{"a":"u1"}'))).toEqual({ a: "u1" }); // the format is the codec's
    for (const json of ["[1,2]", "42", "null", '"text"', "{not json", "\uFFFD"]) expectRefused(() => codec.decode("mf:1,2", sealed("mf:1,2", json)));
  });

  it("is XChaCha20-Poly1305 as @noble/ciphers writes it: its cursors open there, and noble's open here", () => {
    const sealingKey = createHmac("sha256", KEY).update("relgraph cursor: sealing key").digest();
    for (const [scope, state] of [
      ["mf:1,2", { a: "u1" }],
      ["rg:7", { a: "名🦊".repeat(40) }],
      ["rec:3", { s: "x".repeat(700), n: 123456789, k: [1, 2, 3] }],
    ] as const) {
      const bytes = Buffer.from(codec.encode(scope, state), "base64url");
      const opened = xchacha20poly1305(sealingKey, bytes.subarray(0, 24), Buffer.from(scope)).decrypt(bytes.subarray(24));
      expect(JSON.parse(Buffer.from(opened).toString("utf8"))).toEqual(state);
      expect(codec.decode(scope, sealed(scope, JSON.stringify(state)))).toEqual(state);
    }
  });

  it("takes only 32-byte keys", () => {
    expect(() => createCursorCodec(Buffer.alloc(16))).toThrow(RangeError);
  });
});

describe("parseCursorKey", () => {
  it("reads 64 hex digits and base64 or base64url of 32 bytes, and nothing else", () => {
    const bytes = Buffer.from([...Array(32).keys()].map((i) => i * 7 + 250));
    expect(Buffer.from(parseCursorKey(bytes.toString("hex"))!).equals(bytes)).toBe(true);
    expect(Buffer.from(parseCursorKey(bytes.toString("hex").toUpperCase())!).equals(bytes)).toBe(true);
    expect(Buffer.from(parseCursorKey(bytes.toString("base64"))!).equals(bytes)).toBe(true);
    expect(Buffer.from(parseCursorKey(bytes.toString("base64url"))!).equals(bytes)).toBe(true);
    for (const bad of ["", "secret", bytes.toString("hex").slice(2), Buffer.alloc(31).toString("base64"), Buffer.alloc(33).toString("base64"), `${bytes.toString("hex")}00`]) {
      expect(parseCursorKey(bad)).toBeNull();
    }
  });
});
