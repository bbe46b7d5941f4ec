import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { RELGRAPH_CLI } from "../support/keynodes.js";

/** An operator's basics: `relgraph --version`, and a package that holds what a user needs. */

const run = promisify(execFile);
const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
  version: string;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  dependencies: Record<string, string>;
};

describe("packaging", () => {
  it("prints the package's version for relgraph --version", async () => {
    const { stdout } = await run(process.execPath, [RELGRAPH_CLI, "--version"]);
    expect(stdout).toBe(`${pkg.version}\n`);
  });

  it("packs the built server, client, pages and proto, and no tests, benches or sources", { timeout: 60_000 }, async () => {
    const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { maxBuffer: 64 << 20 });
    const files = ((JSON.parse(stdout) as { files: { path: string }[] }[])[0]?.files ?? []).map((f) => f.path);
    for (const needed of ["package.json", "README.md", "dist/src/cli/main.js", "dist/gen/relgraph/v1/relation_service_pb.js", "proto/relgraph/v1/relation_service.proto"]) {
      expect(files, needed).toContain(needed);
    }
    const stray = files.filter((f) => /^(test|bench|src|gen|node_modules|dist\/test|dist\/bench|scripts)\//.test(f) || f.endsWith(".ts") && !f.endsWith(".d.ts"));
    expect(stray).toEqual([]);
  });

  it("asks for @grpc/grpc-js only as an optional peer, for src/examples/grpc-client.ts", () => {
    expect(pkg.dependencies["@grpc/grpc-js"]).toBeUndefined();
    expect(pkg.peerDependencies?.["@grpc/grpc-js"]).toBeDefined();
    expect(pkg.peerDependenciesMeta?.["@grpc/grpc-js"]?.optional).toBe(true);
  });
});
