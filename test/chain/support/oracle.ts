import type { TestAnvil } from "./anvil.js";
import type { Deployed } from "./contracts.js";

/*
 * What the graph should hold, built from the chain without the indexer's code: holdings from the
 * contracts' own balanceOf, interactions from every transaction of every block (raw JSON-RPC) whose
 * `to` is one of the deployed test contracts.
 */

/** The expected graph as sorted lines "interaction ADDRESS CONTRACT" and "nft ADDRESS CONTRACT". */
export async function chainOracle(
  anvil: TestAnvil,
  holders: readonly string[],
  contracts: { nft: Deployed; multi: Deployed; others: readonly Deployed[] },
  options: { upTo?: number; multiIds?: readonly number[] } = {},
): Promise<string[]> {
  const lines = new Set<string>();
  const tag = options.upTo === undefined ? "latest" : `0x${options.upTo.toString(16)}`;
  const head = options.upTo ?? Number.parseInt(await anvil.rpc<string>("eth_blockNumber"), 16);
  const all = [contracts.nft, contracts.multi, ...contracts.others];
  const addresses = new Set(all.map((contract) => contract.address));
  for (let n = 0; n <= head; n++) {
    const block = await anvil.rpc<{ transactions: { from: string; to: string | null }[] }>("eth_getBlockByNumber", [`0x${n.toString(16)}`, true]);
    for (const tx of block.transactions) {
      if (tx.to && addresses.has(tx.to.toLowerCase())) lines.add(`interaction ${tx.from.toLowerCase()} ${tx.to.toLowerCase()}`);
    }
  }
  for (const holder of holders) {
    if ((await contracts.nft.read("balanceOf", [holder], tag)) > 0n) lines.add(`nft ${holder} ${contracts.nft.address}`);
    let multi = 0n;
    for (const id of options.multiIds ?? [1, 2, 3]) multi += await contracts.multi.read("balanceOf", [id, holder], tag);
    if (multi > 0n) lines.add(`nft ${holder} ${contracts.multi.address}`);
  }
  return [...lines].sort();
}
