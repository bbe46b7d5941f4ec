import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/*
 * The writing commands start in about half the time once they stop loading what they never use:
 * the protocol paths (protobuf-es, connect-es) and ethers (~450 modules, where normalizeAddress
 * needs only the EIP-55 checksum, and even its address subpath took ~0.1 s). Start-up is part of
 * every `relgraph ingest`, so a stray import costs every change file; this lists what each command
 * really loads.
 */

const run = promisify(execFile);
let dir: string;
let hook: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "relgraph-modules-"));
  // A module hook that prints every module the command resolves, one URL a line, on stderr.
  const resolveHook = path.join(dir, "hook.mjs");
  await writeFile(resolveHook, 'export async function resolve(s, c, next) { const r = await next(s, c); process._rawDebug("MODULE " + r.url); return r; }\n');
  hook = path.join(dir, "register.mjs");
  await writeFile(hook, `import { register } from "node:module";\nregister(${JSON.stringify(`file://${resolveHook}`)});\n`);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The module URLs `relgraph <command> --help` loads: its module's whole static graph. */
async function modulesLoadedBy(command: string): Promise<string[]> {
  const { stdout, stderr } = await run(process.execPath, ["--import", hook, "dist/src/cli/main.js", command, "--help"]);
  expect(stdout).toContain(`relgraph ${command}`);
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("MODULE "))
    .map((line) => line.slice("MODULE ".length));
}

describe("what the writing commands load at start-up", () => {
  it.each(["ingest", "follow"])("relgraph %s loads neither the protocol paths nor ethers", async (command) => {
    const modules = await modulesLoadedBy(command);
    // The hook works: the command's own module and the store are there.
    expect(modules.some((url) => url.endsWith("/dist/src/store/redis/write/apply.js"))).toBe(true);
    const unneeded = modules.filter(
      (url) => /\/node_modules\/@(bufbuild|connectrpc)\//.test(url) || /\/node_modules\/ethers\//.test(url) || url.includes("/dist/src/rpc/unary/") || url.includes("/dist/src/rest/h2c-handler"),
    );
    expect(unneeded).toEqual([]);
  });

  it("relgraph serve still loads them (the check can see them)", async () => {
    const modules = await modulesLoadedBy("serve");
    expect(modules.some((url) => /\/node_modules\/@bufbuild\/protobuf\//.test(url))).toBe(true);
    expect(modules.some((url) => /\/node_modules\/ethers\/lib\.esm\/ethers\.js$/.test(url))).toBe(true);
  });
});
