import { compileContracts, type ContractName } from "./chain-contracts.js";

/*
 * A generated chain history for the indexer's backfill measurement: many transactions per block,
 * sent in JSON-RPC batches to an anvil that mines only when told and sends from any address
 * (ANVIL_HISTORY_ARGS), from many generated addresses with nonces counted here. The mix: ERC-721 mints and transfers, ERC-1155 batch
 * mints and sales of a holder's whole balance, ERC-20 mints and plain calls. Ownership is tracked
 * as of the last mined block, so that no transaction reverts.
 */

/** anvil's options for a history: mining only when told, in arrival order, from any address, at no gas price. */
export const ANVIL_HISTORY_ARGS: readonly string[] = ["--no-mining", "--order", "fifo", "--gas-limit", "1000000000", "--auto-impersonate", "--base-fee", "0", "--gas-price", "0"];

/** Options of makeChainHistory. */
export interface ChainHistoryOptions {
  /** The node's JSON-RPC URL. */
  url: string;
  /** Addresses that send, receive and hold. */
  users: number;
  transactions: number;
  perBlock: number;
  seed: number;
  log?: (line: string) => void;
}

/** What was generated. */
export interface ChainHistory {
  head: number;
  transactions: number;
  contracts: Record<ContractName, string>;
}

type Call = { method: string; params: unknown[] };

async function rpc<T>(url: string, calls: Call[]): Promise<T[]> {
  const body = calls.map((call, id) => ({ jsonrpc: "2.0", id, ...call }));
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const answers = (await response.json()) as { id: number; result?: T; error?: { message: string } }[];
  return answers
    .sort((x, y) => x.id - y.id)
    .map((answer) => {
      if (answer.error) throw new Error(`${calls[answer.id]!.method}: ${answer.error.message}`);
      return answer.result as T;
    });
}

/** Seeded pseudo-random numbers (mulberry32). */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Generates the history on the node at `url`; resolves once every block is mined. */
export async function makeChainHistory(options: ChainHistoryOptions): Promise<ChainHistory> {
  const { url } = options;
  const compiled = compileContracts();
  const [accounts] = await rpc<string[]>(url, [{ method: "eth_accounts", params: [] }]);
  const users = Array.from({ length: options.users }, (_, i) => `0xa11ce${(i + 1).toString(16).padStart(35, "0")}`);
  const nonces = new Map<string, number>();
  const tx = (from: string, fields: Record<string, string>) => {
    const nonce = nonces.get(from) ?? 0;
    nonces.set(from, nonce + 1);
    return { method: "eth_sendTransaction", params: [{ from, nonce: `0x${nonce.toString(16)}`, gas: "0x7a120", gasPrice: "0x0", ...fields }] };
  };
  const mine = () => rpc(url, [{ method: "evm_mine", params: [] }]);

  const deployer = accounts![0]!.toLowerCase();
  const names: ContractName[] = ["Collectible", "MultiToken", "Coin", "Guestbook"];
  const hashes = await rpc<string>(url, names.map((name) => tx(deployer, { data: compiled.get(name)!.bytecode, gas: "0x4c4b40" })));
  await mine();
  const receipts = await rpc<{ contractAddress: string | null; status: string }>(url, hashes.map((hash) => ({ method: "eth_getTransactionReceipt", params: [hash] })));
  if (receipts.some((receipt) => receipt?.status !== "0x1")) throw new Error("a contract of the chain history failed to deploy");
  const contracts = Object.fromEntries(names.map((name, i) => [name, receipts[i]!.contractAddress!.toLowerCase()])) as Record<ContractName, string>;

  const random = prng(options.seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const call = (name: ContractName, from: string, method: string, args: unknown[]) => tx(from, { to: contracts[name], data: compiled.get(name)!.abi.encodeFunctionData(method, args) });
  /** As of the last mined block: token → owner; holder → id → amount. */
  const owners = new Map<number, string>();
  const multi = new Map<string, Map<number, number>>();
  let nextToken = 1;
  let sent = 0;
  const started = performance.now();
  while (sent < options.transactions) {
    const calls: Call[] = [];
    const usedTokens = new Set<number>();
    const usedHolders = new Set<string>();
    const after: (() => void)[] = [];
    const size = Math.min(options.perBlock, options.transactions - sent);
    const owned = [...owners.keys()];
    const holders = [...multi.keys()];
    for (let i = 0; i < size; i++) {
      const from = pick(users);
      const roll = random();
      if (roll < 0.2 && owned.length > 0) {
        const id = pick(owned);
        const owner = owners.get(id)!;
        if (!usedTokens.has(id)) {
          usedTokens.add(id);
          const to = pick(users);
          calls.push(call("Collectible", owner, "transferFrom", [owner, to, id]));
          after.push(() => owners.set(id, to));
          continue;
        }
      }
      if (roll < 0.55) {
        const id = nextToken++;
        calls.push(call("Collectible", from, "mint", [from, id]));
        after.push(() => owners.set(id, from));
      } else if (roll < 0.7) {
        const ids = [1, 2, 3, 4].filter(() => random() < 0.5);
        if (ids.length === 0) ids.push(1);
        const amounts = ids.map(() => 1 + Math.floor(random() * 3));
        calls.push(call("MultiToken", from, "mintBatch", [from, ids, amounts]));
        after.push(() => {
          const held = multi.get(from) ?? new Map<number, number>();
          ids.forEach((id, k) => held.set(id, (held.get(id) ?? 0) + amounts[k]!));
          multi.set(from, held);
        });
      } else if (roll < 0.75 && holders.length > 0) {
        // A holder sells its whole balance: its last tokens of the collection.
        const holder = pick(holders);
        if (usedHolders.has(holder)) {
          calls.push(call("Guestbook", from, "sign", []));
          continue;
        }
        usedHolders.add(holder);
        const held = [...multi.get(holder)!.entries()];
        const to = pick(users);
        calls.push(call("MultiToken", holder, "transferBatch", [to, held.map(([id]) => id), held.map(([, n]) => n)]));
        after.push(() => {
          multi.delete(holder);
          const got = multi.get(to) ?? new Map<number, number>();
          for (const [id, n] of held) got.set(id, (got.get(id) ?? 0) + n);
          multi.set(to, got);
        });
      } else if (roll < 0.85) {
        calls.push(call("Coin", from, "mint", [pick(users), 1 + Math.floor(random() * 1000)]));
      } else {
        calls.push(call("Guestbook", from, "sign", []));
      }
    }
    for (let start = 0; start < calls.length; start += 250) await rpc(url, calls.slice(start, start + 250));
    await mine();
    for (const apply of after) apply();
    sent += calls.length;
    if (options.log && Math.floor(sent / 10_000) !== Math.floor((sent - calls.length) / 10_000)) {
      options.log(`generated ${sent.toLocaleString("en-US")} transactions (${Math.round(sent / ((performance.now() - started) / 1000))}/s)`);
    }
  }
  const [head] = await rpc<string>(url, [{ method: "eth_blockNumber", params: [] }]);
  return { head: Number.parseInt(head!, 16), transactions: sent, contracts };
}
