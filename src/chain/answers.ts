import { InvalidAnswerError } from "./rpc-client.js";

/**
 * The shapes the indexer reads from a node, checked field by field as they arrive: a provider that
 * answers with something malformed, or with a block other than the one asked for, is caught here
 * and its answer is never applied. Addresses and hashes come out in lowercase.
 */

/** A transaction, as far as the indexer reads it (its hash is checked, not kept). */
export interface ChainTransaction {
  from: string;
  /** null for a contract creation. */
  to: string | null;
}

/** A block with its transactions. */
export interface ChainBlock {
  number: number;
  hash: string;
  parentHash: string;
  transactions: ChainTransaction[];
}

/** A block header: what the reorg check compares. */
export type ChainHeader = Omit<ChainBlock, "transactions">;

/** One log of eth_getLogs. */
export interface ChainLog {
  address: string;
  topics: string[];
  data: string;
  blockNumber: number;
  blockHash: string;
  transactionHash: string;
  logIndex: number;
}

const HASH = /^0x[0-9a-f]{64}$/;
const ADDRESS = /^0x[0-9a-f]{40}$/;
const DATA = /^0x([0-9a-f]{2})*$/;
const QUANTITY = /^0x(0|[1-9a-f][0-9a-f]*)$/;

/**
 * What a checked value is, for the error that refuses it: the words, or a function that makes
 * them, so that the many values that pass cost no message each.
 */
type What = string | (() => string);

const say = (what: What): string => (typeof what === "string" ? what : what());

/** A hex quantity as a safe integer (block numbers, log indexes). */
export function quantity(value: unknown, what: What): number {
  if (typeof value !== "string" || !QUANTITY.test(value.toLowerCase())) throw new InvalidAnswerError(`${say(what)} is not a hex quantity: ${preview(value)}`);
  const number = Number.parseInt(value, 16);
  if (!Number.isSafeInteger(number)) throw new InvalidAnswerError(`${say(what)} is too large: ${value}`);
  return number;
}

/** A block number as a hex quantity, for params. */
export function toQuantity(number: number): string {
  return `0x${number.toString(16)}`;
}

function matching(value: unknown, pattern: RegExp, what: What): string {
  const text = typeof value === "string" ? value.toLowerCase() : null;
  if (text === null || !pattern.test(text)) throw new InvalidAnswerError(`${say(what)} is malformed: ${preview(value)}`);
  return text;
}

function object(value: unknown, what: What): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new InvalidAnswerError(`${say(what)} is not an object: ${preview(value)}`);
  return value as Record<string, unknown>;
}

/**
 * The answer to eth_getBlockByNumber(number, withTransactions) checked: it must be that block, with
 * full transactions when asked. null (a block the node does not have yet) is returned as null.
 */
export function readBlock(value: unknown, number: number, withTransactions: boolean): ChainBlock | null {
  if (value === null) return null;
  const block = object(value, `block ${number}`);
  const got = quantity(block.number, `block ${number}'s number`);
  if (got !== number) throw new InvalidAnswerError(`asked for block ${number}, got block ${got}`);
  const header = {
    number,
    hash: matching(block.hash, HASH, `block ${number}'s hash`),
    parentHash: matching(block.parentHash, HASH, `block ${number}'s parentHash`),
  };
  if (!withTransactions) return { ...header, transactions: [] };
  if (!Array.isArray(block.transactions)) throw new InvalidAnswerError(`block ${number} has no transaction list`);
  const transactions: ChainTransaction[] = [];
  for (const [i, item] of block.transactions.entries()) {
    const what = () => `block ${number}'s transaction ${i}`;
    const tx = object(item, () => `${what()} (full transactions were asked)`);
    // A blockHash equal to the block's (checked above) is well formed; any other is refused.
    if (tx.blockHash !== undefined && tx.blockHash !== null && (typeof tx.blockHash !== "string" || tx.blockHash.toLowerCase() !== header.hash)) {
      matching(tx.blockHash, HASH, () => `${what()}'s blockHash`);
      throw new InvalidAnswerError(`${what()} names another block`);
    }
    // The hash is checked though nothing derived needs it: a malformed one marks an answer not to trust.
    matching(tx.hash, HASH, () => `${what()}'s hash`);
    transactions.push({
      from: matching(tx.from, ADDRESS, () => `${what()}'s from`),
      to: tx.to === null || tx.to === undefined ? null : matching(tx.to, ADDRESS, () => `${what()}'s to`),
    });
  }
  return { ...header, transactions };
}

/** The answer to eth_getLogs over [from, to], checked: every log well formed, in range, not removed. */
export function readLogs(value: unknown, from: number, to: number): ChainLog[] {
  if (!Array.isArray(value)) throw new InvalidAnswerError(`eth_getLogs over ${from}-${to} answered with ${preview(value)}`);
  return value.map((item, i) => {
    const what = () => `log ${i} of ${from}-${to}`;
    const log = object(item, what);
    if (log.removed === true) throw new InvalidAnswerError(`${what()} is marked removed: the node's view moved while it answered`);
    const blockNumber = quantity(log.blockNumber, () => `${what()}'s blockNumber`);
    if (blockNumber < from || blockNumber > to) throw new InvalidAnswerError(`${what()} is from block ${blockNumber}, outside the range asked`);
    if (!Array.isArray(log.topics) || log.topics.length > 4) throw new InvalidAnswerError(`${what()}'s topics are malformed`);
    return {
      address: matching(log.address, ADDRESS, () => `${what()}'s address`),
      topics: log.topics.map((topic, t) => matching(topic, HASH, () => `${what()}'s topic ${t}`)),
      data: matching(log.data, DATA, () => `${what()}'s data`),
      blockNumber,
      blockHash: matching(log.blockHash, HASH, () => `${what()}'s blockHash`),
      transactionHash: matching(log.transactionHash, HASH, () => `${what()}'s transactionHash`),
      logIndex: quantity(log.logIndex, () => `${what()}'s logIndex`),
    };
  });
}

/** The answer to eth_getCode: whether the address holds a contract's code. */
export function readHasCode(value: unknown, address: string): boolean {
  const code = matching(value, DATA, `the code of ${address}`);
  // An EIP-7702 delegation designator (0xef0100 + address) marks an account that delegates its
  // calls, still an externally owned account, not a contract of its own.
  return code !== "0x" && !/^0xef0100[0-9a-f]{40}$/.test(code);
}

function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
