#!/usr/bin/env node
import { setFlagsFromString } from "node:v8";
import { redactUrlsIn } from "../config/redact.js";
import { packageVersion } from "./version.js";

const HELP = `Usage: relgraph <command> [options]

Commands:
  serve [--data FILE.jsonl ...]   run the server (REST, Connect, gRPC, gRPC-Web, reflection on one port)
  ingest FILE.jsonl ... | -       validate, then load files (or stdin) into the configured Redis
  follow [--stream KEY]           apply the change feed from a Redis Stream, until stopped
  index --rpc URL [--rpc URL …]   follow an EVM chain: its contract interactions and NFT holdings
  generate [--users N] [--seed S]   write a seeded synthetic graph (or the demo data) as JSON Lines
  keys create | list | revoke ID   manage ApiKeys in the store
  keygen --threshold T --nodes N --out DIR   deal a threshold key network
  keynode --share FILE            run one key node of a network
  decrypt --server URL --sig SIG --message-file FILE   decrypt an EncryptedData read on stdin
  eval linkpred|convert           measure recommendation quality on held-out edges; convert graphs

Run "relgraph <command> --help" for a command's options, "relgraph --version" for the version.
Configuration comes from the environment; see README.md ("Configure").
`;

const io = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };

/**
 * Each command's module is loaded only when it runs: loading all of them (the server, the crypto,
 * ethers) cost every command, `relgraph ingest` of a small change file included, a noticeable start-up.
 */
const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  serve: async (argv) => (await import("./commands/serve.js")).runServe(argv, io),
  ingest: async (argv) => (await import("./commands/ingest.js")).runIngest(argv, io),
  follow: async (argv) => (await import("./commands/follow.js")).runFollow(argv, io),
  index: async (argv) => (await import("./commands/chain-index.js")).runIndex(argv, io),
  generate: async (argv) => (await import("./commands/generate.js")).runGenerate(argv, io),
  keys: async (argv) => (await import("./commands/keys.js")).runKeys(argv, io),
  keygen: async (argv) => (await import("./commands/crypto.js")).runKeygen(argv, io),
  keynode: async (argv) => (await import("./commands/crypto.js")).runKeynode(argv, io),
  decrypt: async (argv) => (await import("./commands/crypto.js")).runDecrypt(argv, io),
  eval: async (argv) => (await import("./commands/eval.js")).runEval(argv, io),
};

/**
 * Bulk loads and the server allocate many short-lived objects per record or request; a larger young
 * generation lets most of them die without being copied, which makes ingestion markedly faster. Set here,
 * before the heavy work starts, because a bin cannot pass V8 flags on its command line.
 */
const YOUNG_GENERATION_MB = 128;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "ingest" || command === "follow" || command === "index" || command === "serve") setFlagsFromString(`--max-semi-space-size=${YOUNG_GENERATION_MB}`);
  if (command === "--version" || command === "-V" || command === "version") {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(HELP);
    return command === undefined ? 2 : 0;
  }
  const run = COMMANDS[command];
  if (!run) {
    process.stderr.write(`relgraph: unknown command "${command}"\n\n${HELP}`);
    return 2;
  }
  return run(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    // serve keeps running; every other command ends here.
    if (code !== -1) process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`relgraph: ${redactUrlsIn(err instanceof Error ? err.message : String(err))}\n`);
    process.exitCode = 1;
  },
);
