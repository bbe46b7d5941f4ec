import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as sourceParser from "../../src/chain/answer-parser.js";
import { parseAnswer } from "../../src/chain/answer-parser.js";
import { readBlock, readLogs } from "../../src/chain/answers.js";
import { InvalidAnswerError } from "../../src/chain/rpc-client.js";

const HASH = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const ADDRESS = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;

function fullBlock(number: number, transactions: unknown[]) {
  return {
    number: `0x${number.toString(16)}`,
    hash: HASH(number + 1000),
    parentHash: HASH(number + 999),
    logsBloom: `0x${"0".repeat(512)}`,
    stateRoot: HASH(7),
    transactions,
  };
}

function fullTransaction(i: number, block: number, to: string | null) {
  return { hash: HASH(i), from: ADDRESS(i), to, blockHash: HASH(block + 1000), input: "0xa9059cbb", r: HASH(5), s: HASH(6), v: "0x1", nonce: "0x0" };
}

function fullLog(i: number, block: number) {
  return {
    address: ADDRESS(100 + i),
    topics: [HASH(1), HASH(2), HASH(3)],
    data: "0x",
    blockNumber: `0x${block.toString(16)}`,
    blockHash: HASH(block + 1000),
    blockTimestamp: "0x1",
    transactionHash: HASH(i),
    transactionIndex: "0x0",
    logIndex: `0x${i.toString(16)}`,
    removed: false,
  };
}

const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).buffer as ArrayBuffer;

describe("parseAnswer", () => {
  it("keeps of a batch of full blocks exactly what readBlock reads: the same blocks come out", () => {
    const blocks = [fullBlock(5, [fullTransaction(1, 5, ADDRESS(9)), fullTransaction(2, 5, null)]), fullBlock(6, [])];
    const batch = blocks.map((block, id) => ({ jsonrpc: "2.0", id, result: block }));
    const parsed = parseAnswer(bytes(batch), "block") as { id: number; jsonrpc: string; result: Record<string, unknown> }[];
    expect(parsed.map(({ id, jsonrpc }) => ({ id, jsonrpc }))).toEqual(batch.map(({ id, jsonrpc }) => ({ id, jsonrpc })));
    expect(Object.keys(parsed[0]!.result).sort()).toEqual(["hash", "number", "parentHash", "transactions"]);
    parsed.forEach((item, i) => expect(readBlock(item.result, 5 + i, true)).toEqual(readBlock(blocks[i], 5 + i, true)));
  });

  it("leaves what readBlock refuses as it was: hashes where full transactions were asked, a missing block, an error", () => {
    const hashesOnly = fullBlock(5, [HASH(1)]);
    const parsed = parseAnswer(
      bytes([
        { jsonrpc: "2.0", id: 1, result: hashesOnly },
        { jsonrpc: "2.0", id: 2, result: null },
        { jsonrpc: "2.0", id: 3, error: { code: -32000, message: "no" } },
      ]),
      "block",
    ) as Record<string, unknown>[];
    expect(() => readBlock(parsed[0]!.result, 5, true)).toThrow(InvalidAnswerError);
    expect(parsed[1]!.result).toBeNull();
    expect(parsed[2]).toEqual({ jsonrpc: "2.0", id: 3, error: { code: -32000, message: "no" } });
  });

  it("keeps of logs exactly what readLogs reads, and a removed log is still refused", () => {
    const logs = [fullLog(0, 5), fullLog(1, 6)];
    const parsed = parseAnswer(bytes({ jsonrpc: "2.0", id: 1, result: logs }), "logs") as { result: unknown };
    expect(readLogs(parsed.result, 5, 6)).toEqual(readLogs(logs, 5, 6));
    const removed = parseAnswer(bytes({ jsonrpc: "2.0", id: 1, result: [{ ...fullLog(0, 5), removed: true }] }), "logs") as { result: unknown };
    expect(() => readLogs(removed.result, 5, 6)).toThrow(/removed/);
  });

  it("throws on bytes that are not JSON", () => {
    expect(() => parseAnswer(new TextEncoder().encode("<html>").buffer as ArrayBuffer, "block")).toThrow(SyntaxError);
  });
});

describe("createAnswerParser on worker threads (the built code)", () => {
  it("parses answers in parallel jobs, each to its own caller, and rejects what is not JSON", async () => {
    const built = new URL("../../dist/src/chain/answer-parser.js", import.meta.url);
    expect(existsSync(built), "run npm run build first").toBe(true);
    const { createAnswerParser } = (await import(built.href)) as typeof sourceParser;
    const parser = createAnswerParser({ threads: 2 });
    try {
      const blocks = Array.from({ length: 8 }, (_, i) => fullBlock(i, [fullTransaction(i, i, ADDRESS(i + 1))]));
      const answers = await Promise.all(blocks.map((block, i) => parser.parse(bytes({ jsonrpc: "2.0", id: i, result: block }), "block")));
      answers.forEach((answer, i) => expect(readBlock((answer as { result: unknown }).result, i, true)).toEqual(readBlock(blocks[i], i, true)));
      await expect(parser.parse(new TextEncoder().encode("{").buffer as ArrayBuffer, undefined)).rejects.toThrow(SyntaxError);
      expect(await parser.parse(bytes({ jsonrpc: "2.0", id: 1, result: "0x7a69" }), undefined)).toEqual({ jsonrpc: "2.0", id: 1, result: "0x7a69" });
    } finally {
      await parser.close();
    }
  });
});
