import { create, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServerReflectionRequestSchema } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { MutualFriendResponseSchema, ProfileSchema, UserInfoSchema } from "../../gen/relgraph/v1/relation_service_pb.js";
import { toContractJson } from "../../src/transport/contract-json.js";

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
