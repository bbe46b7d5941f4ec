import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runGenerate } from "../../src/cli/commands/generate.js";
import { demoWallet } from "../../src/synthetic/demo-wallet.js";
import { captureIo } from "../support/cli-io.js";
import { createFileBox, type FileBox } from "../ingest/helpers.js";

let box: FileBox;

beforeEach(async () => {
  box = await createFileBox();
});

afterEach(async () => {
  await box.remove();
});

describe("relgraph generate", () => {
  it("writes the demo dataset by default, the same on stdout and into a file", async () => {
    const stdout = captureIo();
    expect(await runGenerate([], stdout)).toBe(0);
    const path = `${box.dir}/demo.jsonl`;
    const file = captureIo();
    expect(await runGenerate(["--out", path], file)).toBe(0);
    const text = await readFile(path, "utf8");
    expect(createHash("sha256").update(text).digest("hex")).toBe(createHash("sha256").update(stdout.out()).digest("hex"));
    const first = JSON.parse(text.slice(0, text.indexOf("\n")));
    expect(first).toMatchObject({ type: "user", relationId: "u1", addresses: [demoWallet(1).address, expect.any(String)] });
    expect(file.err()).toMatch(/^generated [\d,]+ records in [\d.]+ s into /);
  });

  it("takes --users, --seed and --mean-degree, and rejects bad values", async () => {
    const io = captureIo();
    expect(await runGenerate(["--users", "40", "--seed", "x", "--mean-degree", "3"], io)).toBe(0);
    const lines = io.out().trimEnd().split("\n").map((line) => JSON.parse(line));
    expect(lines.filter((record) => record.type === "user")).toHaveLength(40);
    const again = captureIo();
    await runGenerate(["--users", "40", "--seed", "x", "--mean-degree", "3"], again);
    expect(again.out()).toBe(io.out());
    const bad = captureIo();
    expect(await runGenerate(["--users", "ten"], bad)).toBe(2);
    expect(await runGenerate(["--users", "5", "--mean-degree", "9"], bad)).toBe(2);
    expect(bad.err()).toContain("meanDegree must be from 0 to users - 1 (4), got 9");
    // Without --mean-degree, small graphs get a mean degree they can have.
    expect(await runGenerate(["--users", "5"], captureIo())).toBe(0);
    expect(await runGenerate(["--help"], captureIo())).toBe(0);
  });
});
