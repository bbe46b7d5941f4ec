import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createChainReader, type BlockRange } from "../../src/chain/chain-reader.js";
import { deriveBlock } from "../../src/chain/derive.js";
import { keysOf, UnitPlanner } from "../../src/chain/ledger.js";
import { createRpcClient, InvalidAnswerError, type RpcClient } from "../../src/chain/rpc-client.js";
import { startAnvil, type TestAnvil } from "./support/anvil.js";
import { accounts, deploy, waitReceipt, type Deployed } from "./support/contracts.js";
import { startRpcProxy, type RpcProxy } from "./support/rpc-proxy.js";

let anvil: TestAnvil;
let proxy: RpcProxy;
let rpc: RpcClient;
let users: string[];
let nft: Deployed;
let multi: Deployed;
let coin: Deployed;
let book: Deployed;

beforeAll(async () => {
  anvil = await startAnvil();
  proxy = await startRpcProxy(anvil.url);
  rpc = createRpcClient({ urls: [proxy.url], baseBackoffMs: 20 });
  users = await accounts(anvil);
  const [deployer, a, b, c] = users as [string, string, string, string];
  nft = await deploy(anvil, "Collectible", deployer);
  multi = await deploy(anvil, "MultiToken", deployer);
  coin = await deploy(anvil, "Coin", deployer);
  book = await deploy(anvil, "Guestbook", deployer);
  const sent: string[] = [];
  for (let id = 1; id <= 12; id++) sent.push(await nft.send(a, "mint", [a, id]));
  for (let id = 1; id <= 6; id++) sent.push(await nft.send(a, "transferFrom", [a, b, id]));
  sent.push(await nft.send(b, "burn", [1]));
  sent.push(await multi.send(b, "mintBatch", [b, [1, 2, 3], [5, 5, 5]]));
  sent.push(await multi.send(b, "transferBatch", [c, [1, 2, 3], [5, 5, 5]]));
  sent.push(await multi.send(c, "transfer", [a, 2, 1]));
  sent.push(await coin.send(a, "mint", [a, 100]));
  sent.push(await coin.send(a, "transfer", [c, 40]));
  sent.push(await book.send(c, "sign"));
  sent.push(await book.send(a, "sign"));
  for (const hash of sent) await waitReceipt(anvil, hash);
  // Anvil may mine several of those in one block: empty blocks make the chain long enough to stream in parts.
  while (Number.parseInt(await anvil.rpc<string>("eth_blockNumber"), 16) < 30) await anvil.rpc("evm_mine");
});
afterAll(async () => {
  rpc?.close();
  await proxy?.close();
  await anvil?.stop();
});

