import { toJson, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";

/**
 * The JSON shape relgraph shows outside proto3 JSON (REST envelopes and encrypted plaintexts):
 * proto3 JSON with every implicit field present, and unset singular message fields as null, as
 * the contract's data shapes require (`social: Social|null`). Field names are the proto JSON names,
 * so the REST `data` equals the RPC's proto3 JSON apart from defaults.
 */
export function toContractJson<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): JsonObject {
  return withNulls(schema, toJson(schema, message, { alwaysEmitImplicit: true }) as JsonObject);
}

/**
 * Rebuilds the object in declaration order with unset message fields as null. Rebuilding, rather
 * than adding the nulls afterwards, keeps every object's keys in one order whichever fields are set.
 */
function withNulls(schema: DescMessage, json: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const field of schema.fields) {
    const value = json[field.jsonName];
    if (field.fieldKind === "message") {
      out[field.jsonName] = value === undefined ? null : withNulls(field.message, value as JsonObject);
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      out[field.jsonName] = ((value ?? []) as JsonValue[]).map((item) => withNulls(field.message, item as JsonObject));
    } else if (value !== undefined) {
      out[field.jsonName] = value;
    }
  }
  return out;
}
