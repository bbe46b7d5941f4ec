import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { finished } from "node:stream/promises";
import { parseArgs } from "node:util";
import type { CommandIo } from "../io.js";
import { DatasetFormatError, isGraphTool, readGraphTool, readNostrSocialGraph, toJsonLines } from "../../eval/datasets.js";
import { LinkPredDataError, runLinkPrediction, type LinkPredReport } from "../../eval/linkpred.js";
import { METRICS, type Estimate } from "../../eval/metrics.js";

const HELP = `Usage: relgraph eval linkpred|convert [options]

Commands:
  linkpred --data FILE.jsonl ...   held-out link prediction: how well recommendations find hidden edges
  convert IN --out FILE.jsonl      convert a graph-tool .gt(.gz) file or a nostr-social-graph
                                   socialGraph.bin to relgraph JSON Lines
`;

const LINKPRED_HELP = `Usage: relgraph eval linkpred --data FILE.jsonl ... [--hide 0.1] [--seeds 5] [--k 10]
                             [--follows] [--users N] [--bootstrap N] [--json FILE]

Per seed, hides a random share of the friend edges (or, with --follows, of the follow edges), loads
the rest into an embedded store, and asks MultiDimensionalRecommendation, through the service
implementation, for each user with a hidden edge. The same users are ranked on the same split by
the baselines (random, preferential attachment, common neighbours, Jaccard, Adamic-Adar, resource
allocation, personalized PageRank). Prints Precision@k, Recall@k, NDCG@k, MRR, Hits@50 and AUC per
method with 95% bootstrap intervals, and the 2-hop ceiling.

Options:
  --data FILE      JSON Lines in the ingestion format (repeatable; loaded as one graph)
  --hide F         share of edges hidden per seed, between 0 and 1 (default 0.1)
  --seeds N        number of random splits (default 5)
  --k N            cut-off of Precision, Recall and NDCG (default 10)
  --follows        hide follow edges, predicted for the follower, instead of friend edges
  --users N        evaluate at most N users per seed, sampled (default: all with a hidden edge)
  --bootstrap N    bootstrap resamples per interval (default 1000)
  --json FILE      also write the report as JSON
  --validation     evaluate on a validation split: each seed's test edges are removed unseen and
                   the hidden edges drawn from the rest (for choosing weights)
  --tune B,B,...   also rank by the sum of degree^-B over common neighbours, one row per B
  --explore        also rank by that sum (B 0.75, the served one) times a prior on the candidate's
                   degree, and with local-path (3-step) evidence, a row per setting
  --first-hop-cap N  serve with this first-hop cap instead of the default (RECOMMEND_FIRST_HOP_CAP),
                   to measure what a cap costs against the row without one
  -h, --help       show this help
`;

const CONVERT_HELP = `Usage: relgraph eval convert IN --out FILE.jsonl [--as friends|follows] [--name NAME]

Reads a graph-tool binary graph (.gt or .gt.gz) or a nostr-social-graph snapshot (socialGraph.bin)
and writes relgraph JSON Lines: a user per node (relationId n<index>, one derived address), then
friend records (the default for graph-tool files, direction dropped) or follow records (the
default for Nostr).
`;

/** `relgraph eval ...`; argv holds the arguments after "eval". Resolves with the exit code. */
export async function runEval(argv: string[], io: CommandIo): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "linkpred") return runLinkPred(rest, io);
  if (command === "convert") return runConvert(rest, io);
  if (command === undefined || command === "--help" || command === "-h") {
    io.stdout.write(HELP);
    return command === undefined ? 2 : 0;
  }
  io.stderr.write(`relgraph eval: unknown command "${command}"\n\n${HELP}`);
  return 2;
}

