import { describe, expect, it } from "vitest";
import type { ChainBlock, ChainLog } from "../../src/chain/answers.js";
import { deriveBlock, nftTransfers, TRANSFER_BATCH_TOPIC, TRANSFER_SINGLE_TOPIC, TRANSFER_TOPIC, ZERO_ADDRESS } from "../../src/chain/derive.js";

const A = `0x${"a".repeat(40)}`;
const B = `0x${"b".repeat(40)}`;
const C = `0x${"c".repeat(40)}`;
const NFT = `0x${"1".repeat(40)}`;
const MULTI = `0x${"2".repeat(40)}`;
const COIN = `0x${"3".repeat(40)}`;
const PLAIN = `0x${"4".repeat(40)}`;

const topic = (address: string) => `0x${"0".repeat(24)}${address.slice(2)}`;
const word = (value: bigint | number) => BigInt(value).toString(16).padStart(64, "0");
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

let nextIndex = 0;
function log(address: string, topics: string[], data = "0x", blockNumber = 1): ChainLog {
  return { address, topics, data, blockNumber, blockHash: hash(blockNumber), transactionHash: hash(1000 + nextIndex), logIndex: nextIndex++ };
}
const erc721 = (from: string, to: string, id: number) => log(NFT, [TRANSFER_TOPIC, topic(from), topic(to), `0x${word(id)}`]);
const erc20 = (from: string, to: string, amount: number) => log(COIN, [TRANSFER_TOPIC, topic(from), topic(to)], `0x${word(amount)}`);
const single = (from: string, to: string, id: number, amount: number) => log(MULTI, [TRANSFER_SINGLE_TOPIC, topic(A), topic(from), topic(to)], `0x${word(id)}${word(amount)}`);
function batch(from: string, to: string, ids: number[], amounts: number[]): ChainLog {
  const head = word(64) + word(64 + 32 * (ids.length + 1));
  const data = head + word(ids.length) + ids.map(word).join("") + word(amounts.length) + amounts.map(word).join("");
  return log(MULTI, [TRANSFER_BATCH_TOPIC, topic(A), topic(from), topic(to)], `0x${data}`);
}

describe("nftTransfers", () => {
  it("reads an ERC-721 Transfer (four topics) as one token", () => {
    expect(nftTransfers(erc721(A, B, 7))).toEqual([{ from: A, to: B, amount: 1n }]);
  });
  it("never reads an ERC-20 Transfer (three topics) as an NFT", () => {
    expect(nftTransfers(erc20(A, B, 5))).toEqual([]);
  });
  it("reads ERC-1155 TransferSingle and TransferBatch amounts", () => {
    expect(nftTransfers(single(A, B, 1, 3))).toEqual([{ from: A, to: B, amount: 3n }]);
    expect(nftTransfers(batch(A, C, [1, 2, 3], [4, 5, 6]))).toEqual([{ from: A, to: C, amount: 15n }]);
  });
  it("skips malformed events rather than guessing", () => {
    expect(nftTransfers({ topics: [TRANSFER_SINGLE_TOPIC, topic(A), topic(A), topic(B)], data: `0x${word(1)}` })).toEqual([]);
    const broken = batch(A, B, [1, 2], [1, 1]);
    expect(nftTransfers({ ...broken, data: broken.data.slice(0, -64) })).toEqual([]);
    // Mismatched array lengths.
    const uneven = `0x${word(64)}${word(128)}${word(1)}${word(9)}${word(2)}${word(1)}${word(1)}`;
    expect(nftTransfers({ topics: broken.topics, data: uneven })).toEqual([]);
    // An indexed "address" with bits above 160.
    expect(nftTransfers({ topics: [TRANSFER_TOPIC, `0x${"f".repeat(64)}`, topic(B), hash(1)], data: "0x" })).toEqual([]);
  });
});

describe("deriveBlock", () => {
  const block = (transactions: ChainBlock["transactions"]): ChainBlock => ({ number: 1, hash: hash(1), parentHash: hash(0), transactions });
  const tx = (from: string, to: string | null, n: number) => ({ hash: hash(500 + n), from, to });
  const contracts = new Set([NFT, MULTI, COIN, PLAIN]);

  it("records a sender once per contract with code, and never a transfer to an account or a creation", () => {
    const facts = deriveBlock(block([tx(A, PLAIN, 1), tx(A, PLAIN, 2), tx(B, C, 3), tx(B, null, 4), tx(C, COIN, 5)]), [], (address) => contracts.has(address), null);
    expect(facts.interactions).toEqual([
      { address: A, contract: PLAIN },
      { address: C, contract: COIN },
    ]);
  });

  it("moves balances from and to everyone but the zero address, in log order", () => {
    const logs = [erc721(ZERO_ADDRESS, A, 1), erc721(A, B, 1), erc20(A, B, 9), single(ZERO_ADDRESS, A, 1, 2), batch(A, ZERO_ADDRESS, [1], [2])];
    const facts = deriveBlock(block([]), [...logs].reverse(), () => true, null);
    expect(facts.moves).toEqual([
      { contract: NFT, holder: A, delta: 1n },
      { contract: NFT, holder: A, delta: -1n },
      { contract: NFT, holder: B, delta: 1n },
      { contract: MULTI, holder: A, delta: 2n },
      { contract: MULTI, holder: A, delta: -2n },
    ]);
  });

  it("keeps to the --contracts filter for both kinds", () => {
    const facts = deriveBlock(block([tx(A, PLAIN, 1), tx(A, NFT, 2)]), [erc721(ZERO_ADDRESS, A, 1), single(ZERO_ADDRESS, B, 1, 1)], () => true, new Set([NFT]));
    expect(facts.interactions).toEqual([{ address: A, contract: NFT }]);
    expect(facts.moves).toEqual([{ contract: NFT, holder: A, delta: 1n }]);
  });
});
