/**
 * The proto3 JSON of contract JSON: proto3 JSON leaves defaults out, so this drops nulls, "", 0,
 * false and empty lists, at any depth. What remains must equal the RPC response's toJson().
 */
export function withoutDefaults(value: unknown): unknown {
  if (value === null || value === "" || value === 0 || value === false) return undefined;
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.map((item) => withoutDefaults(item) ?? null);
  if (typeof value === "object") {
    const entries = Object.entries(value).flatMap(([key, item]) => {
      const kept = withoutDefaults(item);
      return kept === undefined ? [] : [[key, kept] as const];
    });
    return Object.fromEntries(entries);
  }
  return value;
}
