import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createChainReader, type ChainReader } from "../../src/chain/chain-reader.js";
import { createIndexer, type Finality, type Indexer } from "../../src/chain/indexer.js";
import { balanceSpace, parsePosition, POSITION_FIELD, POSITION_SPACE } from "../../src/chain/ledger.js";
import { createRpcClient, type RpcClient } from "../../src/chain/rpc-client.js";
import { startAnvil, type TestAnvil } from "./support/anvil.js";
import { accounts, deploy, waitReceipt, type Deployed } from "./support/contracts.js";
import { MemoryLedger } from "./support/memory-ledger.js";
import { makeHistory, newHistoryState } from "./support/history.js";
import { chainOracle } from "./support/oracle.js";
import { startRpcProxy, type RpcProxy } from "./support/rpc-proxy.js";

/*
 * The indexer's loop on a real anvil, applying to a ledger in memory (the CLI's tests run it on
 * Redis): what it holds is compared, after each step, with what the chain itself says.
 */

let anvil: TestAnvil;
let proxy: RpcProxy;
let users: string[];
let nft: Deployed;
let multi: Deployed;
let coin: Deployed;
let book: Deployed;
const running: { indexer: Indexer; done: Promise<unknown>; rpc: RpcClient }[] = [];

beforeAll(async () => {
  anvil = await startAnvil();
  proxy = await startRpcProxy(anvil.url);
  users = await accounts(anvil);
  nft = await deploy(anvil, "Collectible", users[0]!);
  multi = await deploy(anvil, "MultiToken", users[0]!);
  coin = await deploy(anvil, "Coin", users[0]!);
  book = await deploy(anvil, "Guestbook", users[0]!);
});
afterEach(async () => {
  for (const { indexer, done, rpc } of running.splice(0)) {
    indexer.stop();
    rpc.close();
    await done.catch(() => {});
  }
});
afterAll(async () => {
  await proxy?.close();
  await anvil?.stop();
});

function start(ledger: MemoryLedger, options: { finality?: Finality; urls?: string[]; contracts?: Set<string>; toBlock?: number } = {}) {
  const rpc = createRpcClient({ urls: options.urls ?? [anvil.url], baseBackoffMs: 20, maxBackoffMs: 200, maxRetryAfterMs: 1_000 });
  const indexer = createIndexer({
    store: ledger,
    chain: createChainReader(rpc, { contracts: options.contracts ?? null, initialLogRange: 64 }),
    finality: options.finality ?? { confirmations: 0 },
    contracts: options.contracts ?? null,
    fromBlock: 0,
    toBlock: options.toBlock ?? null,
    unitBlocks: 7,
    pollMs: 30,
  });
  const done = indexer.run();
  running.push({ indexer, done, rpc });
  return { indexer, done };
}

async function send(contract: Deployed, from: string, method: string, args: unknown[] = []): Promise<void> {
  await waitReceipt(anvil, await contract.send(from, method, args));
}

async function block(tag: number | "latest"): Promise<{ number: number; hash: string }> {
  const found = await anvil.rpc<{ number: string; hash: string }>("eth_getBlockByNumber", [tag === "latest" ? tag : `0x${tag.toString(16)}`, false]);
  return { number: Number.parseInt(found.number, 16), hash: found.hash };
}

/** Waits until the ledger's position is the chain's block `number` (that very block, by hash). */
async function synced(ledger: MemoryLedger, number: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const position = parsePosition((await ledger.readState(POSITION_SPACE, [POSITION_FIELD]))[0]);
    if (position && position.number === number && position.hash === (await block(number)).hash) return;
    if (Date.now() > deadline) throw new Error(`the indexer did not reach block ${number}; it is at ${JSON.stringify(position)}`);
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
}

const oracle = (upTo?: number) => chainOracle(anvil, users, { nft, multi, others: [coin, book] }, { upTo });

