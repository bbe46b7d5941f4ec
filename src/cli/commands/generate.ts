import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { finished } from "node:stream/promises";
import { parseArgs } from "node:util";
import type { CommandIo } from "../io.js";
import { count, usage } from "../output.js";
import { DEMO_DATASET } from "../../synthetic/demo.js";

const GENERATE_HELP = `Usage: relgraph generate [--users N] [--seed S] [--mean-degree D] [--triadic-closure F] [--out FILE]

Writes a synthetic, seeded social graph as JSON Lines (the ingestion format) to stdout or FILE.
The same options always give the same output. With no options it writes the bundled demo dataset.

Options:
  --users N             number of users, u1 … uN (default ${DEMO_DATASET.users})
  --seed S              any text (default "${DEMO_DATASET.seed}")
  --mean-degree D       target mean number of friends (default ${DEMO_DATASET.meanDegree} for the demo dataset,
                        otherwise 50, at most N - 1)
  --triadic-closure F   share of friend edges that close a triangle, 0 to 1 (default 0.35)
  --out FILE            write to FILE instead of stdout
  -h, --help            show this help
`;

/** `relgraph generate [...]`; argv holds the arguments after "generate". Resolves with the exit code. */
export async function runGenerate(argv: string[], io: CommandIo): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      options: {
        users: { type: "string" },
        seed: { type: "string" },
        "mean-degree": { type: "string" },
        "triadic-closure": { type: "string" },
        out: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    return usage(io, "generate", (error as Error).message);
  }
  const { values } = args;
  if (values.help) {
    io.stdout.write(GENERATE_HELP);
    return 0;
  }
  const demo = values.users === undefined && values.seed === undefined;
  const numbers = {
    users: values.users ?? String(DEMO_DATASET.users),
    "mean-degree": values["mean-degree"] ?? (demo ? String(DEMO_DATASET.meanDegree) : undefined),
    "triadic-closure": values["triadic-closure"],
  };
  for (const [flag, value] of Object.entries(numbers)) {
    if (value !== undefined && !/^\d+(\.\d+)?$/.test(value)) return usage(io, "generate", `--${flag} must be a number, got "${value}"`);
  }
  // Loaded here, not with the module: it brings ethers (the demo wallets' addresses), which
  // `relgraph ingest` would otherwise load for nothing at every start.
  const { generateJsonLines } = await import("../../synthetic/generate.js");
  let lines: Iterable<string>;
  try {
    lines = generateJsonLines({
      users: Number(numbers.users),
      seed: values.seed ?? DEMO_DATASET.seed,
      meanDegree: numbers["mean-degree"] === undefined ? undefined : Number(numbers["mean-degree"]),
      triadicClosure: numbers["triadic-closure"] === undefined ? undefined : Number(numbers["triadic-closure"]),
    });
  } catch (error) {
    return usage(io, "generate", (error as Error).message);
  }
  const started = performance.now();
  try {
    const out = values.out === undefined ? io.stdout : createWriteStream(values.out);
    const written = await writeChunked(out, lines);
    if (values.out !== undefined) {
      out.end();
      await finished(out);
    }
    const seconds = (performance.now() - started) / 1000;
    io.stderr.write(`generated ${count(written)} records in ${seconds.toFixed(2)} s${values.out === undefined ? "" : ` into ${values.out}`}\n`);
    return 0;
  } catch (error) {
    // A closed pipe (e.g. "| head") is the reader's choice, not a failure.
    if ((error as NodeJS.ErrnoException).code === "EPIPE") return 0;
    io.stderr.write(`relgraph generate: ${(error as Error).message}\n`);
    return 1;
  }
}

/** Writes lines in chunks of about 256 KiB, waiting whenever the stream asks to; returns the line count. */
async function writeChunked(out: NodeJS.WritableStream, lines: Iterable<string>): Promise<number> {
  let chunk = "";
  let written = 0;
  const flush = async (): Promise<void> => {
    const ok = out.write(chunk);
    chunk = "";
    if (!ok) await once(out, "drain");
  };
  for (const line of lines) {
    chunk += line;
    written++;
    if (chunk.length >= 256 * 1024) await flush();
  }
  if (chunk.length > 0) await flush();
  return written;
}
