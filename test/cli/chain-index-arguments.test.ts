import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIRMATIONS, IndexUsageError, parseIndexArguments } from "../../src/cli/commands/chain-index.js";

const A = `0x${"A".repeat(40)}`;
const B = `0x${"b".repeat(40)}`;

describe("parseIndexArguments", () => {
  it("takes several --rpc in order, with the defaults beside them", async () => {
    const parsed = await parseIndexArguments(["--rpc", "http://127.0.0.1:8545", "--rpc", "https://rpc.example/v1/key"]);
    expect(parsed).toMatchObject({ rpc: ["http://127.0.0.1:8545", "https://rpc.example/v1/key"], fromBlock: 0, toBlock: null, contracts: null, metricsPort: null });
    expect(parsed.finality).toEqual({ confirmations: DEFAULT_CONFIRMATIONS });
  });

  it("reads --contracts as a list or as a file, lowercased", async () => {
    expect((await parseIndexArguments(["--rpc", "http://x", "--contracts", `${A}, ${B}`])).contracts).toEqual(new Set([A.toLowerCase(), B]));
    const dir = await mkdtemp(join(tmpdir(), "relgraph-contracts-"));
    try {
      const file = join(dir, "contracts.txt");
      await writeFile(file, `# the collections we care about\n${A}\n${B},\n`);
      expect((await parseIndexArguments(["--rpc", "http://x", "--contracts", file])).contracts).toEqual(new Set([A.toLowerCase(), B]));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("takes a mixed-case contract only with its EIP-55 checksum (EIP-55's own example), in a list or a file", async () => {
    const spelled = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
    const misspelled = "0x5aaeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
    expect((await parseIndexArguments(["--rpc", "http://x", "--contracts", spelled])).contracts).toEqual(new Set([spelled.toLowerCase()]));
    const listed = await parseIndexArguments(["--rpc", "http://x", "--contracts", `${B},${misspelled}`]).catch((caught: unknown) => caught);
    expect(listed).toBeInstanceOf(IndexUsageError);
    expect((listed as Error).message).toBe(`--contracts: "${misspelled}" has a wrong EIP-55 checksum (mixed case must match it; or write it in one case)`);
    const dir = await mkdtemp(join(tmpdir(), "relgraph-contracts-"));
    try {
      const file = join(dir, "contracts.txt");
      await writeFile(file, `${spelled}\n${misspelled}\n`);
      const filed = await parseIndexArguments(["--rpc", "http://x", "--contracts", file]).catch((caught: unknown) => caught);
      expect((filed as Error).message).toBe(`${file}: "${misspelled}" has a wrong EIP-55 checksum (mixed case must match it; or write it in one case)`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.each([
    [[], /--rpc URL is required/],
    [["--rpc", "ws://x"], /http/],
    [["--rpc", "http://x", "--from-block", "-1"], /--from-block/],
    [["--rpc", "http://x", "--from-block", "9", "--to-block", "3"], /--to-block/],
    [["--rpc", "http://x", "--confirmations", "2", "--finalized"], /exclude/],
    [["--rpc", "http://x", "--confirmations", "many"], /--confirmations/],
    [["--rpc", "http://x", "--metrics-port", "70000"], /--metrics-port/],
    [["--rpc", "http://x", "--contracts", "/no/such/file"], /neither a list of addresses nor a readable file/],
    [["--rpc", "http://x", "--frm-block", "3"], /Unknown option/],
  ])("refuses %j", async (argv, message) => {
    const error = await parseIndexArguments(argv).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IndexUsageError);
    expect((error as Error).message).toMatch(message);
  });
});
