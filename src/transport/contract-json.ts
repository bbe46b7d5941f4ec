import {
  create,
  ScalarType,
  toJson,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { isPlainMessage } from "./plain-message.js";

/**
 * The JSON shape relgraph shows outside proto3 JSON (REST envelopes and encrypted plaintexts):
 * proto3 JSON with every implicit field present, and unset singular message fields as null, as
 * the contract's data shapes require (`social: Social|null`). Field names are the proto JSON names,
 * and keys come in declaration order, so the REST `data` equals the RPC's proto3 JSON apart from
 * defaults. Accepts a message or its init shape (absent fields take their defaults).
 *
 * It walks the descriptor once, writing plain values directly: the generic path (create, then
 * toJson, then a pass for nulls) was a visible share of a REST request. Messages that are not plain
 * (plain-message.ts) take the generic path, so new fields stay correct whatever their kind.
 */
export function toContractJson<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc> | MessageInitShape<Desc>,
): JsonObject {
  if (!isPlainMessage(schema)) return withNulls(schema, toJson(schema, create(schema, message as MessageInitShape<Desc>), { alwaysEmitImplicit: true }) as JsonObject);
  return walk(schema, message as Record<string, unknown>);
}

type Fields = Record<string, unknown>;

function walk(schema: DescMessage, message: Fields): JsonObject {
  const out: JsonObject = {};
  for (const field of schema.fields) {
    const value = message[field.localName];
    switch (field.fieldKind) {
      case "message":
        out[field.jsonName] = value == null ? null : walk(field.message, value as Fields);
        break;
      case "list":
        out[field.jsonName] =
          field.listKind === "message"
            ? ((value ?? []) as Fields[]).map((item) => walk(field.message, item))
            : [...((value ?? []) as JsonValue[])];
        break;
      case "scalar":
        // An explicit-presence field (proto3 `optional`) that is unset is left out, as proto3 JSON does.
        if (value === undefined && field.presence !== FeatureSet_FieldPresence.IMPLICIT) break;
        out[field.jsonName] = (value ?? (field.scalar === ScalarType.STRING ? "" : field.scalar === ScalarType.BOOL ? false : 0)) as JsonValue;
        break;
    }
  }
  return out;
}

/** The generic path's null pass: rebuilds the object in declaration order with unset singular messages as null. */
function withNulls(schema: DescMessage, json: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const field of schema.fields) {
    const value = json[field.jsonName];
    // A oneof member that is not the chosen one is absent, not null.
    if (field.fieldKind === "message" && (value !== undefined || field.oneof === undefined)) {
      out[field.jsonName] = value === undefined ? null : withNulls(field.message, value as JsonObject);
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      out[field.jsonName] = ((value ?? []) as JsonValue[]).map((item) => withNulls(field.message, item as JsonObject));
    } else if (value !== undefined) {
      out[field.jsonName] = value;
    }
  }
  return out;
}
