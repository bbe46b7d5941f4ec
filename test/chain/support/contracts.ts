import { compileContracts, type ContractName } from "../../../bench/workload/chain-contracts.js";
import type { TestAnvil } from "./anvil.js";

/*
 * The test contracts (bench/workload/contracts/, shared with the bench), deployed and called through
 * anvil's unlocked accounts: eth_sendTransaction, which anvil mines at once, one block per
 * transaction unless mining is paused.
 */

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
