import { parseArgs } from "node:util";
import { DEFAULT_BACKFILL, measureChainBackfill } from "../measurements/chain-backfill.js";
import { installCleanup } from "../processes/processes.js";

/*
 * The chain backfill measurement alone (measurements/chain-backfill.ts; `npm run bench -- --only
 * chain` runs it beside the freshness), with the history's shape and the indexer's unit to vary:
 *
 *   npm run build && node dist/bench/tools/chain-backfill.js [--transactions N] [--per-block N] [--seed S]
 */

const USAGE = `usage: node dist/bench/tools/chain-backfill.js [options]
  --transactions N   transactions of the generated history (default 100000)
  --users N          addresses that send, receive and hold (default ${DEFAULT_BACKFILL.users})
  --per-block N      transactions per block (default ${DEFAULT_BACKFILL.perBlock})
  --unit-blocks N    relgraph index --unit-blocks (default its own)
  --seed S           history seed (default ${DEFAULT_BACKFILL.seed})
`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      transactions: { type: "string", default: "100000" },
      users: { type: "string", default: String(DEFAULT_BACKFILL.users) },
      "per-block": { type: "string", default: String(DEFAULT_BACKFILL.perBlock) },
      "unit-blocks": { type: "string" },
      seed: { type: "string", default: String(DEFAULT_BACKFILL.seed) },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const counts = { transactions: values.transactions, users: values.users, "per-block": values["per-block"], seed: values.seed, "unit-blocks": values["unit-blocks"] ?? "1" };
  const bad = Object.entries(counts).find(([, text]) => !/^[1-9]\d*$/.test(text));
  if (bad) {
    process.stderr.write(`chain-backfill: --${bad[0]} must be a positive integer, got "${bad[1]}"\n${USAGE}`);
    return 2;
  }
  installCleanup(() => {});
  const result = await measureChainBackfill({
    transactions: Number(values.transactions),
    users: Number(values.users),
    perBlock: Number(values["per-block"]),
    unitBlocks: values["unit-blocks"] === undefined ? undefined : Number(values["unit-blocks"]),
    seed: Number(values.seed),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  if (result.indexerReportedRecords !== result.records) {
    process.stderr.write(`note: relgraph index reported ${result.indexerReportedRecords} records, the derivation here ${result.records}\n`);
  }
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  return 0;
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`chain-backfill: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