async function runLinkPred(argv: string[], io: CommandIo): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      options: {
        data: { type: "string", multiple: true },
        hide: { type: "string", default: "0.1" },
        seeds: { type: "string", default: "5" },
        k: { type: "string", default: "10" },
        follows: { type: "boolean" },
        users: { type: "string", default: "0" },
        bootstrap: { type: "string", default: "1000" },
        json: { type: "string" },
        validation: { type: "boolean" },
        tune: { type: "string" },
        explore: { type: "boolean" },
        "first-hop-cap": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    return usage(io, LINKPRED_HELP, (error as Error).message);
  }
  const { values } = args;
  if (values.help) {
    io.stdout.write(LINKPRED_HELP);
    return 0;
  }
  const hide = Number(values.hide);
  const seeds = Number(values.seeds);
  const k = Number(values.k);
  const maxUsers = Number(values.users);
  const resamples = Number(values.bootstrap);
  if (!values.data?.length) return usage(io, LINKPRED_HELP, "--data is required");
  if (!(hide > 0 && hide < 1)) return usage(io, LINKPRED_HELP, "--hide must be a number between 0 and 1");
  if (!Number.isInteger(seeds) || seeds < 1) return usage(io, LINKPRED_HELP, "--seeds must be a positive integer");
  if (!Number.isInteger(k) || k < 1 || k > 500) return usage(io, LINKPRED_HELP, "--k must be an integer from 1 to 500");
  if (!Number.isInteger(maxUsers) || maxUsers < 0) return usage(io, LINKPRED_HELP, "--users must be a non-negative integer");
  if (!Number.isInteger(resamples) || resamples < 0) return usage(io, LINKPRED_HELP, "--bootstrap must be a non-negative integer");
  const firstHopCap = values["first-hop-cap"] === undefined ? undefined : Number(values["first-hop-cap"]);
  if (firstHopCap !== undefined && !(Number.isInteger(firstHopCap) && firstHopCap >= 1)) {
    return usage(io, LINKPRED_HELP, "--first-hop-cap must be a positive integer");
  }

  let report: LinkPredReport;
  try {
    report = await runLinkPrediction({
      files: values.data,
      edges: values.follows ? "follows" : "friends",
      hide,
      seeds,
      k,
      maxUsers,
      resamples,
      validation: values.validation ?? false,
      tuneExponents: values.tune?.split(",").map(Number) ?? [],
      explore: values.explore ?? false,
      firstHopCap,
      onProgress: ({ seed, done, total, perSecond }) =>
        io.stderr.write(`seed ${seed}/${seeds}: ${done}/${total} users, ${perSecond.toFixed(0)} users/s\n`),
    });
  } catch (error) {
    if (error instanceof LinkPredDataError) {
      io.stderr.write(`relgraph eval linkpred: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  io.stdout.write(formatReport(report));
  if (values.json) await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
  return 0;
}

/** The report as Markdown: a line of context, a table of methods × metrics, the ceiling and the ratios. */
export function formatReport(report: LinkPredReport): string {
  const k = report.k;
  const headers = [`P@${k}`, `R@${k}`, `NDCG@${k}`, "MRR", "Hits@50", "AUC"];
  const lines = [
    `${report.files.join(", ")}: ${report.nodes} users, ${report.edgeCount} ${report.edges === "friends" ? "friend" : "follow"} edges; ` +
      `${report.seeds} seed(s) hiding ${report.hide} of them (${report.hiddenEdges} in all); ${report.users} users evaluated; ${report.seconds.toFixed(0)} s`,
    "",
    `| method | ${headers.join(" | ")} |`,
    `|---|${headers.map(() => "---").join("|")}|`,
    ...report.methods.map((row) => `| ${row.name} | ${METRICS.map((metric) => interval(row.metrics[metric])).join(" | ")} |`),
    "",
    `2-hop ceiling (hidden edges whose ends share a neighbour): ${interval(report.twoHopCeiling)}`,
    `Recall@${k}, relgraph / Adamic-Adar: ${interval(report.recallVsAdamicAdar, 2)}`,
    `Recall@${k} kept when hubs are skipped (no member budget / no bounds): ${interval(report.recallKeptByHubSkip, 4)}`,
    `Recall@${k} kept by all bounds as served (relgraph / no bounds): ${interval(report.recallKeptByBounds, 4)}`,
    `Recall@${k} kept by the first-hop cap of ${report.firstHopCap} (relgraph / no first-hop cap; ${report.usersOverFirstHopCap} of the users evaluated are over it): ${interval(report.recallKeptByFirstHopCap, 4)}`,
    "",
  ];
  return lines.join("\n");
}

function interval(estimate: Estimate, digits = 3): string {
  return `${estimate.mean.toFixed(digits)} (${estimate.low.toFixed(digits)}–${estimate.high.toFixed(digits)})`;
}

async function runConvert(argv: string[], io: CommandIo): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { out: { type: "string" }, as: { type: "string" }, name: { type: "string" }, help: { type: "boolean", short: "h" } },
    });
  } catch (error) {
    return usage(io, CONVERT_HELP, (error as Error).message);
  }
  const { values, positionals } = args;
  if (values.help) {
    io.stdout.write(CONVERT_HELP);
    return 0;
  }
  if (positionals.length !== 1 || !values.out) return usage(io, CONVERT_HELP, "one input file and --out are required");
  if (values.as !== undefined && values.as !== "friends" && values.as !== "follows") return usage(io, CONVERT_HELP, "--as is friends or follows");
  const input = positionals[0]!;
  const bytes = await readFile(input);
  let graph;
  try {
    graph = isGraphTool(bytes) ? readGraphTool(bytes) : readNostrSocialGraph(bytes);
  } catch (error) {
    if (!(error instanceof DatasetFormatError)) throw error;
    io.stderr.write(`relgraph eval convert: ${input}: ${error.message}\n`);
    return 1;
  }
  const as = (values.as as "friends" | "follows" | undefined) ?? (graph.directed && !isGraphTool(bytes) ? "follows" : "friends");
  const name = values.name ?? input.replace(/^.*\//, "").replace(/\..*$/, "");
  const out = createWriteStream(values.out);
  let lines = 0;
  for (const line of toJsonLines(graph, as, name)) {
    lines++;
    if (!out.write(`${line}\n`)) await once(out, "drain");
  }
  out.end();
  await finished(out);
  io.stderr.write(`${input}: ${graph.nodes} nodes, ${graph.sources.length} edges (${graph.directed ? "directed" : "undirected"}) → ${lines} records as ${as}\n`);
  return 0;
}

function usage(io: CommandIo, help: string, message: string): number {
  io.stderr.write(`${message}\n\n${help}`);
  return 2;
}
