import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createCursorCodec } from "../../src/domain/cursor.js";
import { InvalidCursorError } from "../../src/domain/errors.js";

const codec = createCursorCodec("secret-one");

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

describe("cursor codec", () => {
  it("round-trips its state and is opaque and URL-safe", () => {
    const state = { a: "u42", o: 7, f: "abc" };
    const cursor = codec.encode("mf:1,2", state);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(cursor).not.toContain("u42"); // not readable at a glance (base64), though not secret
    expect(codec.decode("mf:1,2", cursor)).toEqual(state);
  });

  it("binds a cursor to the scope (query) that issued it", () => {
    const cursor = codec.encode("mf:1,2", { a: "u5" });
    expectRefused(() => codec.decode("mf:1,2,3", cursor));
    expectRefused(() => codec.decode("rec:1", cursor));
    // The separator keeps scope and body apart: no shifting of bytes between them matches.
    expectRefused(() => codec.decode("mf:1,2\0", cursor));
  });

  it("refuses any edit of body or tag", () => {
    const cursor = codec.encode("rec:9", { f: "fingerprint", o: 20 });
    const [body, tag] = cursor.split(".") as [string, string];
    for (let i = 0; i < body.length; i++) expectRefused(() => codec.decode("rec:9", `${flip(body, i)}.${tag}`));
    for (let i = 0; i < tag.length; i++) expectRefused(() => codec.decode("rec:9", `${body}.${flip(tag, i)}`));
    // The last character of a 32-byte tag carries 2 spare bits that base64 decoding ignores: a
    // cursor spelled differently there is still not the cursor that was issued.
    for (const bits of [0b01, 0b10, 0b11]) expectRefused(() => codec.decode("rec:9", `${body}.${flip(tag, tag.length - 1, bits)}`));
    expectRefused(() => codec.decode("rec:9", `${body}.${tag.slice(0, -2)}`));
    expectRefused(() => codec.decode("rec:9", `${body}.${tag}A`));
  });

  it("refuses a forged state, however plausible, and another secret's cursors", () => {
    const real = codec.encode("rec:9", { f: "x", o: 10 });
    const [, tag] = real.split(".") as [string, string];
    const forged = Buffer.from(JSON.stringify({ f: "x", o: 90 })).toString("base64url");
    expectRefused(() => codec.decode("rec:9", `${forged}.${tag}`));
    const other = createCursorCodec("secret-two").encode("rec:9", { f: "x", o: 10 });
    expectRefused(() => codec.decode("rec:9", other));
    // A codec with the same secret (another instance behind the same balancer) accepts it.
    expect(createCursorCodec("secret-one").decode("rec:9", real)).toEqual({ f: "x", o: 10 });
    expect(createCursorCodec(Buffer.from("secret-one")).decode("rec:9", real)).toEqual({ f: "x", o: 10 });
  });

  it("refuses garbage without throwing anything but InvalidCursorError", () => {
    for (const garbage of ["x", ".", "a.", ".b", "a.b.c", "!!!.???", "%%%", "é.é", " ", "x".repeat(3000), `${"a".repeat(2100)}.b`]) {
      expectRefused(() => codec.decode("mf:1,2", garbage));
    }
  });

  it("refuses a correctly signed body that is not a JSON object", () => {
    // Signed with the codec's own secret and format, so only the content check can refuse it.
    const sign = (json: string) => {
      const body = Buffer.from(json).toString("base64url");
      const tag = createHmac("sha256", "secret-one").update("mf:1,2").update("\0").update(body).digest("base64url");
      return `${body}.${tag}`;
    };
    expect(codec.decode("mf:1,2", sign('{"a":"u1"}'))).toEqual({ a: "u1" }); // the format is the codec's
    for (const json of ["[1,2]", "42", "null", '"text"', "{not json"]) expectRefused(() => codec.decode("mf:1,2", sign(json)));
  });
});