describe("the indexer on anvil", () => {
  it("follows mints, transfers, batch transfers, burns and the sale of a last token at 0 confirmations", async () => {
    const [, a, b, c] = users as [string, string, string, string];
    const ledger = new MemoryLedger();
    start(ledger);
    await send(nft, a, "mint", [a, 1]);
    await send(nft, a, "mint", [a, 2]);
    await send(nft, a, "transferFrom", [a, b, 1]);
    await send(multi, b, "mintBatch", [b, [1, 2], [3, 4]]);
    await send(multi, b, "transferBatch", [c, [1, 2], [3, 4]]);
    await send(coin, a, "mint", [a, 50]);
    await send(coin, a, "transfer", [c, 5]);
    await send(book, c, "sign");
    await send(nft, a, "burn", [2]);
    await synced(ledger, (await block("latest")).number);
    const expected = await oracle();
    expect(ledger.lines()).toEqual(expected);
    expect(expected).toContain(`nft ${c} ${multi.address}`);
    expect(expected).not.toContain(`nft ${b} ${multi.address}`);
    expect(expected).not.toContain(`nft ${a} ${nft.address}`);
    expect(expected.filter((line) => line.includes(coin.address) && line.startsWith("nft"))).toEqual([]);
  });

  it("undoes a reorg at 0 confirmations: nothing of the abandoned blocks stays", async () => {
    const [, , , , d, e] = users as [string, string, string, string, string, string];
    const ledger = new MemoryLedger();
    const { indexer } = start(ledger);
    const snapshot = await anvil.rpc<string>("evm_snapshot");
    await send(nft, d, "mint", [d, 10]);
    await send(book, d, "sign");
    await synced(ledger, (await block("latest")).number);
    expect(ledger.lines()).toContain(`nft ${d} ${nft.address}`);
    expect(ledger.lines()).toContain(`interaction ${d} ${book.address}`);

    await anvil.rpc("evm_revert", [snapshot]);
    await send(nft, e, "mint", [e, 11]);
    await send(coin, e, "mint", [e, 1]);
    await send(coin, e, "mint", [e, 2]);
    await synced(ledger, (await block("latest")).number);
    const expected = await oracle();
    expect(ledger.lines()).toEqual(expected);
    expect(expected).not.toContain(`nft ${d} ${nft.address}`);
    expect(expected).not.toContain(`interaction ${d} ${book.address}`);
    expect(indexer.stats().reorgs).toBeGreaterThanOrEqual(1);
  });

  it("with 3 confirmations, undoes a reorg deeper than the confirmations", async () => {
    const [, , , , , , f, g] = users as [string, string, string, string, string, string, string, string];
    const ledger = new MemoryLedger();
    const { indexer } = start(ledger, { finality: { confirmations: 3 } });
    const before = (await block("latest")).number;
    await synced(ledger, before - 3);
    const snapshot = await anvil.rpc<string>("evm_snapshot");
    for (let id = 20; id < 26; id++) await send(nft, f, "mint", [f, id]);
    await synced(ledger, before + 3);
    expect(ledger.lines()).toContain(`nft ${f} ${nft.address}`);

    await anvil.rpc("evm_revert", [snapshot]);
    await send(book, g, "sign");
    for (let n = 0; n < 4; n++) await anvil.rpc("evm_mine");
    const head = (await block("latest")).number;
    expect(head).toBe(before + 5);
    await synced(ledger, head - 3);
    expect(ledger.lines()).toEqual(await oracle(head - 3));
    expect(ledger.lines()).not.toContain(`nft ${f} ${nft.address}`);
    expect(indexer.stats().blocksUndone).toBe(3);
  });

  it("undoes a reorg onto a shorter branch at once, without waiting for the new branch to outgrow the old", async () => {
    const [, , , , , , , , h, k] = users as [string, string, string, string, string, string, string, string, string, string];
    const ledger = new MemoryLedger();
    const { indexer } = start(ledger);
    const before = (await block("latest")).number;
    await synced(ledger, before);
    const snapshot = await anvil.rpc<string>("evm_snapshot");
    expect(ledger.lines()).not.toContain(`nft ${h} ${nft.address}`);
    await send(nft, h, "mint", [h, 40]);
    await anvil.rpc("evm_mine");
    await anvil.rpc("evm_mine");
    await synced(ledger, before + 3);
    expect(ledger.lines()).toContain(`nft ${h} ${nft.address}`);

    // One block where the abandoned branch had three: the stored position is above the new head.
    await anvil.rpc("evm_revert", [snapshot]);
    await send(book, k, "sign");
    const head = (await block("latest")).number;
    expect(head).toBe(before + 1);
    await synced(ledger, head);
    expect(ledger.lines()).toEqual(await oracle(head));
    expect(ledger.lines()).not.toContain(`nft ${h} ${nft.address}`);
    expect(indexer.stats().reorgs).toBe(1);
    expect(indexer.stats().blocksUndone).toBe(3);
  });

  it("waits for a node behind its stored position, undoing nothing, and goes on once the node catches up", async () => {
    const [, , , , , , , , , k] = users as [string, string, string, string, string, string, string, string, string, string];
    await send(book, k, "sign");
    await send(book, k, "sign");
    const ledger = new MemoryLedger();
    const { indexer } = start(ledger, { urls: [proxy.url] });
    const head = (await block("latest")).number;
    await synced(ledger, head);
    const held = ledger.lines();
    try {
      proxy.faults.headAt = head - 2;
      // Many rounds find the node two blocks behind the stored position.
      const seen = proxy.counts.behind ?? 0;
      const deadline = Date.now() + 30_000;
      while ((proxy.counts.behind ?? 0) < seen + 20) {
        if (Date.now() > deadline) throw new Error("the indexer stopped asking the node behind");
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      expect(indexer.stats().blocksUndone).toBe(0);
      expect(ledger.lines()).toEqual(held);
      expect(parsePosition((await ledger.readState(POSITION_SPACE, [POSITION_FIELD]))[0])?.number).toBe(head);
    } finally {
      proxy.faults.headAt = null;
    }
    await send(book, k, "sign");
    await synced(ledger, head + 1);
    expect(ledger.lines()).toEqual(await oracle(head + 1));
    expect(indexer.stats().blocksUndone).toBe(0);
  });

  it("stops after --to-block, restricted to --contracts", async () => {
    const ledger = new MemoryLedger();
    const toBlock = (await block("latest")).number - 2;
    const { done } = start(ledger, { toBlock, contracts: new Set([nft.address]) });
    const stats = (await done) as { indexed: number };
    expect(stats.indexed).toBe(toBlock);
    const expected = (await oracle(toBlock)).filter((line) => line.endsWith(nft.address));
    expect(ledger.lines()).toEqual(expected);
    expect(expected.length).toBeGreaterThan(0);
  });

  it("reads the next range while a unit is written, and applies that very read: each range read once, in order", async () => {
    const [, a, b] = users as [string, string, string];
    await send(nft, a, "mint", [a, 30]);
    await send(nft, a, "transferFrom", [a, b, 30]);
    await send(book, b, "sign");
    while ((await block("latest")).number < 16) await anvil.rpc("evm_mine");
    const toBlock = (await block("latest")).number;
    const rpc = createRpcClient({ urls: [anvil.url] });
    const reader = createChainReader(rpc, { contracts: null });
    const ranges: [number, number][] = [];
    // A round reads its range part by part (stream); a range read ahead is read whole (range).
    const counted: ChainReader = {
      ...reader,
      range: (from, to) => (ranges.push([from, to]), reader.range(from, to)),
      stream: (from, to, consume) => (ranges.push([from, to]), reader.stream(from, to, consume)),
    };
    // How many ranges had been asked for when each unit began to be written.
    const askedAtApply: number[] = [];
    const ledger = new (class extends MemoryLedger {
      override async apply(...args: Parameters<MemoryLedger["apply"]>) {
        askedAtApply.push(ranges.length);
        await super.apply(...args);
      }
    })();
    const indexer = createIndexer({ store: ledger, chain: counted, finality: { confirmations: 0 }, contracts: null, fromBlock: 0, toBlock, unitBlocks: 5, pollMs: 30 });
    const done = indexer.run();
    running.push({ indexer, done, rpc });
    expect((await done).indexed).toBe(toBlock);
    expect(askedAtApply.length).toBeGreaterThan(2);
    // Every unit but the last is written while the range after it is being read.
    expect(askedAtApply).toEqual(askedAtApply.map((_, i) => Math.min(i + 2, askedAtApply.length)));
    // Contiguous from block 0 to toBlock, none read twice: the ranges read ahead were the ones applied.
    expect(ranges[0]![0]).toBe(0);
    expect(ranges.at(-1)![1]).toBe(toBlock);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i]![0]).toBe(ranges[i - 1]![1] + 1);
    expect(ledger.lines()).toEqual(await oracle(toBlock));
  });

  it("gets everything right through a dead endpoint, a rate-limited one and a capped eth_getLogs", async () => {
    const ledger = new MemoryLedger();
    Object.assign(proxy.faults, { rateLimited: 3, retryAfter: "0", maxLogs: 2, wrongBlocks: 2 });
    start(ledger, { urls: ["http://127.0.0.1:9", proxy.url] });
    await synced(ledger, (await block("latest")).number);
    expect(ledger.lines()).toEqual(await oracle());
    expect(proxy.counts.capped).toBeGreaterThan(0);
    expect(proxy.counts["429"]).toBe(3);
    expect(proxy.counts.wrongBlock).toBe(2);
  });

  it("keeps up with a seeded history of mixed activity, reorged in the middle", async () => {
    const ledger = new MemoryLedger();
    const { indexer } = start(ledger, { finality: { confirmations: 2 } });
    const contracts = { nft, multi, coin, book };
    const state = await makeHistory(anvil, contracts, users.slice(1), 60, 7);
    const snapshot = await anvil.rpc<string>("evm_snapshot");
    const forkedAt = (await block("latest")).number;
    const fork = structuredClone(state);
    await makeHistory(anvil, contracts, users.slice(1), 20, 8, state);
    const reached = (await block("latest")).number - 2;
    await synced(ledger, reached);
    // Anvil may mine two of a history's transactions in one block, so the branch's length is read, not assumed.
    const abandoned = new Map<number, string>();
    for (let n = forkedAt + 1; n <= reached; n++) abandoned.set(n, (await block(n)).hash);
    await anvil.rpc("evm_revert", [snapshot]);
    await makeHistory(anvil, contracts, users.slice(1), 30, 9, fork);
    // The new branch outgrows the abandoned one, however its transactions were packed.
    while ((await block("latest")).number < reached + 3) await anvil.rpc("evm_mine");
    const head = (await block("latest")).number;
    await synced(ledger, head - 2);
    expect(ledger.lines()).toEqual(await oracle(head - 2));
    // Every block the ledger held above the fork, and only those, was undone, in one reorg.
    let ancestor = forkedAt;
    while (ancestor < reached && abandoned.get(ancestor + 1) === (await block(ancestor + 1)).hash) ancestor++;
    // Deeper than the confirmations, as the history means it to be.
    expect(reached - ancestor).toBeGreaterThan(2);
    expect(indexer.stats().reorgs).toBe(1);
    expect(indexer.stats().blocksUndone).toBe(reached - ancestor);
  });

  it("shares a store with a second indexer: a unit planned from a position the other has since moved is dropped, no block is applied twice", async () => {
    await makeHistory(anvil, { nft, multi, coin, book }, users.slice(1), 30, 11, newHistoryState(5000));
    const head = (await block("latest")).number;
    // Both indexers plan each unit while the other may be writing: a unit waits a little for the
    // write lease, so that plans made from the same position meet under it.
    const ledger = new (class extends MemoryLedger {
      writes = 0;
      override exclusive<T>(work: () => Promise<T>): Promise<T> {
        this.writes++;
        return super.exclusive(async () => {
          await new Promise((resolve) => setTimeout(resolve, 10));
          return work();
        });
      }
    })();
    const first = start(ledger, { toBlock: head });
    const second = start(ledger, { toBlock: head });
    const [one, two] = await Promise.all([first.done, second.done]);
    // Every block from 0 to the head applied by exactly one of the two.
    expect(one.blocks + two.blocks).toBe(head + 1);
    // Some plans met a moved position and were dropped: more turns at the lease than units applied.
    expect(ledger.writes).toBeGreaterThan(ledger.units);
    expect(ledger.lines()).toEqual(await oracle(head));
    // The balances kept are the contract's own, as a unit applied twice would not leave them.
    for (const holder of users) {
      const kept = ledger.state.get(balanceSpace(nft.address))?.get(holder) ?? "0";
      expect(BigInt(kept), holder).toBe(await nft.read("balanceOf", [holder]));
    }
  });

  it("follows the finalized block with --finalized (anvil finalizes 64 blocks behind its head)", async () => {
    const ledger = new MemoryLedger();
    start(ledger, { finality: { finalized: true } });
    for (let n = 0; n < 70; n++) await anvil.rpc("evm_mine");
    const head = (await block("latest")).number;
    await synced(ledger, head - 64);
    expect(ledger.lines()).toEqual(await oracle(head - 64));
  });
});
