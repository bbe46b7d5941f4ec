import { createWriteStream } from "node:fs";
import { finished } from "node:stream/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { generateJsonLines } from "../../src/ingest/generate.js";
import { ingestFiles } from "../../src/ingest/ingest.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { createFileBox, type FileBox } from "./helpers.js";

// Measures, never asserts, speed: about a million records from a file into the memory store.
let box: FileBox;
beforeAll(async () => {
  box = await createFileBox();
});
afterAll(async () => {
  await box.remove();
});

it("ingests about a million records and reports records/s", async () => {
  const path = `${box.dir}/million.jsonl`;
  const out = createWriteStream(path);
  let chunk = "";
  for (const line of generateJsonLines({ users: 30_000, seed: "throughput", meanDegree: 25 })) {
    chunk += line;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await new Promise((resolve) => out.once("drain", resolve));
      chunk = "";
    }
  }
  out.end(chunk);
  await finished(out);

  const store = createMemoryStore();
  const validated = await ingestFiles(createMemoryStore(), [path], { dryRun: true });
  const loaded = await ingestFiles(store, [path]);
  const rss = Math.round(process.memoryUsage().rss / 2 ** 20);
  console.log(
    `ingest throughput: ${loaded.records.toLocaleString("en-US")} records; parse+validate ${Math.round(validated.recordsPerSecond).toLocaleString("en-US")} records/s; ` +
      `parse+validate+write (memory store) ${Math.round(loaded.recordsPerSecond).toLocaleString("en-US")} records/s in ${loaded.seconds.toFixed(2)} s; rss ${rss} MiB`,
  );
  expect(loaded.records).toBeGreaterThan(900_000);
  await store.close();
});
