import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { Interface } from "ethers";

/*
 * The contracts the chain indexer is measured and tested on (contracts/*.sol: a minimal ERC-721,
 * ERC-1155 and ERC-20, and a plain contract that accounts call), compiled with solc-js.
 */

// solc-js ships no type declarations; this is the one entry point used.
const solc = createRequire(import.meta.url)("solc") as { compile(input: string): string };

/** The contracts by name. */
export type ContractName = "Collectible" | "MultiToken" | "Coin" | "Guestbook";
export const CONTRACT_NAMES: readonly ContractName[] = ["Collectible", "MultiToken", "Coin", "Guestbook"];

/** A compiled contract. */
export interface CompiledContract {
  abi: Interface;
  /** Creation bytecode, 0x-hex. */
  bytecode: string;
}

/** Where the sources are: beside this module in the repository, whether it runs from bench/ or dist/bench/. */
function sourceDir(): string {
  const here = path.dirname(new URL(import.meta.url).pathname);
  const inDist = here.split(path.sep).includes("dist");
  return inDist ? path.resolve(here, "../../../bench/workload/contracts") : path.resolve(here, "contracts");
}

let compiled: Map<ContractName, CompiledContract> | null = null;

/** Compiles every contract, once per process. */
export function compileContracts(): Map<ContractName, CompiledContract> {
  if (compiled) return compiled;
  const dir = sourceDir();
  const sources = Object.fromEntries(CONTRACT_NAMES.map((name) => [`${name}.sol`, { content: readFileSync(path.join(dir, `${name}.sol`), "utf8") }]));
  const input = { language: "Solidity", sources, settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } } };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((error) => error.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((error) => error.formattedMessage).join("\n"));
  compiled = new Map(
    CONTRACT_NAMES.map((name) => {
      const contract = output.contracts[`${name}.sol`]![name]!;
      return [name, { abi: new Interface(contract.abi as never), bytecode: `0x${contract.evm.bytecode.object}` }];
    }),
  );
  return compiled;
}
