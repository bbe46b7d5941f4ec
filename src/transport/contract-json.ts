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

/**
 * JSON.stringify(toContractJson(schema, message)), written as text in one pass: an encrypted answer
 * and every REST envelope are serialised once, without building the object tree first and then
 * walking it again to stringify.
 */
export function toContractJsonText<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc> | MessageInitShape<Desc>,
): string {
  if (!isPlainMessage(schema)) return JSON.stringify(toContractJson(schema, message));
  return textWriter(schema)(message as Fields);
}

type Fields = Record<string, unknown>;
type TextWriter = (message: Fields) => string;

const textWriters = new WeakMap<DescMessage, TextWriter>();

/** The text writer of a plain message, made once per schema; nested messages find theirs when first written. */
function textWriter(schema: DescMessage): TextWriter {
  let writer = textWriters.get(schema);
  if (writer !== undefined) return writer;
  const parts = schema.fields.map((field) => {
    const key = `${JSON.stringify(field.jsonName)}:`;
    const name = field.localName;
    switch (field.fieldKind) {
      case "message": {
        const nested = field.message;
        return (message: Fields) => {
          const value = message[name];
          return key + (value == null ? "null" : textWriter(nested)(value as Fields));
        };
      }
      case "list":
        if (field.listKind === "message") {
          const item = field.message;
          return (message: Fields) => `${key}[${((message[name] ?? []) as Fields[]).map((value) => textWriter(item)(value)).join(",")}]`;
        }
        return (message: Fields) => key + JSON.stringify(message[name] ?? []);
      case "scalar": {
        const fallback = field.scalar === ScalarType.STRING ? "" : field.scalar === ScalarType.BOOL ? false : 0;
        const implicit = field.presence === FeatureSet_FieldPresence.IMPLICIT;
        return (message: Fields) => {
          const value = message[name];
          // As walk() does: an unset explicit-presence field is left out.
          if (value === undefined && !implicit) return undefined;
          return key + JSON.stringify(value ?? fallback);
        };
      }
      default:
        throw new TypeError(`${schema.typeName}.${field.name} is not a field of a plain message`);
    }
  });
  writer = (message) => {
    let text = "";
    for (const part of parts) {
      const written = part(message);
      if (written !== undefined) text = text === "" ? written : `${text},${written}`;
    }
    return `{${text}}`;
  };
  textWriters.set(schema, writer);
  return writer;
}

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
