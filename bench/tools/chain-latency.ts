import { parseArgs } from "node:util";
import { MAX_FRESHNESS_SAMPLES, measureChainFreshness } from "../measurements/chain-freshness.js";
import { installCleanup } from "../processes/processes.js";

/*
 * The chain freshness measurement alone (measurements/chain-freshness.ts; `npm run bench -- --only
 * chain` runs it beside the backfill):
 *
 *   npm run build && node dist/bench/tools/chain-latency.js [--samples N]
 */

const USAGE = `usage: node dist/bench/tools/chain-latency.js [--samples N]
  --samples N   blocks timed (default 150; at most ${MAX_FRESHNESS_SAMPLES})
`;

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { samples: { type: "string", default: "150" }, help: { type: "boolean", default: false } } });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const samples = Number(values.samples);
  if (!Number.isInteger(samples) || samples < 1) {
    process.stderr.write(`chain-latency: --samples must be a positive integer\n${USAGE}`);
    return 2;
  }
  installCleanup(() => {});
  const result = await measureChainFreshness(samples, (line) => process.stderr.write(`${line}\n`));
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  return 0;
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`chain-latency: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
