import { createWriteStream } from "node:fs";
import { finished } from "node:stream/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { generateJsonLines } from "../../src/synthetic/generate.js";
import { PARSE_PROGRESS_EVERY, ingestFiles, type IngestProgress } from "../../src/ingest/ingest.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { createFileBox, type FileBox } from "./helpers.js";

// A million-line file streams through validation and into the store, reporting progress on the way.
// It prints the rate for orientation; speed is measured by `npm run bench`, never asserted here.
let box: FileBox;
beforeAll(async () => {
  box = await createFileBox();
});
afterAll(async () => {
  await box.remove();
});

it("ingests a file of about a million records, with progress", async () => {
  const path = `${box.dir}/million.jsonl`;
  const out = createWriteStream(path);
  let chunk = "";
  for (const line of generateJsonLines({ users: 30_000, seed: "throughput", meanDegree: 25 })) {
    chunk += line;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
      chunk = "";
    }
  }
  out.end(chunk);
  await finished(out);

  const store = createMemoryStore();
  const validated = await ingestFiles(createMemoryStore(), [path], { dryRun: true });
  const progress: IngestProgress[] = [];
  const loaded = await ingestFiles(store, [path], { onProgress: (p) => progress.push(p) });
  const rss = Math.round(process.memoryUsage().rss / 2 ** 20);
  console.log(
    `ingest throughput: ${loaded.records.toLocaleString("en-US")} records; parse+validate ${Math.round(validated.recordsPerSecond).toLocaleString("en-US")} records/s; ` +
      `parse+validate+write (memory store) ${Math.round(loaded.recordsPerSecond).toLocaleString("en-US")} records/s in ${loaded.seconds.toFixed(2)} s; rss ${rss} MiB`,
  );
  expect(loaded.records).toBeGreaterThan(900_000);
  const parsed = progress.filter((p) => p.phase === "parse");
  expect(parsed.length).toBe(Math.floor(loaded.records / PARSE_PROGRESS_EVERY));
  const written = progress.filter((p) => p.phase === "write");
  expect(written.at(-1)).toMatchObject({ written: loaded.records, total: loaded.records });
  await store.close();
});
