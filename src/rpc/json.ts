import { toJson, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";

/**
 * The JSON shape relgraph shows outside proto3 JSON (REST envelopes and encrypted plaintexts):
 * proto3 JSON with every implicit field present, and unset singular message fields as null, as
 * the contract's data shapes require (`social: Social|null`). Field names are the proto JSON names,
 * so the REST `data` equals the RPC's proto3 JSON apart from defaults.
 */
export function toContractJson<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): JsonObject {
  const json = toJson(schema, message, { alwaysEmitImplicit: true }) as JsonObject;
  fillNulls(schema, json);
  return json;
}

function fillNulls(schema: DescMessage, json: JsonObject): void {
  for (const field of schema.fields) {
    if (field.fieldKind === "message") {
      const value = json[field.jsonName];
      if (value === undefined) json[field.jsonName] = null;
      else fillNulls(field.message, value as JsonObject);
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      for (const item of (json[field.jsonName] ?? []) as JsonValue[]) fillNulls(field.message, item as JsonObject);
    }
  }
}
