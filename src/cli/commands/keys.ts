import { parseArgs } from "node:util";
import { createApiKey, listApiKeys, revokeApiKey } from "../../auth/api-keys.js";
import { loadConfig } from "../../config/config.js";
import { createStore } from "../../store/index.js";
import type { CommandIo } from "../io.js";

const HELP = `Usage: relgraph keys create [--label TEXT] [--rate N] | list | revoke ID

Manages ApiKeys in the configured store (REDIS_URL or REDIS_CLUSTER_NODES). Only a SHA-256 hash of
each key is stored: "create" prints the key once, and it cannot be shown again.
Revocation takes effect on running servers within 5 seconds (their lookup cache).

  --rate N   requests the key may make per rate-limit window (RATE_LIMIT_WINDOW_SECONDS, default
             1 s), counted by every server on the store together; 0 means unlimited. Without it
             the key gets the servers' RATE_LIMIT.
`;

/** `relgraph keys ...`; resolves with the exit code. */
export async function runKeys(argv: string[], io: CommandIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { label: { type: "string", default: "" }, rate: { type: "string" }, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
    });
  } catch (error) {
    io.stderr.write(`relgraph keys: ${(error as Error).message}\n${HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [action, id, ...extra] = positionals;
  if (values.help) {
    io.stdout.write(HELP);
    return 0;
  }
  const known = action === "create" || action === "list" || (action === "revoke" && id !== undefined);
  if (!known || extra.length > 0 || (action !== "revoke" && id !== undefined) || (values.rate !== undefined && action !== "create")) {
    io.stderr.write(HELP);
    return 2;
  }
  if (values.rate !== undefined && (!/^\d{1,10}$/.test(values.rate) || Number(values.rate) > 1_000_000_000)) {
    io.stderr.write(`relgraph keys: --rate must be an integer from 0 to 1000000000, got "${values.rate}"\n`);
    return 2;
  }
  const config = loadConfig();
  if (!config.redisUrl && config.redisClusterNodes.length === 0) {
    io.stderr.write("relgraph keys: keys live in the store; set REDIS_URL or REDIS_CLUSTER_NODES (the embedded store is per process)\n");
    return 2;
  }
  const store = await createStore(config);
  try {
    if (action === "create") {
      const rate = values.rate === undefined ? undefined : Number(values.rate);
      const { key, record } = await createApiKey(store, values.label, rate);
      io.stdout.write(`${key}\n`);
      io.stderr.write(`created key ${record.id}${record.label ? ` (${record.label})` : ""}${rateText(record.rateLimit)}; it is shown only this once\n`);
      return 0;
    }
    if (action === "list") {
      for (const record of await listApiKeys(store)) {
        const state = record.revokedAt ? `revoked ${record.revokedAt}` : "active";
        io.stdout.write(`${record.id}\t${record.createdAt}\t${state}\t${record.rateLimit ?? "default"}\t${record.label}\n`);
      }
      return 0;
    }
    if (await revokeApiKey(store, id!)) {
      io.stdout.write(`revoked ${id}\n`);
      return 0;
    }
    io.stderr.write(`relgraph keys: no key has id "${id}"\n`);
    return 1;
  } finally {
    await store.close();
  }
}

/** How `create` reports a key's own rate limit. */
function rateText(rateLimit: number | undefined): string {
  if (rateLimit === undefined) return "";
  return rateLimit === 0 ? ", not rate-limited" : `, ${rateLimit} requests per rate-limit window`;
}
