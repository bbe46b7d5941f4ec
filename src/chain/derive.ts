import type { ChainBlock, ChainLog } from "./answers.js";

/**
 * What one block says about the graph, before any stored state is consulted: which addresses
 * called which contracts, and how NFT balances moved. Pure: the ledger (ledger.ts) turns these
 * facts into change records against the balances it keeps.
 */

/** keccak256("Transfer(address,address,uint256)"): ERC-721 with four topics, ERC-20 with three. */
export const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
/** keccak256("TransferSingle(address,address,address,uint256,uint256)"), ERC-1155. */
export const TRANSFER_SINGLE_TOPIC = "0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62";
/** keccak256("TransferBatch(address,address,address,uint256[],uint256[])"), ERC-1155. */
export const TRANSFER_BATCH_TOPIC = "0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb";
/** The topics eth_getLogs is asked for (topic0, any of them). */
export const NFT_TOPICS: readonly string[] = [TRANSFER_TOPIC, TRANSFER_SINGLE_TOPIC, TRANSFER_BATCH_TOPIC];

/** Mints come from it and burns go to it; it is never a holder. */
export const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

/** An address and a contract: an interaction, or a holder and a collection. */
export interface AddressContract {
  address: string;
  contract: string;
}

/** A change of one holder's balance of one collection (tokens of every id together). */
export interface BalanceMove {
  contract: string;
  holder: string;
  delta: bigint;
}

/** What a block says, in the order it says it. */
export interface BlockFacts {
  number: number;
  hash: string;
  parentHash: string;
  /** Each sender and contract called in the block, once, in transaction order. */
  interactions: AddressContract[];
  /** Balance moves in log order; the zero address never appears. */
  moves: BalanceMove[];
}

/** The contracts a deployment indexes (lowercase), or null for every contract. */
export type ContractFilter = ReadonlySet<string> | null;

/**
 * The facts of one block. `isContract` says whether a transaction's `to` held code at that block;
 * `logs` are the block's logs (any order; they are sorted by logIndex).
 */
export function deriveBlock(block: ChainBlock, logs: readonly ChainLog[], isContract: (address: string) => boolean, filter: ContractFilter): BlockFacts {
  const interactions: AddressContract[] = [];
  const seen = new Set<string>();
  for (const tx of block.transactions) {
    if (tx.to === null || (filter !== null && !filter.has(tx.to)) || !isContract(tx.to)) continue;
    const key = `${tx.from}|${tx.to}`;
    if (seen.has(key)) continue;
    seen.add(key);
    interactions.push({ address: tx.from, contract: tx.to });
  }
  const moves: BalanceMove[] = [];
  for (const log of [...logs].sort((x, y) => x.logIndex - y.logIndex)) {
    if (filter !== null && !filter.has(log.address)) continue;
    for (const transfer of nftTransfers(log)) {
      if (transfer.amount === 0n || transfer.from === transfer.to) continue;
      if (transfer.from !== ZERO_ADDRESS) moves.push({ contract: log.address, holder: transfer.from, delta: -transfer.amount });
      if (transfer.to !== ZERO_ADDRESS) moves.push({ contract: log.address, holder: transfer.to, delta: transfer.amount });
    }
  }
  return { number: block.number, hash: block.hash, parentHash: block.parentHash, interactions, moves };
}

/** One NFT transfer a log records: tokens of the log's collection moving between two addresses. */
export interface NftTransfer {
  from: string;
  to: string;
  /** How many tokens (of every id in the log together). */
  amount: bigint;
}

/**
 * The NFT transfers a log records: one for an ERC-721 Transfer (four topics) or an ERC-1155
 * TransferSingle, the batch's total for a TransferBatch; none for anything else, an ERC-20
 * Transfer (three topics) included. A log whose data does not decode (a contract that emits a
 * malformed event) records none.
 */
export function nftTransfers(log: Pick<ChainLog, "topics" | "data">): NftTransfer[] {
  const [topic0, ...indexed] = log.topics;
  if (topic0 === TRANSFER_TOPIC) {
    if (indexed.length !== 3 || log.data !== "0x") return [];
    const [from, to] = indexed.map(topicAddress);
    return from && to ? [{ from, to, amount: 1n }] : [];
  }
  if (topic0 === TRANSFER_SINGLE_TOPIC || topic0 === TRANSFER_BATCH_TOPIC) {
    if (indexed.length !== 3) return [];
    const from = topicAddress(indexed[1]!);
    const to = topicAddress(indexed[2]!);
    if (!from || !to) return [];
    const words = dataWords(log.data);
    if (words === null) return [];
    const amount = topic0 === TRANSFER_SINGLE_TOPIC ? singleAmount(words) : batchAmount(words);
    return amount === null ? [] : [{ from, to, amount }];
  }
  return [];
}

/** An indexed address topic (twelve zero bytes, then the address), or null when it is not one. */
function topicAddress(topic: string): string | null {
  return /^0x0{24}[0-9a-f]{40}$/.test(topic) ? `0x${topic.slice(26)}` : null;
}

/** ABI data as 32-byte words, or null when its length is not a whole number of words. */
function dataWords(data: string): bigint[] | null {
  const hex = data.slice(2);
  if (hex.length % 64 !== 0) return null;
  const words: bigint[] = [];
  for (let at = 0; at < hex.length; at += 64) words.push(BigInt(`0x${hex.slice(at, at + 64)}`));
  return words;
}

/** TransferSingle's data: (id, value). */
function singleAmount(words: readonly bigint[]): bigint | null {
  return words.length === 2 ? words[1]! : null;
}

/** TransferBatch's data: (uint256[] ids, uint256[] values), two dynamic arrays of equal length; the values' sum. */
function batchAmount(words: readonly bigint[]): bigint | null {
  const array = (offset: bigint | undefined): bigint[] | null => {
    if (offset === undefined || offset % 32n !== 0n) return null;
    const at = Number(offset / 32n);
    const length = words[at];
    if (length === undefined || length > BigInt(words.length)) return null;
    const end = at + 1 + Number(length);
    return end <= words.length ? words.slice(at + 1, end) : null;
  };
  const ids = array(words[0]);
  const values = array(words[1]);
  if (ids === null || values === null || ids.length !== values.length) return null;
  return values.reduce((sum, value) => sum + value, 0n);
}
