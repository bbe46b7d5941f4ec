import { create, toJson } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ServerReflectionRequestSchema } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { MutualFriendResponseSchema, ProfileSchema, UserInfoSchema } from "../../gen/relgraph/v1/relation_service_pb.js";
import { toContractJson, toContractJsonText } from "../../src/transport/contract-json.js";
import { messageArbitrary, schemaMessages } from "../support/message-arbitrary.js";

describe("toContractJson", () => {
  it("writes implicit defaults, null for unset messages, and leaves out an unset optional", () => {
    const info = create(UserInfoSchema, { relationId: { relationId: "u1", name: "A", avatar: "" }, address: ["0xa"] });
    expect(JSON.stringify(toContractJson(UserInfoSchema, info))).toBe(
      '{"relationId":{"relationId":"u1","name":"A","avatar":""},"address":["0xa"],"social":null,"game":null}',
    );
    expect(toContractJson(UserInfoSchema, { ...info, description: "2 mutual friends" })).toMatchObject({ description: "2 mutual friends" });
  });

  it("accepts an init shape, filling absent fields with their defaults", () => {
    expect(toContractJson(MutualFriendResponseSchema, {})).toEqual({ data: [], cursor: "" });
    expect(toContractJson(ProfileSchema, { relationId: "u1" })).toEqual({ relationId: "u1", name: "", avatar: "", followingCount: 0, followerCount: 0 });
  });

  it("agrees with proto3 JSON wherever proto3 JSON writes a value", () => {
    const response = create(MutualFriendResponseSchema, {
      data: [{ relationId: { relationId: "u2", name: "B", avatar: "x" }, address: ["0xb"], social: { username: "b", name: "B", avatar: "" } }],
      cursor: "c",
    });
    const proto3 = toJson(MutualFriendResponseSchema, response, { alwaysEmitImplicit: true });
    expect(toContractJson(MutualFriendResponseSchema, response)).toEqual({
      ...(proto3 as object),
      data: [{ ...((proto3 as { data: object[] }).data[0] as object), game: null }],
    });
  });

  it("takes the generic path for kinds it does not walk (here a oneof), with the same result", () => {
    const request = create(ServerReflectionRequestSchema, { host: "h", messageRequest: { case: "listServices", value: "*" } });
    expect(toContractJson(ServerReflectionRequestSchema, request)).toEqual({ host: "h", listServices: "*" });
  });
});

describe("toContractJsonText", () => {
  // Every message type of the schema, random init shapes and the messages made from them: the text
  // must be exactly what stringifying toContractJson's object gives, key order included.
  for (const schema of schemaMessages) {
    it(`writes what JSON.stringify(toContractJson(...)) writes: ${schema.name}`, () => {
      fc.assert(
        fc.property(messageArbitrary(schema), (init) => {
          expect(toContractJsonText(schema, init as never)).toBe(JSON.stringify(toContractJson(schema, init as never)));
          const message = create(schema, init as never);
          expect(toContractJsonText(schema, message)).toBe(JSON.stringify(toContractJson(schema, message)));
        }),
        { seed: 20261127, numRuns: 300 },
      );
    });
  }

  it("takes the generic path for a message that is not plain", () => {
    const request = create(ServerReflectionRequestSchema, { host: "h", messageRequest: { case: "listServices", value: "*" } });
    expect(toContractJsonText(ServerReflectionRequestSchema, request)).toBe('{"host":"h","listServices":"*"}');
  });
});