describe("createChainReader on anvil", () => {
  it("reads every NFT log through a provider that caps eth_getLogs, narrowing its range", async () => {
    const ranges: number[] = [];
    const reader = createChainReader(rpc, { contracts: null, initialLogRange: 1000, onLogRange: (range) => ranges.push(range) });
    const head = await reader.head();
    const uncapped = await reader.range(0, head);
    proxy.faults.maxLogs = 4;
    try {
      const capped = await reader.range(0, head);
      expect(capped).toEqual(uncapped);
    } finally {
      proxy.faults.maxLogs = null;
    }
    expect(proxy.counts.capped).toBeGreaterThan(0);
    expect(ranges.length).toBeGreaterThan(0);
    expect(Math.min(...ranges)).toBeLessThan(1000);
    // 12 mints, 6 transfers, 1 burn, 3 ERC-1155 events, 2 ERC-20 transfers (asked for by topic, told apart later).
    expect([...uncapped!.logs.values()].flat()).toHaveLength(24);
  });

  it("narrows its log range after a dense answer, before any provider refuses one, and reads the same logs", async () => {
    const ranges: number[] = [];
    const reader = createChainReader(rpc, { contracts: null, initialLogRange: 1000, shrinkAboveLogs: 3, onLogRange: (range) => ranges.push(range) });
    const head = await reader.head();
    const whole = await createChainReader(rpc, { contracts: null, initialLogRange: 1000 }).range(0, head);
    expect(await reader.range(0, head)).toEqual(whole);
    expect(ranges[0]).toBeLessThan(1000);
    // The next read goes in narrower ranges, and still finds every log.
    const requests = proxy.counts.eth_getLogs ?? 0;
    expect(await reader.range(0, head)).toEqual(whole);
    expect(proxy.counts.eth_getLogs! - requests).toBeGreaterThan(1);
  });

  it("streams a range part by part, in block order, each part with its own logs, together the whole range", async () => {
    const reader = createChainReader(rpc, { contracts: null });
    const head = await reader.head();
    const whole = (await reader.range(0, head))!;
    const parts: BlockRange[] = [];
    const span = await reader.stream(0, head, async (part) => {
      // A slow consumer holds the next part back, not the reading.
      await new Promise((resolve) => setTimeout(resolve, 5));
      parts.push(part);
    });
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.flatMap((part) => part.blocks)).toEqual(whole.blocks);
    for (const part of parts) {
      const numbers = new Set(part.blocks.map((block) => block.number));
      for (const number of part.logs.keys()) expect(numbers.has(number)).toBe(true);
    }
    expect(new Map(parts.flatMap((part) => [...part.logs]))).toEqual(whole.logs);
    expect(span).toEqual({
      first: { number: 0, hash: whole.blocks[0]!.hash, parentHash: whole.blocks[0]!.parentHash },
      last: { number: head, hash: whole.blocks.at(-1)!.hash, parentHash: whole.blocks.at(-1)!.parentHash },
    });
  });

  it("stops a stream whose consumer fails, and hands nothing over for blocks not there yet", async () => {
    const reader = createChainReader(rpc, { contracts: null });
    const head = await reader.head();
    let consumed = 0;
    const failing = reader.stream(0, head, () => {
      consumed++;
      throw new Error("the store is gone");
    });
    await expect(failing).rejects.toThrow("the store is gone");
    expect(consumed).toBe(1);
    expect(await reader.stream(head + 1, head + 2, () => void consumed++)).toBeNull();
    expect(consumed).toBe(1);
  });

  it("refuses a block the node gives for another number, and reads it right the next time", async () => {
    const reader = createChainReader(rpc, { contracts: null });
    proxy.faults.wrongBlocks = 1;
    await expect(reader.range(1, 3)).rejects.toBeInstanceOf(InvalidAnswerError);
    expect((await reader.range(1, 3))!.blocks.map((block) => block.number)).toEqual([1, 2, 3]);
  });

  it("tells contracts from accounts, and says null for blocks not there yet", async () => {
    const reader = createChainReader(rpc, { contracts: null });
    const head = await reader.head();
    expect(await reader.hasCode([book.address, users[1]!, nft.address], head)).toEqual([true, false, true]);
    // Before the Guestbook was deployed (block 4), it had no code.
    expect(await reader.hasCode([book.address], 1)).toEqual([false]);
    expect(await reader.range(head + 1, head + 2)).toBeNull();
  });

  it("derives, over the whole chain, exactly the holdings and interactions the chain's own state shows", async () => {
    const reader = createChainReader(rpc, { contracts: null });
    const head = await reader.head();
    const range = (await reader.range(0, head))!;
    const facts = [];
    for (const block of range.blocks) {
      const targets = block.transactions.flatMap((tx) => (tx.to ? [tx.to] : []));
      const code = await reader.hasCode(targets, block.number);
      const withCode = new Set(targets.filter((_, i) => code[i]));
      facts.push(deriveBlock(block, range.logs.get(block.number) ?? [], (address) => withCode.has(address), null));
    }
    const planner = new UnitPlanner(new Map());
    expect(keysOf(facts).size).toBeGreaterThan(0);
    for (const block of facts) planner.applyBlock(block, false);
    const unit = planner.finish({ number: head, hash: range.blocks.at(-1)!.hash, chainId: "0x7a69" });
    const holdings = unit.records.filter((r) => r.type === "nft").map((r) => `${r.op} ${r.address} ${r.contract}`);
    const interactions = unit.records.filter((r) => r.type === "interaction").map((r) => `${r.address} ${r.contract}`);

    // The oracle: balances read from the contracts themselves.
    const [, a, b, c] = users as [string, string, string, string];
    const oracle: string[] = [];
    for (const holder of users) {
      const erc721 = await nft.read("balanceOf", [holder]);
      if (erc721 > 0n) oracle.push(`upsert ${holder} ${nft.address}`);
      let erc1155 = 0n;
      for (const id of [1, 2, 3]) erc1155 += await multi.read("balanceOf", [id, holder]);
      if (erc1155 > 0n) oracle.push(`upsert ${holder} ${multi.address}`);
    }
    expect(holdings.sort()).toEqual(oracle.sort());
    expect(holdings).toContain(`upsert ${b} ${nft.address}`);
    // b gave its whole ERC-1155 batch away: no holding; c and a hold.
    expect(holdings).not.toContain(`upsert ${b} ${multi.address}`);
    expect(holdings).not.toContain(`upsert ${c} ${coin.address}`);
    expect(interactions.sort()).toEqual(
      [
        `${a} ${nft.address}`,
        `${b} ${nft.address}`,
        `${b} ${multi.address}`,
        `${c} ${multi.address}`,
        `${a} ${coin.address}`,
        `${c} ${book.address}`,
        `${a} ${book.address}`,
      ].sort(),
    );
  });
});
