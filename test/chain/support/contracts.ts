import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Interface } from "ethers";
import type { TestAnvil } from "./anvil.js";

/*
 * The test contracts (contracts/*.sol, written for these tests) compiled with solc-js, and a thin
 * way to deploy and call them through anvil's unlocked accounts: eth_sendTransaction, which anvil
 * mines at once, one block per transaction unless mining is paused.
 */

// solc-js ships no type declarations; this is the one entry point used.
const solc = createRequire(import.meta.url)("solc") as { compile(input: string): string };

/** The test contracts by name. */
export type ContractName = "Collectible" | "MultiToken" | "Coin" | "Guestbook";
const NAMES: readonly ContractName[] = ["Collectible", "MultiToken", "Coin", "Guestbook"];

interface Compiled {
  abi: Interface;
  bytecode: string;
}

let compiled: Map<ContractName, Compiled> | null = null;

/** Compiles every test contract once per process. */
export function compileContracts(): Map<ContractName, Compiled> {
  if (compiled) return compiled;
  const sources = Object.fromEntries(
    NAMES.map((name) => [`${name}.sol`, { content: readFileSync(fileURLToPath(new URL(`./contracts/${name}.sol`, import.meta.url)), "utf8") }]),
  );
  const input = { language: "Solidity", sources, settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } } };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((error) => error.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((error) => error.formattedMessage).join("\n"));
  compiled = new Map(
    NAMES.map((name) => {
      const contract = output.contracts[`${name}.sol`]![name]!;
      return [name, { abi: new Interface(contract.abi as never), bytecode: `0x${contract.evm.bytecode.object}` }];
    }),
  );
  return compiled;
}

/** A deployed test contract. */
export interface Deployed {
  name: ContractName;
  /** Lowercase address. */
  address: string;
  /** Sends a transaction from `from` calling `method`; resolves with its hash once mined (when mining is on). */
  send(from: string, method: string, args?: unknown[]): Promise<string>;
  /** Reads a view method at a block (latest by default); resolves with its first result. */
  read<T = bigint>(method: string, args?: unknown[], blockTag?: string): Promise<T>;
}

/** anvil's funded, unlocked accounts (lowercase). */
export async function accounts(anvil: TestAnvil): Promise<string[]> {
  return (await anvil.rpc<string[]>("eth_accounts")).map((account) => account.toLowerCase());
}

/** Deploys a test contract from `from`. */
export async function deploy(anvil: TestAnvil, name: ContractName, from: string): Promise<Deployed> {
  const { abi, bytecode } = compileContracts().get(name)!;
  const hash = await anvil.rpc<string>("eth_sendTransaction", [{ from, data: bytecode, gas: "0x500000" }]);
  const receipt = await waitReceipt(anvil, hash);
  const address = (receipt.contractAddress as string).toLowerCase();
  return {
    name,
    address,
    async send(sender, method, args = []) {
      return anvil.rpc<string>("eth_sendTransaction", [{ from: sender, to: address, data: abi.encodeFunctionData(method, args), gas: "0x200000" }]);
    },
    async read<T>(method: string, args: unknown[] = [], blockTag = "latest") {
      const answer = await anvil.rpc<string>("eth_call", [{ to: address, data: abi.encodeFunctionData(method, args) }, blockTag]);
      return abi.decodeFunctionResult(method, answer)[0] as T;
    },
  };
}

/** The receipt of a mined transaction (mining a block first when anvil's automine is off). */
export async function waitReceipt(anvil: TestAnvil, hash: string): Promise<Record<string, unknown>> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const receipt = await anvil.rpc<Record<string, unknown> | null>("eth_getTransactionReceipt", [hash]);
    if (receipt) {
      if (receipt.status !== "0x1") throw new Error(`transaction ${hash} reverted`);
      return receipt;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`transaction ${hash} was not mined`);
}
