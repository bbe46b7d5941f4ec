import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";

/*
 * Summarizes V8 .cpuprofile files (from `node --cpu-prof`, e.g. `npm run bench -- --cpu-prof DIR`):
 * self time by function and by module (npm package, relgraph file, Node internal), busy time only.
 *
 *   node dist/bench/tools/cpuprofile-summary.js [--top N] FILE.cpuprofile ...
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Pseudo-frames V8 records when no JavaScript runs. */
const NOT_BUSY = new Set(["(idle)", "(program)", "(root)"]);

/** Self time (µs) per function key and per module, over every given profile. */
function aggregate(profiles: readonly CpuProfile[]): {
  totalUs: number;
  idleUs: number;
  functions: Map<string, number>;
  modules: Map<string, number>;
} {
  const functions = new Map<string, number>();
  const modules = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
    profile.samples.forEach((id, i) => {
      const delta = Math.max(0, profile.timeDeltas[i] ?? 0);
      const frame = byId.get(id);
      totalUs += delta;
      if (!frame || NOT_BUSY.has(frame.functionName)) {
        idleUs += delta;
        return;
      }
      const key = `${frame.functionName || "(anonymous)"}  ${location(frame)}`;
      functions.set(key, (functions.get(key) ?? 0) + delta);
      const module = moduleOf(frame);
      modules.set(module, (modules.get(module) ?? 0) + delta);
    });
  }
  return { totalUs, idleUs, functions, modules };
}

function location(frame: CallFrame): string {
  if (!frame.url) return "(native)";
  return `${shorten(frame.url)}:${frame.lineNumber + 1}`;
}

/** A readable path: from node_modules/ or from dist/ on, or the node: URL. */
function shorten(url: string): string {
  const at = url.lastIndexOf("node_modules/");
  if (at >= 0) return url.slice(at + "node_modules/".length);
  const dist = url.indexOf("/dist/");
  if (dist >= 0) return url.slice(dist + 1);
  return url.replace(/^file:\/\//, "");
}

/** The npm package, relgraph source file, or Node internal module a frame belongs to. */
function moduleOf(frame: CallFrame): string {
  if (frame.functionName === "(garbage collector)") return "(garbage collector)";
  if (!frame.url) return "(native / builtins)";
  const at = frame.url.lastIndexOf("node_modules/");
  if (at >= 0) {
    const parts = frame.url.slice(at + "node_modules/".length).split("/");
    return parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  if (frame.url.startsWith("node:")) return frame.url;
  return shorten(frame.url);
}

function top(map: Map<string, number>, n: number, busyUs: number): string[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([key, us]) => `${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / busyUs).toFixed(1).padStart(5)} %  ${key}`);
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { top: { type: "string", default: "25" } } });
  if (positionals.length === 0) {
    process.stderr.write("Usage: node dist/bench/tools/cpuprofile-summary.js [--top N] FILE.cpuprofile ...\n");
    return 2;
  }
  const profiles = await Promise.all(positionals.map(async (file) => JSON.parse(await readFile(file, "utf8")) as CpuProfile));
  const { totalUs, idleUs, functions, modules } = aggregate(profiles);
  const busyUs = Math.max(1, totalUs - idleUs);
  const n = Number(values.top);
  const lines = [
    `${positionals.length} profile(s): ${(totalUs / 1e6).toFixed(1)} s sampled, ${(busyUs / 1e6).toFixed(1)} s busy (${((100 * busyUs) / Math.max(1, totalUs)).toFixed(0)} %); percentages are of busy time.`,
    "",
    `Top ${n} functions by self time:`,
    ...top(functions, n, busyUs),
    "",
    `Top ${n} modules by self time:`,
    ...top(modules, n, busyUs),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`cpuprofile-summary: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
