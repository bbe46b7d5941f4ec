import { execFile } from "node:child_process";
import { builtinModules } from "node:module";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { build, type Plugin } from "esbuild";
import { describe, expect, it } from "vitest";

/**
 * Relgraph/client runs in browsers. esbuild bundles it for the browser platform with a
 * plugin that fails the build on any import of a Node built-in (with or without "node:"), and the
 * bundle must not lean on Node's globals either.
 */

const ROOT = join(import.meta.dirname, "../..");
const ENTRY = join(ROOT, "src/client/index.ts");
const NODE_BUILTINS = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** Fails the build on a Node built-in, naming who imported it. */
const noNodeImports: Plugin = {
  name: "no-node-imports",
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /.*/ }, (args) => {
      if (NODE_BUILTINS.has(args.path) || args.path.startsWith("node:")) {
        return { errors: [{ text: `${args.importer} imports the Node built-in "${args.path}"` }] };
      }
      return undefined;
    });
  },
};

async function bundle(entry: string): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    plugins: [noNodeImports],
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}

describe("relgraph/client in a browser bundle", () => {
  it("bundles for the browser with no Node built-in and no Node global", async () => {
    const code = await bundle(ENTRY);
    expect(code).toContain("createRelgraphClient");
    // ArrayBuffer is fine; a bare Buffer, require or __dirname is not. process.env reads are guarded by typeof in protobuf-es.
    expect(code.match(/(?<![\w$.])(Buffer|require|__dirname|__filename)\b(?!\s*:)/g) ?? []).toEqual([]);
  });

  it("fails when anything in it imports a Node built-in", async () => {
    const dir = await mkdtemp(join(tmpdir(), "relgraph-bundle-"));
    try {
      const entry = join(dir, "entry.ts");
      await writeFile(entry, `export * from ${JSON.stringify(ENTRY)};\nexport { readFile } from "node:fs/promises";\n`);
      await expect(bundle(entry)).rejects.toThrow(/imports the Node built-in "node:fs\/promises"/);
      await writeFile(entry, `export * from ${JSON.stringify(ENTRY)};\nexport { createHash } from "crypto";\n`);
      await expect(bundle(entry)).rejects.toThrow(/imports the Node built-in "crypto"/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("relgraph/client's types", () => {
  it("typecheck a browser dApp that imports the package, with DOM types and no Node types (needs dist/)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "relgraph-consumer-"));
    try {
      // A dApp's own project: relgraph installed in its node_modules, resolved through package.json's exports.
      await mkdir(join(dir, "node_modules"));
      await symlink(ROOT, join(dir, "node_modules", "relgraph"), "dir");
      await writeFile(
        join(dir, "app.ts"),
        [
          'import { createRelgraphClient, eip1193Signer, type Profile } from "relgraph/client";',
          "declare const ethereum: Parameters<typeof eip1193Signer>[0];",
          "export async function run(): Promise<Profile> {",
          '  const client = createRelgraphClient({ baseUrl: "https://relgraph.example", apiKey: "k", protocol: "connect" });',
          "  const signer = await eip1193Signer(ethereum);",
          '  return client.decryptedProfile({ address: signer.address }, await client.authorize("profile", signer));',
          "}",
        ].join("\n"),
      );
      await writeFile(
        join(dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            noEmit: true,
            strict: true,
            target: "ES2022",
            module: "NodeNext",
            moduleResolution: "NodeNext",
            lib: ["ES2022", "DOM"],
            types: [],
            skipLibCheck: false,
          },
          files: ["app.ts"],
        }),
      );
      const tsc = join(ROOT, "node_modules/typescript/bin/tsc");
      const result = await promisify(execFile)(process.execPath, [tsc, "-p", join(dir, "tsconfig.json")]).then(
        () => "",
        (error: { stdout?: string }) => error.stdout ?? String(error),
      );
      expect(result).toBe("");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
