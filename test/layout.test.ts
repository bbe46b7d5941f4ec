import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";

/*
 * Issue 16, item 5: the layout shows the architecture only while imports keep to it. auth/ and rest/
 * sit below rpc/ (which holds the service and its interceptors), and the store knows nothing of the
 * speed layer, which plugs its connections into it from the composition root.
 */

const SRC = path.resolve("src");

/** Every relative import of every .ts file under `folder`, as a path under src/. */
async function importsOf(folder: string): Promise<{ file: string; target: string }[]> {
  const found: { file: string; target: string }[] = [];
  for (const entry of await readdir(path.join(SRC, folder), { recursive: true })) {
    if (!entry.endsWith(".ts")) continue;
    const file = path.join(SRC, folder, entry);
    const text = await readFile(file, "utf8");
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)) {
      found.push({ file: path.relative(SRC, file), target: path.relative(SRC, path.resolve(path.dirname(file), match[1]!)) });
    }
  }
  return found;
}

describe("who may import whom", () => {
  it.each([
    ["auth", "rpc"],
    ["rest", "rpc"],
    ["store", "fast"],
    ["store", "rpc"],
    ["transport", "rpc"],
    ["domain", "store"],
  ])("%s/ imports nothing of %s/", async (folder, forbidden) => {
    const offending = (await importsOf(folder)).filter(({ target }) => target === forbidden || target.startsWith(`${forbidden}/`));
    expect(offending).toEqual([]);
  });
});
