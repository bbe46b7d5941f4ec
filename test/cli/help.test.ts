import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { RELGRAPH_CLI } from "../support/keynodes.js";

/**
 * `relgraph --help` lists every command with a short synopsis; each command's own `--help` starts with
 * its full usage line. A user reads the first and types what it says, so the two must agree: the
 * synopsis may leave optional groups out, but what it shows must be spelled as the usage spells it
 * (an option shown bare in one and bracketed in the other misleads), and nothing the usage requires
 * may be missing (`ingest`'s `| -` for stdin).
 */

const run = promisify(execFile);

async function help(...args: string[]): Promise<string> {
  return (await run(process.execPath, [RELGRAPH_CLI, ...args, "--help"])).stdout;
}

/** A usage line's units: each bracketed group whole, every other word alone; a `<` redirect ends it. */
function units(usage: string): string[] {
  const found: string[] = usage.match(/\[[^\]]*\]|\S+/g) ?? [];
  const redirect = found.indexOf("<");
  return redirect === -1 ? found : found.slice(0, redirect);
}

describe("relgraph --help", () => {
  it("shows each command's synopsis as that command's own usage line spells it", { timeout: 60_000 }, async () => {
    const overview = await help();
    const synopses = [...overview.matchAll(/^ {2}([a-z]+)((?: ?\S)*)/gm)].map((m) => ({ command: m[1]!, synopsis: `${m[1]}${m[2]}` }));
    expect(synopses.map((s) => s.command)).toEqual(["serve", "ingest", "follow", "index", "generate", "keys", "keygen", "keynode", "decrypt", "eval"]);
    for (const { command, synopsis } of synopses) {
      const usage = /^Usage: relgraph (.*)$/m.exec(await help(command))?.[1] ?? "";
      const full = units(usage);
      const shown = units(synopsis);
      for (const unit of shown) expect(full, `${command}: "${unit}" of the overview is not in "${usage}"`).toContain(unit);
      const required = full.filter((unit) => !unit.startsWith("[") && !unit.startsWith("<"));
      for (const unit of required) expect(shown, `${command}: the overview leaves out "${unit}" of "${usage}"`).toContain(unit);
    }
  });
});
