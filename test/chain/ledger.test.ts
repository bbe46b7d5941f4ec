import { describe, expect, it } from "vitest";
import type { BlockFacts } from "../../src/chain/derive.js";
import { balanceSpace, interactionSpace, keysOf, parseWindow, POSITION_SPACE, UnitPlanner, WINDOW_SPACE, type LedgerUnit, type StateValues } from "../../src/chain/ledger.js";

const A = `0x${"a".repeat(40)}`;
const B = `0x${"b".repeat(40)}`;
const NFT = `0x${"1".repeat(40)}`;
const PLAIN = `0x${"4".repeat(40)}`;
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

function facts(number: number, body: Partial<BlockFacts>): BlockFacts {
  return { number, hash: hash(number), parentHash: hash(number - 1), interactions: [], moves: [], ...body };
}

/** A store of the ledger's state, applying each unit's state changes as the writer would. */
class Kept {
  values: StateValues = new Map();
  read(keys: Map<string, Set<string>>): StateValues {
    const out: StateValues = new Map();
    for (const [space, fields] of keys) {
      const stored = this.values.get(space);
      out.set(space, new Map([...fields].flatMap((field) => (stored?.has(field) ? [[field, stored.get(field)!] as [string, string]] : []))));
    }
    return out;
  }
  apply(unit: LedgerUnit): void {
    for (const { space, field, value } of unit.state) {
      let fields = this.values.get(space);
      if (!fields) this.values.set(space, (fields = new Map()));
      if (value === null) fields.delete(field);
      else fields.set(field, value);
    }
  }
  window() {
    return parseWindow(this.values.get(WINDOW_SPACE) ?? new Map());
  }
}

const position = (n: number) => ({ number: n, hash: hash(n), chainId: "0x7a69" });

function run(kept: Kept, blocks: BlockFacts[], undoTo?: number): LedgerUnit {
  const undo = undoTo === undefined ? [] : kept.window().filter((entry) => entry.number > undoTo);
  const planner = new UnitPlanner(kept.read(keysOf(blocks, undo)));
  planner.undoBlocks(undo);
  for (const block of blocks) planner.applyBlock(block, true);
  const unit = planner.finish(position(blocks.at(-1)?.number ?? undoTo!));
  kept.apply(unit);
  return unit;
}

describe("UnitPlanner", () => {
  it("upserts a holding when a balance leaves zero and deletes it when the last token goes", () => {
    const kept = new Kept();
    const mint = run(kept, [facts(1, { moves: [{ contract: NFT, holder: A, delta: 2n }] })]);
    expect(mint.records).toEqual([{ op: "upsert", type: "nft", address: A, contract: NFT }]);
    const one = run(kept, [facts(2, { moves: [{ contract: NFT, holder: A, delta: -1n }, { contract: NFT, holder: B, delta: 1n }] })]);
    expect(one.records).toEqual([{ op: "upsert", type: "nft", address: B, contract: NFT }]);
    const last = run(kept, [facts(3, { moves: [{ contract: NFT, holder: A, delta: -1n }, { contract: NFT, holder: B, delta: 1n }] })]);
    expect(last.records).toEqual([{ op: "delete", type: "nft", address: A, contract: NFT }]);
    expect(kept.values.get(balanceSpace(NFT))).toEqual(new Map([[B, "2"]]));
    expect(JSON.parse(kept.values.get(POSITION_SPACE)!.get("block")!)).toEqual(position(3));
  });

  it("gives the net effect of a unit: a token minted and sold on within it leaves one holding", () => {
    const kept = new Kept();
    const unit = run(kept, [
      facts(1, { moves: [{ contract: NFT, holder: A, delta: 1n }] }),
      facts(2, { moves: [{ contract: NFT, holder: A, delta: -1n }, { contract: NFT, holder: B, delta: 1n }] }),
    ]);
    expect(unit.records).toEqual([{ op: "upsert", type: "nft", address: B, contract: NFT }]);
  });

  it("records an interaction once, and undoing a later block that repeats it keeps it", () => {
    const kept = new Kept();
    expect(run(kept, [facts(1, { interactions: [{ address: A, contract: PLAIN }] })]).records).toEqual([{ op: "upsert", type: "interaction", address: A, contract: PLAIN }]);
    expect(run(kept, [facts(2, { interactions: [{ address: A, contract: PLAIN }] })]).records).toEqual([]);
    const undone = run(kept, [], 1);
    expect(undone.records).toEqual([]);
    expect(undone.undone).toBe(1);
    expect(kept.values.get(interactionSpace(PLAIN))?.has(A)).toBe(true);
  });

  it("undoes a reorg back to the ancestor and applies the new branch in one unit", () => {
    const kept = new Kept();
    run(kept, [facts(1, { moves: [{ contract: NFT, holder: A, delta: 1n }] })]);
    run(kept, [
      facts(2, { moves: [{ contract: NFT, holder: A, delta: -1n }, { contract: NFT, holder: B, delta: 1n }], interactions: [{ address: B, contract: PLAIN }] }),
      facts(3, { moves: [{ contract: NFT, holder: B, delta: 1n }] }),
    ]);
    // The new branch at 2: A keeps its token, nobody calls PLAIN.
    const branch = { ...facts(2, {}), hash: hash(0xb2) };
    const unit = run(kept, [branch], 1);
    expect(unit.undone).toBe(2);
    expect(unit.records).toEqual(
      expect.arrayContaining([
        { op: "delete", type: "interaction", address: B, contract: PLAIN },
        { op: "delete", type: "nft", address: B, contract: NFT },
        { op: "upsert", type: "nft", address: A, contract: NFT },
      ]),
    );
    expect(unit.records).toHaveLength(3);
    expect(kept.values.get(balanceSpace(NFT))).toEqual(new Map([[A, "1"]]));
    expect(kept.window().map((entry) => [entry.number, entry.hash])).toEqual([
      [2, hash(0xb2)],
      [1, hash(1)],
    ]);
  });

  it("never takes a balance below zero (tokens from before --from-block) for a holding", () => {
    const kept = new Kept();
    const unit = run(kept, [facts(5, { moves: [{ contract: NFT, holder: A, delta: -1n }, { contract: NFT, holder: B, delta: 1n }] })]);
    expect(unit.records).toEqual([{ op: "upsert", type: "nft", address: B, contract: NFT }]);
  });
});
