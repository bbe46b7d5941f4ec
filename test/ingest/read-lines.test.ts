import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPrng } from "../../src/synthetic/prng.js";
import { readByteLines, readLines } from "../../src/ingest/read-lines.js";

/** A stream giving `bytes` in reads of the given sizes (the last size repeats). */
function chunked(bytes: Buffer, sizes: number[]): Readable {
  const chunks: Buffer[] = [];
  for (let at = 0, k = 0; at < bytes.length; k++) {
    const size = Math.max(1, sizes[Math.min(k, sizes.length - 1)]!);
    chunks.push(bytes.subarray(at, at + size));
    at += size;
  }
  return Readable.from(chunks, { objectMode: false });
}

/** Lines as Node's readline gives them (the reader the ingestion used before it read bytes), the mark dropped from the first. */
async function readlineLines(bytes: Buffer): Promise<string[]> {
  const input = Readable.from([bytes]);
  input.setEncoding("utf8");
  const lines: string[] = [];
  for await (const line of createInterface({ input, crlfDelay: Infinity })) lines.push(lines.length === 0 && line.charCodeAt(0) === 0xfeff ? line.slice(1) : line);
  return lines;
}

async function byteLines(stream: Readable): Promise<{ lines: string[]; count: number }> {
  const lines: string[] = [];
  let expected = 1;
  const count = await readByteLines(stream, (bytes, start, end, line) => {
    expect(line).toBe(expected++);
    lines.push(bytes.toString("utf8", start, end));
  });
  return { lines, count };
}

describe("readByteLines", () => {
  it.each([
    ["LF", "a\nb\n", ["a", "b"]],
    ["no final line break", "a\nb", ["a", "b"]],
    ["CRLF", "a\r\nb\r\n", ["a", "b"]],
    ["a lone CR", "a\rb", ["a", "b"]],
    ["blank lines", "\n\r\n\n", ["", "", ""]],
    ["a byte-order mark", "\ufeffa\n\ufeffb", ["a", "\ufeffb"]],
    ["nothing", "", []],
  ])("splits %s as readline does", async (_, text, expected) => {
    const bytes = Buffer.from(text);
    expect(await readlineLines(bytes)).toEqual(expected);
    for (const size of [1, 2, 3, 64]) {
      const { lines, count } = await byteLines(chunked(bytes, [size]));
      expect(lines).toEqual(expected);
      expect(count).toBe(expected.length);
    }
  });

  it("gives readline's lines for random bytes in random reads: CR, LF, marks and broken UTF-8 across read boundaries", async () => {
    const rng = createPrng("read-lines");
    const pieces = ["\n", "\r", "\r\n", "\ufeff", "a", "{}", "é", "🛡️", " ", "\u2028"].map((text) => Buffer.from(text));
    pieces.push(Buffer.from([0xe2]), Buffer.from([0xf0, 0x9f]), Buffer.from([0xff]));
    for (let trial = 0; trial < 300; trial++) {
      const bytes = Buffer.concat(Array.from({ length: rng.int(40) }, () => pieces[rng.int(pieces.length)]!));
      const sizes = Array.from({ length: 8 }, () => 1 + rng.int(6));
      const { lines } = await byteLines(chunked(bytes, sizes));
      expect(lines).toEqual(await readlineLines(bytes));
    }
  });

  it("joins a line that spans many reads, whole and in order", async () => {
    const long = Array.from({ length: 50_000 }, (_, i) => `${i % 10}`).join("");
    const { lines } = await byteLines(chunked(Buffer.from(`a\n${long}\r\n${long}`), [1, 1_000, 9]));
    expect(lines).toEqual(["a", long, long]);
  });

  it("reads text streams too, and readLines decodes each line", async () => {
    const text: string[] = [];
    const count = await readLines(Readable.from(["x\r", "\ny\n", "é"]), (line, n) => text.push(`${n}:${line}`));
    expect(text).toEqual(["1:x", "2:y", "3:é"]);
    expect(count).toBe(3);
  });

  it("rejects, and stops reading, when a line's handler throws", async () => {
    const seen: number[] = [];
    const reading = readByteLines(chunked(Buffer.from("a\nb\nc\n"), [2]), (_bytes, _start, _end, line) => {
      seen.push(line);
      if (line === 2) throw new Error("bad line");
    });
    await expect(reading).rejects.toThrow("bad line");
    expect(seen).toEqual([1, 2]);
  });

  describe("a file", () => {
    // Files are read 64 KiB at a time, the next read under way while a chunk is split: lines and
    // line breaks that straddle those reads must come out as readline gives them.
    const CHUNK = 64 * 1024;
    let dir = "";
    beforeAll(async () => {
      dir = await mkdtemp(path.join(tmpdir(), "read-lines-"));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });
    const fileLines = async (bytes: Buffer) => {
      const file = path.join(dir, "lines.txt");
      await writeFile(file, bytes);
      const lines: string[] = [];
      const count = await readByteLines(file, (chunk, start, end) => lines.push(chunk.toString("utf8", start, end)));
      return { lines, count };
    };

    it("gives readline's lines when breaks, CR LF pairs and multibyte characters straddle its reads", async () => {
      const rng = createPrng("read-lines:file");
      for (const [at, text] of [[CHUNK - 1, "\r\n"], [CHUNK - 1, "é"], [2 * CHUNK - 1, "\r"], [3 * CHUNK, "\n"]] as const) {
        const bytes = Buffer.alloc(3 * CHUNK + 5_000, "x");
        for (let k = 0; k < 40; k++) bytes[rng.int(bytes.length)] = 0x0a;
        bytes.write(text, at);
        bytes.write("\ufeff", 0);
        const { lines, count } = await fileLines(bytes);
        expect(lines).toEqual(await readlineLines(bytes));
        expect(count).toBe(lines.length);
      }
    });

    it("holds a line longer than many reads whole", async () => {
      const long = "y".repeat(5 * CHUNK + 7);
      const { lines } = await fileLines(Buffer.from(`a\n${long}\nb`));
      expect(lines).toEqual(["a", long, "b"]);
    });

    it("rejects with the handler's error, and the file's own", async () => {
      const file = path.join(dir, "three.txt");
      await writeFile(file, "a\n".repeat(3 * CHUNK));
      let seen = 0;
      const reading = readByteLines(file, () => {
        if (++seen === CHUNK + 3) throw new Error("bad line");
      });
      await expect(reading).rejects.toThrow("bad line");
      expect(seen).toBe(CHUNK + 3);
      await expect(readByteLines(path.join(dir, "absent.txt"), () => {})).rejects.toMatchObject({ code: "ENOENT" });
    });
  });
});
