import { describe, expect, it } from "vitest";
import { newPayloadKey, openPayload, sealPayload } from "../../src/crypto/envelope.js";

describe("sealPayload", () => {
  it("gives every seal an IV of its own, across refills of the IV pool, and each opens", () => {
    const key = newPayloadKey();
    const ivs = new Set<string>();
    // More seals than one pool holds, twice over.
    for (let i = 0; i < 600; i++) {
      const sealed = sealPayload(key, Buffer.from(`answer ${i}`));
      ivs.add(Buffer.from(sealed, "base64").subarray(0, 12).toString("hex"));
      expect(Buffer.from(openPayload(key, sealed)).toString()).toBe(`answer ${i}`);
    }
    expect(ivs.size).toBe(600);
  });
});
