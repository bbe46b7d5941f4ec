import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";

/*
 * The layout shows the architecture only while imports keep to it. Each folder of src/ may import
 * the folders its rule names and no other; the rules themselves run one way, so no import runs back
 * up, and no files import each other round in a circle. A new folder needs a rule before it lands.
 */

const ROOT = path.resolve(".");
const SRC = path.join(ROOT, "src");

/** "." is the composition root (app.ts, create-server.ts, relgraph.ts); "gen" is the generated protobuf code. */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  domain: [],
  config: ["domain"],
  store: ["domain"],
  metrics: ["domain", "store"],
  auth: ["domain", "store"],
  graph: ["domain", "store"],
  ingest: ["domain", "store"],
  transport: ["domain", "auth", "gen"],
  crypto: ["domain", "config", "auth", "transport"],
  client: ["domain", "crypto", "transport", "gen"],
  rest: ["domain", "auth", "transport", "gen"],
  rpc: ["domain", "auth", "crypto", "graph", "transport", "gen"],
  synthetic: ["domain", "ingest"],
  feed: ["domain", "store", "ingest"],
  chain: ["domain", "store", "ingest"],
  eval: ["domain", "store", "graph", "ingest", "rpc", "synthetic", "gen"],
  web: ["domain", "transport", "rest", "client", "synthetic", "gen"],
  examples: ["client", "synthetic", "gen"],
  ".": ["domain", "config", "store", "metrics", "auth", "graph", "transport", "crypto", "rest", "rpc", "web", "gen"],
  cli: ["domain", "config", "store", "metrics", "auth", "ingest", "transport", "crypto", "client", "synthetic", "feed", "chain", "eval", "."],
};

/** Rules every folder must keep whatever the table says, as the house's plan puts them. */
const NEVER: readonly [string, string][] = [
  ["domain", "*"],
  ["rest", "rpc"],
  ["rest", "graph"],
  ["rest", "store"],
  ...["crypto", "feed"].flatMap((folder) => ["web", "client", "rpc", "rest"].map((forbidden): [string, string] => [folder, forbidden])),
];

interface Import {
  /** The importing file, relative to the repository. */
  file: string;
  /** The imported file, relative to the repository, as a .ts path. */
  target: string;
}

/** Every relative import (static, dynamic, type-only, re-export) of every .ts file under `dir`. */
async function importsUnder(dir: string): Promise<Import[]> {
  const found: Import[] = [];
  for (const entry of await readdir(path.join(ROOT, dir), { recursive: true })) {
    if (!entry.endsWith(".ts")) continue;
    const file = path.join(ROOT, dir, entry);
    const text = await readFile(file, "utf8");
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)) {
      const target = path.resolve(path.dirname(file), match[1]!).replace(/\.js$/, ".ts");
      found.push({ file: path.relative(ROOT, file), target: path.relative(ROOT, target) });
    }
  }
  return found;
}

/** The folder of src/ a file belongs to: "." for the composition root's files, "gen" for generated code. */
function folderOf(file: string): string {
  if (file.startsWith("gen/")) return "gen";
  const inside = path.relative("src", file).split(path.sep);
  return inside.length === 1 ? "." : inside[0]!;
}

/** The imports that cross from one folder of src/ into another, with both folders named. */
async function crossings(): Promise<(Import & { from: string; to: string })[]> {
  return (await importsUnder("src"))
    .map((imp) => ({ ...imp, from: folderOf(imp.file), to: folderOf(imp.target) }))
    .filter(({ from, to }) => from !== to);
}

/** Each circle of imports among `imports`, as its files (strongly connected parts of more than one file, or a file importing itself). */
function circles(imports: readonly Import[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { file, target } of imports) next.set(file, [...(next.get(file) ?? []), target]);
  // Tarjan's algorithm, iterative so that a long chain of imports cannot overflow the stack.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let counter = 0;
  for (const start of next.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; edge: number }[] = [{ node: start, edge: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const edges = next.get(top.node) ?? [];
      if (top.edge < edges.length) {
        const to = edges[top.edge++]!;
        if (!index.has(to)) {
          index.set(to, counter);
          low.set(to, counter++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) {
          low.set(top.node, Math.min(low.get(top.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(top.node)!));
      if (low.get(top.node) === index.get(top.node)) {
        const part: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          part.push(member);
        } while (member !== top.node);
        if (part.length > 1 || edges.includes(top.node)) found.push(part.sort());
      }
    }
  }
  return found;
}

describe("who may import whom", () => {
  it("every folder of src/ has a rule", async () => {
    const folders = (await readdir(SRC, { withFileTypes: true })).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
    expect(folders.filter((folder) => !(folder in MAY_IMPORT))).toEqual([]);
  });

  it("the rules keep the house's plan", () => {
    const broken = NEVER.filter(([folder, forbidden]) =>
      forbidden === "*" ? (MAY_IMPORT[folder] ?? []).length > 0 : (MAY_IMPORT[folder] ?? []).includes(forbidden),
    );
    expect(broken).toEqual([]);
  });

  it("the rules run one way: no folder may import, however indirectly, a folder that may import it", () => {
    const reach = (from: string, seen = new Set<string>()): Set<string> => {
      for (const to of MAY_IMPORT[from] ?? []) if (!seen.has(to)) reach(to, seen.add(to));
      return seen;
    };
    expect(Object.keys(MAY_IMPORT).filter((folder) => reach(folder).has(folder))).toEqual([]);
  });

  it("every import across folders keeps to its folder's rule", async () => {
    const offending = (await crossings())
      .filter(({ from, to }) => !(MAY_IMPORT[from] ?? []).includes(to))
      .map(({ file, target }) => `${file} -> ${target}`);
    expect(offending).toEqual([]);
  });
});

describe("no import circles", () => {
  it.each(["src", "bench"])("among the files of %s/ (and what they import)", async (dir) => {
    expect(circles(await importsUnder(dir))).toEqual([]);
  });
});
