import { writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPrng } from "../../src/synthetic/prng.js";
import type { IngestBatch } from "../../src/store/store.js";
import { addr, createFileBox, userLine, type FileBox } from "./helpers.js";

/*
 * A large file read by two threads (src/ingest/split-read.ts) must load as it does on one: the same
 * batch handed to the store, names numbered alike, and the same error report, file:line in order,
 * whatever side of the cut a line falls on. Loaded from dist/, since the worker is a module of its
 * own that the sources run by vitest do not have.
 */

type Ingest = typeof import("../../src/ingest/ingest.js");
type Memory = typeof import("../../src/store/memory/memory-store.js");

describe("reading a file on two threads", () => {
  let ingest: Ingest;
  let memory: Memory;
  let box: FileBox;
  const stored = Array.from({ length: 50 }, (_, i) => `s${i}`);

  beforeAll(async () => {
    ingest = (await import(new URL("../../dist/src/ingest/ingest.js", import.meta.url).href)) as Ingest;
    memory = (await import(new URL("../../dist/src/store/memory/memory-store.js", import.meta.url).href)) as Memory;
    box = await createFileBox();
  });
  afterAll(() => box.remove());

  /** Ingests `file` into a fresh store holding the stored users; the batch it would write, or the error report. */
  async function load(file: string, splitFilesFrom: number): Promise<unknown> {
    const store = memory.createMemoryStore();
    await ingest.ingestRecords(store, stored.map((relationId, i) => userLine(relationId, [addr(`a${i}`)])));
    const written: IngestBatch[] = [];
    const target = {
      resolve: store.resolve.bind(store),
      resolveRelationIds: store.resolveRelationIds.bind(store),
      relationIds: store.relationIds.bind(store),
      users: store.users.bind(store),
      write: async (batch: IngestBatch) => void written.push(batch),
      exclusive: <T>(work: () => Promise<T>) => work(),
    };
    try {
      const result = await ingest.ingestFiles(target, [file], { splitFilesFrom });
      return { records: result.records, users: result.users, written };
    } catch (error) {
      if (!(error instanceof ingest.IngestValidationError)) throw error;
      return { errors: box.relative(error.errors), total: error.total };
    } finally {
      await store.close();
    }
  }

  /** Random lines of every kind, compact and not; `invalid` of them wrong. */
  function lines(seed: string, count: number, invalid: number): string[] {
    const rng = createPrng(seed);
    const id = () => (rng.int(4) === 0 ? `n${rng.int(40)}` : stored[rng.int(stored.length)]!);
    // Two different users: a self-friend, self-follow or self-release is an error.
    const two = () => {
      const first = id();
      let second = id();
      while (second === first) second = id();
      return [first, second] as const;
    };
    const out: string[] = [];
    for (let i = 0; i < 40; i++) out.push(JSON.stringify(userLine(`n${i}`, [addr(`b${i}`)])));
    const templates = [
      () => {
        const [a, b] = two();
        return JSON.stringify({ type: "friend", a, b, description: rng.int(5) === 0 ? "Gefährten 🛡️" : `since ${rng.int(9)}` });
      },
      () => {
        const [a, b] = two();
        return JSON.stringify({ op: "delete", type: "friend", a, b });
      },
      () => {
        const [from, to] = two();
        return JSON.stringify({ type: "follow", from, to });
      },
      () => {
        const [from, to] = two();
        return JSON.stringify({ op: "delete", type: "follow", from, to });
      },
      () => {
        const [relationId, peer] = two();
        return JSON.stringify({ type: "release", relationId, peers: rng.int(3) === 0 ? "*" : [peer] });
      },
      () => JSON.stringify({ op: "delete", type: "release", relationId: id() }),
      () => {
        const k = rng.int(40);
        return JSON.stringify(userLine(`n${k}`, [addr(`b${k}`)]));
      },
      () => {
        const [from, to] = two();
        return `{"type": "follow", "from": "${from}", "to": "${to}"}`;
      },
      () => "",
    ];
    for (let i = 0; i < count; i++) out.push(templates[rng.int(templates.length)]!());
    // Self-edges are invalid; the compact reader leaves them to the general path, on either thread.
    for (let k = 0; k < invalid; k++) out[40 + rng.int(count)] = rng.int(2) === 0 ? JSON.stringify({ type: "follow", from: "s1", to: "s1" }) : "{not json";
    return out;
  }

  it("hands the store the batch one thread does", async () => {
    const file = await box.write("valid.jsonl", lines("split-valid", 20_000, 0));
    const one = await load(file, Number.POSITIVE_INFINITY);
    expect((one as { written: unknown[] }).written).toHaveLength(1);
    expect(await load(file, 1)).toEqual(one);
  });

  it("reports the errors one thread does, at the same lines, across CR LF line breaks", async () => {
    const text = lines("split-invalid", 20_000, 30).join("\r\n");
    const file = `${box.dir}/invalid.jsonl`;
    await writeFile(file, `\ufeff${text}\n`);
    const one = (await load(file, Number.POSITIVE_INFINITY)) as { errors: string[]; total: number };
    expect(one.total).toBeGreaterThan(20);
    // Errors on both sides of the cut, which falls near the middle.
    const lineOf = (error: string) => Number(/:(\d+):/.exec(error)?.[1]);
    expect(one.errors.some((error) => lineOf(error) < 8_000)).toBe(true);
    expect(one.errors.some((error) => lineOf(error) > 12_000)).toBe(true);
    expect(await load(file, 1)).toEqual(one);
  });
});
