import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import { file_relgraph_v1_relation_service, RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";

/*
 * Random messages of relgraph's schema, built from the descriptors, for the property tests of the
 * hand-rolled encoders (transport/): a field added later is covered without touching the tests.
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
export function messageArbitrary(schema: DescMessage, depth = 0): fc.Arbitrary<Record<string, unknown>> {
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

/** The message types to cover: every response of the service first, then every other message of the file. */
export const responseSchemas = RelationService.methods.map((method) => method.output);
export const schemaMessages = [...responseSchemas, ...file_relgraph_v1_relation_service.messages.filter((m) => !responseSchemas.includes(m))];
