import { create, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { toBinaryFast } from "../../src/transport/protobuf-binary.js";
import { messageArbitrary, responseSchemas, schemaMessages } from "../support/message-arbitrary.js";

/*
 * A property test of the one-pass encoder: random messages of every message type relgraph's schema
 * declares (the five RPCs' responses and everything inside them; test/support/message-arbitrary.ts).
 * Each is encoded by toBinaryFast, as a message and as the init shape the service returns, with and
 * without reserved bytes, and compared byte for byte with protobuf-es's toBinary.
 */

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

describe("toBinaryFast on random messages", () => {
  it("covers the five RPCs' responses", () => {
    expect(responseSchemas.map((schema) => schema.name).sort()).toEqual(
      ["MultiDimensionalRecommendationResponse", "MutualContractInteractionResponse", "MutualFriendResponse", "ProfileResponse", "RelationshipGraphResponse"],
    );
  });

  for (const schema of schemaMessages) {
    it(`writes what toBinary writes: ${schema.name}`, () => {
      fc.assert(
        fc.property(messageArbitrary(schema), fc.integer({ min: 0, max: 7 }), (init, reserve) => {
          const message = create(schema, init as never);
          const reference = hex(toBinary(schema, message));
          expect(hex(toBinaryFast(schema, init as never))).toBe(reference);
          expect(hex(toBinaryFast(schema, message))).toBe(reference);
          const framed = toBinaryFast(schema, init as never, reserve);
          expect(framed.length).toBe(reserve + reference.length / 2);
          expect(hex(framed.subarray(reserve))).toBe(reference);
        }),
        { seed: 20261125, numRuns: 300 },
      );
    });
  }
});
