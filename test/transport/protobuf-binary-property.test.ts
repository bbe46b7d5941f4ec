import { create, toBinary, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { file_relgraph_v1_relation_service, RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { toBinaryFast } from "../../src/transport/protobuf-binary.js";

/*
 * A property test of the one-pass encoder: random messages of every message type relgraph's schema
 * declares (the five RPCs' responses and everything inside them), built from their descriptors, so
 * that a field added later is covered without touching this file. Each is encoded by toBinaryFast,
 * as a message and as the init shape the service returns, with and without reserved bytes, and
 * compared byte for byte with protobuf-es's toBinary.
 */

/** Any UTF-16 code unit, lone surrogates included, weighted towards the edges where encodings differ. */
const codeUnit = fc.oneof(
  fc.integer({ min: 0x00, max: 0x7f }),
  fc.integer({ min: 0x80, max: 0x7ff }),
  fc.integer({ min: 0x800, max: 0xffff }),
  fc.constantFrom(0x00, 0x7f, 0x80, 0xff, 0x7ff, 0x800, 0xd7ff, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000, 0xfffd, 0xffff),
);
/** Strings: empty, ASCII, any code units, valid astral pairs, and some long enough for multi-byte length varints. */
const text = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 4, arbitrary: fc.array(codeUnit, { maxLength: 12 }).map((units) => String.fromCharCode(...units)) },
  { weight: 2, arbitrary: fc.array(fc.integer({ min: 0x10000, max: 0x10ffff }), { maxLength: 4 }).map((points) => String.fromCodePoint(...points)) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 100, max: 20_000 }), fc.constantFrom("a", "é", "名", "🦊", "\ud800")).map(([n, unit]) => unit.repeat(n)) },
);
const int32 = fc.oneof(
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  fc.constantFrom(0, -0, 1, -1, 127, 128, 16_383, 16_384, 2 ** 21, 2 ** 28, 2 ** 31 - 1, -(2 ** 31)),
);

function scalarArbitrary(field: DescField & { scalar: unknown }): fc.Arbitrary<unknown> {
  const type = field.scalar as number;
  // relgraph's schema has strings and int32 only (9 and 5 in protobuf's numbering); anything else must be added here.
  if (type === 9) return text;
  if (type === 5) return int32;
  throw new Error(`no arbitrary for scalar type ${type} of ${field.parent.typeName}.${field.name}`);
}

const arbitraries = new Map<string, fc.Arbitrary<Record<string, unknown>>>();

/**
 * Init shapes of `schema`: each field absent, or present with a random value; a singular message
 * also as undefined or null (how the service leaves out social and game), a proto3 optional as undefined.
 */
function messageArbitrary(schema: DescMessage, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const cached = arbitraries.get(schema.typeName);
  if (cached !== undefined && depth === 0) return cached;
  const parts: Record<string, fc.Arbitrary<unknown>> = {};
  for (const field of schema.fields) {
    let value: fc.Arbitrary<unknown>;
    switch (field.fieldKind) {
      case "scalar":
        value = scalarArbitrary(field);
        if (field.presence !== FeatureSet_FieldPresence.IMPLICIT) value = fc.option(value, { nil: undefined });
        break;
      case "message":
        value = depth > 3 ? fc.constant(undefined) : fc.oneof(fc.constantFrom(undefined, null), messageArbitrary(field.message, depth + 1));
        break;
      case "list":
        if (field.listKind === "message") value = depth > 3 ? fc.constant([]) : fc.array(messageArbitrary(field.message, depth + 1), { maxLength: 6 });
        else if (field.listKind === "scalar") value = fc.array(scalarArbitrary(field), { maxLength: 6 });
        else throw new Error(`no arbitrary for ${schema.typeName}.${field.name}`);
        break;
      default:
        throw new Error(`no arbitrary for ${schema.typeName}.${field.name}`);
    }
    parts[field.localName] = value;
  }
  const arbitrary = fc.record(parts, { requiredKeys: [] });
  if (depth === 0) arbitraries.set(schema.typeName, arbitrary);
  return arbitrary;
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

/** The message types to cover: every response of the service first, then every other message of the file. */
const responses = RelationService.methods.map((method) => method.output);
const schemas = [...responses, ...file_relgraph_v1_relation_service.messages.filter((m) => !responses.includes(m))];

describe("toBinaryFast on random messages", () => {
  it("covers the five RPCs' responses", () => {
    expect(responses.map((schema) => schema.name).sort()).toEqual(
      ["MultiDimensionalRecommendationResponse", "MutualContractInteractionResponse", "MutualFriendResponse", "ProfileResponse", "RelationshipGraphResponse"],
    );
  });

  for (const schema of schemas) {
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
