import { create, createFileRegistry, fromBinary, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { FieldDescriptorProto_Label, FieldDescriptorProto_Type, FileDescriptorProtoSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import {
  EncryptedDataSchema,
  MultiDimensionalRecommendationResponseSchema,
  MutualContractInteractionResponseSchema,
  MutualFriendRequestSchema,
  MutualFriendResponseSchema,
  ProfileSchema,
  RelationshipGraphEntrySchema,
  UserInfoSchema,
} from "../../gen/relgraph/v1/relation_service_pb.js";
import { toBinaryFast } from "../../src/transport/protobuf-binary.js";
import { isPlainMessage } from "../../src/transport/plain-message.js";

const TEXTS = ["", "a", "alice", "Zoë Ünal", "名前", "🦊", "lone \ud800 surrogate", "x".repeat(64), "y".repeat(65), `${"é".repeat(70)}!`, "z".repeat(20_000)];

/** A deterministic variety of users: every text in every string field, optional parts absent or present. */
function users(count: number): MessageInitShape<typeof UserInfoSchema>[] {
  return Array.from({ length: count }, (_, i) => {
    const text = TEXTS[i % TEXTS.length]!;
    return {
      relationId: { relationId: `u${i}`, name: text, avatar: i % 3 === 0 ? "" : `https://a.example/${i}.png` },
      address: Array.from({ length: i % 4 }, (_, k) => `0x${String(k).repeat(40)}`),
      social: i % 2 === 0 ? { username: text, name: "N", avatar: "" } : undefined,
      game: i % 5 === 0 ? undefined : { gameId: `7656119800000${i}`, name: text, avatar: "https://g" },
      description: i % 3 === 1 ? undefined : text,
    };
  });
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

/** toBinaryFast writes what toBinary writes of the message made from `init`, given the message or `init` itself. */
function expectSameBytes<Desc extends DescMessage>(schema: Desc, init: MessageInitShape<Desc>) {
  const message = create(schema, init);
  const reference = hex(toBinary(schema, message));
  expect(hex(toBinaryFast(schema, message))).toBe(reference);
  expect(hex(toBinaryFast(schema, init))).toBe(reference);
}

describe("toBinaryFast", () => {
  it("writes exactly what toBinary writes for relgraph's replies", () => {
    for (const count of [0, 1, 5, 20, 100]) {
      expectSameBytes(MutualFriendResponseSchema, { data: users(count), cursor: count > 3 ? "eyJhIjoidTMifQ.sig" : "" });
      expectSameBytes(MultiDimensionalRecommendationResponseSchema, { data: users(count), cursor: "" });
    }
    expectSameBytes(MutualContractInteractionResponseSchema, { data: ["0xaa", "", "0x" + "b".repeat(40)] });
    expectSameBytes(RelationshipGraphEntrySchema, { relation: { relationId: "u1", name: "A", avatar: "" }, address: [], description: "é" });
    expectSameBytes(EncryptedDataSchema, {
      encryptedString: "x".repeat(3_000),
      encryptedSymmetricKey: "ab",
      accessControlConditions: [{ chain: "ethereum", parameters: [":userAddress"], returnValueTest: { comparator: "=", value: "0x1" } }],
    });
    expectSameBytes(MutualFriendRequestSchema, { address: ["0x1", "0x2"], socialUsername: ["名前"], limit: 100, cursor: "" });
  });

  it("writes int32 fields as toBinary does: zero skipped, negatives in ten bytes, the extremes", () => {
    for (const n of [0, 1, 127, 128, 16_383, 16_384, 2 ** 21, 2 ** 28, 2 ** 31 - 1, -1, -128, -(2 ** 31)]) {
      expectSameBytes(ProfileSchema, { relationId: "u", followingCount: n, followerCount: -n | 0 });
    }
  });

  it("leaves reserved bytes in front of the message, on both paths, for a caller's framing", () => {
    const init = { data: users(7), cursor: "c" };
    const framed = toBinaryFast(MutualFriendResponseSchema, init, 5);
    expect(hex(framed.subarray(5))).toBe(hex(toBinary(MutualFriendResponseSchema, create(MutualFriendResponseSchema, init))));
    const timestamp = create(TimestampSchema, { seconds: 1_700_000_000n, nanos: 5 });
    expect(hex(toBinaryFast(TimestampSchema, timestamp, 5).subarray(5))).toBe(hex(toBinary(TimestampSchema, timestamp)));
    expect(toBinaryFast(TimestampSchema, timestamp, 5).length).toBe(5 + toBinary(TimestampSchema, timestamp).length);
  });

  it("round-trips through fromBinary", () => {
    const message = create(MutualFriendResponseSchema, { data: users(30), cursor: "c" });
    const decoded = fromBinary(MutualFriendResponseSchema, toBinaryFast(MutualFriendResponseSchema, message));
    expect(decoded.data.map((u) => u.relationId?.name)).toEqual(message.data.map((u) => u.relationId?.name.replace("\ud800", "\ufffd")));
  });

  it("leaves unknown fields, messages that are not plain and values toBinary refuses to toBinary", () => {
    const withUnknown = fromBinary(UserInfoSchema, Buffer.concat([toBinary(UserInfoSchema, create(UserInfoSchema, users(1)[0])), Buffer.from([0xf8, 0x06, 0x2a])]));
    expect(withUnknown.$unknown?.length).toBe(1);
    expect(hex(toBinaryFast(UserInfoSchema, withUnknown))).toBe(hex(toBinary(UserInfoSchema, withUnknown)));
    const timestamp = create(TimestampSchema, { seconds: 1_700_000_000n, nanos: 5 });
    expect(hex(toBinaryFast(TimestampSchema, timestamp))).toBe(hex(toBinary(TimestampSchema, timestamp)));
    const file = create(FileDescriptorProtoSchema, { name: "a.proto", syntax: "proto3" });
    expect(hex(toBinaryFast(FileDescriptorProtoSchema, file))).toBe(hex(toBinary(FileDescriptorProtoSchema, file)));
    const invalid = create(ProfileSchema, { relationId: "u", followingCount: 1.5 });
    expect(() => toBinary(ProfileSchema, invalid)).toThrow();
    expect(() => toBinaryFast(ProfileSchema, invalid)).toThrow();
  });
});

describe("toBinaryFast on every plain scalar kind", () => {
  // relgraph's own messages have only strings and int32; the others are written by the same plans.
  const file = create(FileDescriptorProtoSchema, {
    name: "scalars.proto",
    package: "test",
    syntax: "proto3",
    messageType: [
      {
        name: "Scalars",
        field: [
          ["flag", 1, FieldDescriptorProto_Type.BOOL],
          ["count", 2, FieldDescriptorProto_Type.UINT32],
          ["delta", 3, FieldDescriptorProto_Type.SINT32],
          ["word", 4, FieldDescriptorProto_Type.FIXED32],
          ["signed_word", 5, FieldDescriptorProto_Type.SFIXED32],
          ["numbers", 6, FieldDescriptorProto_Type.INT32, FieldDescriptorProto_Label.REPEATED],
          ["names", 7, FieldDescriptorProto_Type.STRING, FieldDescriptorProto_Label.REPEATED],
          ["flags", 8, FieldDescriptorProto_Type.BOOL, FieldDescriptorProto_Label.REPEATED],
        ].map(([name, number, type, label]) => ({ name: name as string, jsonName: name as string, number: number as number, type: type as FieldDescriptorProto_Type, label: (label as FieldDescriptorProto_Label) ?? FieldDescriptorProto_Label.OPTIONAL })),
      },
    ],
  });
  const Scalars = createFileRegistry(file, () => undefined).getMessage("test.Scalars")!;

  it("writes what toBinary writes, zero values and extremes included", () => {
    expect(isPlainMessage(Scalars)).toBe(true);
    for (const [flag, count, delta, word, signedWord] of [
      [false, 0, 0, 0, 0],
      [true, 1, -1, 1, -1],
      [true, 2 ** 32 - 1, 2 ** 31 - 1, 2 ** 32 - 1, 2 ** 31 - 1],
      [true, 300, -(2 ** 31), 0x01020304, -(2 ** 31)],
    ] as const) {
      expectSameBytes(Scalars, { flag, count, delta, word, signedWord, numbers: [0, -5, 2 ** 31 - 1, 128], names: ["", "é", "a"], flags: [true, false] } as never);
    }
    expectSameBytes(Scalars, { numbers: [], names: [], flags: [] } as never);
  });
});
