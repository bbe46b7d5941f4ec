import { execFile, execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { MutualFriendRequestSchema } from "../../gen/relgraph/v1/relation_service_pb.js";
import { freePort, start } from "../processes/processes.js";

/*
 * Issue 16's protocol ratios, with h2load as the load generator (nghttp2-client): it drives
 * HTTP/1.1, h2c and gRPC far harder than autocannon or grpc-js, so the ratios are the server's.
 * One request, mutual friends of one median × median pair, over: a plain Fastify server answering
 * the same bytes (the HTTP limit), relgraph REST over HTTP/1.1 and h2c, gRPC, and Connect (binary,
 * HTTP/1.1), measured one after the other in one run.
 */

const PLAIN = fileURLToPath(new URL("../processes/plain-server.js", import.meta.url));
const run = promisify(execFile);

/** The ratios issue 16 sets targets for: [name, numerator, denominator, target]. */
const RATIOS = [
  ["REST ÷ plain Fastify (the HTTP limit)", "rest-h1", "plain-h1", 0.5],
  ["gRPC ÷ REST", "grpc", "rest-h1", 0.9],
  ["Connect ÷ REST", "connect", "rest-h1", 0.9],
  ["REST over h2c ÷ REST over HTTP/1.1", "rest-h2c", "rest-h1", 0.9],
] as const;

/** What h2load reports for one run. */
export interface H2loadFigures {
  requestsPerSecond: number;
  succeeded: number;
  failed: number;
  /** Answers without a 2xx status. */
  non2xx: number;
}

/** One measured target: its name, h2load's figures, or why there are none. */
export interface ProtocolRun extends Partial<H2loadFigures> {
  name: (typeof RUNS)[number];
  problem?: string;
}

export interface ProtocolsResult {
  runs: ProtocolRun[];
  ratios: { name: string; value: number | null; target: number }[];
  /** Set when nothing was measured (h2load missing). */
  skipped?: string;
}

const RUNS = ["plain-h1", "rest-h1", "rest-h2c", "grpc", "connect"] as const;

/** Whether h2load can be run. */
export function h2loadInstalled(): boolean {
  try {
    execFileSync("h2load", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Reads h2load's summary: "finished in …, N req/s", the requests line and the status codes line. */
export function parseH2load(output: string): H2loadFigures {
  const rate = /^finished in [\d.]+m?s, ([\d.]+) req\/s/m.exec(output);
  const requests = /^requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed/m.exec(output);
  const statuses = /^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/m.exec(output);
  if (!rate || !requests || !statuses) throw new Error(`h2load printed no summary:\n${output.slice(-600)}`);
  return {
    requestsPerSecond: Number(rate[1]),
    succeeded: Number(requests[1]),
    failed: Number(requests[2]),
    non2xx: Number(statuses[2]) + Number(statuses[3]) + Number(statuses[4]),
  };
}

/** Options of measureProtocols. */
export interface ProtocolsContext {
  relgraph: { port: number; apiKey: string };
  /** The pair measured. */
  addresses: [string, string];
  limit: number;
  durationSeconds: number;
  warmupSeconds: number;
  work: string;
  log: (line: string) => void;
}

/** Measures every run in turn (h2load and the servers share the machine's cores). */
export async function measureProtocols(context: ProtocolsContext): Promise<ProtocolsResult> {
  if (!h2loadInstalled()) {
    return { runs: [], ratios: RATIOS.map(([name, , , target]) => ({ name, value: null, target })), skipped: "h2load is not installed (apt-get install nghttp2-client)" };
  }
  const { port, apiKey } = context.relgraph;
  const restPath = `/api/v1/mutualFriend?address=${context.addresses.join(",")}&limit=${context.limit}`;
  const message = toBinary(MutualFriendRequestSchema, create(MutualFriendRequestSchema, { address: context.addresses, limit: context.limit }));
  const grpcFrame = Buffer.alloc(5 + message.length);
  grpcFrame.writeUInt32BE(message.length, 1);
  grpcFrame.set(message, 5);
  const files = { answer: path.join(context.work, "answer.json"), grpc: path.join(context.work, "grpc.bin"), connect: path.join(context.work, "connect.bin") };
  const answer = await fetch(`http://127.0.0.1:${port}${restPath}`, { headers: { apikey: apiKey } });
  if (answer.status !== 200) throw new Error(`relgraph answered the measured request with HTTP ${answer.status}`);
  await writeFile(files.answer, Buffer.from(await answer.arrayBuffer()));
  await writeFile(files.grpc, grpcFrame);
  await writeFile(files.connect, message);
  // h2load counts statuses only, and a gRPC refusal is HTTP 200 too: the request must be one relgraph answers.
  const connect = await fetch(`http://127.0.0.1:${port}/relgraph.v1.RelationService/MutualFriend`, {
    method: "POST",
    headers: { apikey: apiKey, "content-type": "application/proto" },
    body: message,
  });
  if (connect.status !== 200) throw new Error(`relgraph answered the measured Connect request with HTTP ${connect.status}`);

  const plainPort = await freePort();
  const plain = await start(process.execPath, [PLAIN], { env: { PORT: String(plainPort), BODY_FILE: files.answer }, ready: /plain listening/ });
  const rpcUrl = `http://127.0.0.1:${port}/relgraph.v1.RelationService/MutualFriend`;
  const key = ["-H", `apikey: ${apiKey}`];
  // HTTP/1.1 has one request in flight per connection; h2c multiplexes ten on each of five.
  const h1 = ["--h1", "-c", "50"];
  const h2 = ["-c", "5", "-m", "10"];
  const args: Record<(typeof RUNS)[number], string[]> = {
    "plain-h1": [...h1, `http://127.0.0.1:${plainPort}${restPath}`],
    "rest-h1": [...h1, ...key, `http://127.0.0.1:${port}${restPath}`],
    "rest-h2c": [...h2, ...key, `http://127.0.0.1:${port}${restPath}`],
    grpc: [...h2, ...key, "-d", files.grpc, "-H", "content-type: application/grpc+proto", "-H", "te: trailers", rpcUrl],
    connect: [...h1, ...key, "-d", files.connect, "-H", "content-type: application/proto", rpcUrl],
  };
  const runs: ProtocolRun[] = [];
  try {
    for (const name of RUNS) {
      context.log(`  h2load ${name} …`);
      // h2load takes whole seconds only.
      const timing = ["-D", String(Math.max(1, Math.round(context.durationSeconds))), `--warm-up-time=${Math.max(1, Math.round(context.warmupSeconds))}`];
      try {
        const { stdout } = await run("h2load", [...timing, ...args[name]], { maxBuffer: 16 * 2 ** 20 });
        const figures = parseH2load(stdout);
        runs.push({ name, ...figures, ...(figures.failed + figures.non2xx > 0 ? { problem: `${figures.failed} failed, ${figures.non2xx} not 2xx` } : {}) });
      } catch (error) {
        runs.push({ name, problem: (error as Error).message.split("\n")[0] });
      }
    }
  } finally {
    await plain.stop();
  }
  const rateOf = (name: string) => {
    const found = runs.find((r) => r.name === name);
    return found && !found.problem ? (found.requestsPerSecond ?? null) : null;
  };
  const ratios = RATIOS.map(([name, numerator, denominator, target]) => {
    const [top, bottom] = [rateOf(numerator), rateOf(denominator)];
    return { name, value: top !== null && bottom ? top / bottom : null, target };
  });
  return { runs, ratios };
}

/** The report's section. */
export function renderProtocols(result: ProtocolsResult): string {
  const lines = ["Protocols under h2load (issue 16): mutual friend, one median × median pair"];
  if (result.skipped) return [...lines, `  not measured: ${result.skipped}`].join("\n");
  for (const r of result.runs) {
    lines.push(`  ${r.name.padEnd(9)} ${r.requestsPerSecond === undefined ? "–" : Math.round(r.requestsPerSecond).toLocaleString("en-US").padStart(8)} req/s${r.problem ? `  (${r.problem})` : ""}`);
  }
  for (const { name, value, target } of result.ratios) {
    lines.push(`  ${name.padEnd(38)} ${value === null ? "–" : value.toFixed(2)}  target ≥ ${target}  ${value === null ? "not measured" : value >= target ? "PASS" : "FAIL"}`);
  }
  return lines.join("\n");
}
