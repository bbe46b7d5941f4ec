import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { getTextEncoding } from "@bufbuild/protobuf/wire";
import { describe, expect, it } from "vitest";
import { SocialSchema } from "../../gen/relgraph/v1/relation_service_pb.js";
import { useFastUtf8Encoding } from "../../src/transport/utf8-encoding.js";

describe("useFastUtf8Encoding", () => {
  const samples = [
    "",
    "alice",
    "https://a.example/avatars/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.png",
    "Zoë Ünal",
    "名前",
    "emoji 🦊 and more",
    "lone \ud800 surrogate",
    `${"x".repeat(63)}é`,
    "é".repeat(100),
  ];

  it("encodes every string to exactly the bytes TextEncoder gives", () => {
    useFastUtf8Encoding();
    const reference = new TextEncoder();
    for (const text of samples) {
      expect(Buffer.from(getTextEncoding().encodeUtf8(text)).toString("hex"), JSON.stringify(text)).toBe(
        Buffer.from(reference.encode(text)).toString("hex"),
      );
    }
  });

  it("keeps protobuf-es's strict decoding, and messages round-trip", () => {
    useFastUtf8Encoding();
    expect(() => getTextEncoding().decodeUtf8(Uint8Array.from([0xc3, 0x28]), true)).toThrow();
    for (const text of samples.filter((t) => !t.includes("\ud800"))) {
      const social = create(SocialSchema, { username: text, name: text, avatar: text });
      expect(fromBinary(SocialSchema, toBinary(SocialSchema, social)).username).toBe(text);
    }
  });
});
