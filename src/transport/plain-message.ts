import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";

/*
 * relgraph's hand-rolled encoders (contract-json.ts, protobuf-binary.ts) walk a message's descriptor directly instead
 * of going through protobuf-es's generic reflection, which profiles showed to be a large share of a
 * request. They handle only "plain" messages, whose every field is of a kind they know; any other
 * message takes protobuf-es's own path, so a new field of another kind stays correct, just slower.
 */

/** Scalar types whose proto3 JSON is the JavaScript value itself, and whose binary form is a 32-bit varint or fixed32. */
export const PLAIN_SCALARS: ReadonlySet<ScalarType> = new Set([
  ScalarType.STRING,
  ScalarType.BOOL,
  ScalarType.INT32,
  ScalarType.UINT32,
  ScalarType.SINT32,
  ScalarType.FIXED32,
  ScalarType.SFIXED32,
]);

const plainCache = new WeakMap<DescMessage, boolean>();

/**
 * Whether every field of the message, and of the messages it contains, is a plain scalar, a list of
 * them, a length-delimited message, or a list of those: no enums, maps, oneofs, 64-bit integers,
 * bytes, floats, groups or well-known types.
 */
export function isPlainMessage(schema: DescMessage, visiting = new Set<DescMessage>()): boolean {
  const cached = plainCache.get(schema);
  if (cached !== undefined) return cached;
  if (visiting.has(schema)) return true; // a recursive message is judged by its other fields
  visiting.add(schema);
  const plain =
    !schema.typeName.startsWith("google.protobuf.") &&
    schema.oneofs.length === 0 &&
    schema.fields.every((field: DescField) => {
      switch (field.fieldKind) {
        case "scalar":
          return PLAIN_SCALARS.has(field.scalar);
        case "message":
          return !field.delimitedEncoding && isPlainMessage(field.message, visiting);
        case "list":
          return field.listKind === "message"
            ? !field.delimitedEncoding && isPlainMessage(field.message, visiting)
            : field.listKind === "scalar" && PLAIN_SCALARS.has(field.scalar);
        default:
          return false;
      }
    });
  plainCache.set(schema, plain);
  return plain;
}
