import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { loadDemoDataset } from "../../src/synthetic/demo.js";
import { createRelgraph, type Relgraph } from "../../src/relgraph.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { launchChromium } from "../support/chromium.js";

/*
 * axe-core (a pinned dev dependency), the accessibility checker browsers' dev tools use, run in
 * Debian's Chromium on relgraph's own pages as a fresh server serves them: no violation of any
 * impact. Needs dist/ (npm run build bundles the pages).
 */

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[]; failureSummary?: string }[];
}

const axeSource = readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
let relgraph: Relgraph;
let browser: Browser;
let url: string;

beforeAll(async () => {
  const store = createMemoryStore();
  await loadDemoDataset(store);
  relgraph = await createRelgraph(loadConfig({}), store, { devApiKey: true, logLevel: false });
  await relgraph.server.listen({ port: 0, host: "127.0.0.1" });
  url = `http://127.0.0.1:${(relgraph.server.server.address() as AddressInfo).port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await relgraph?.close();
});

/** Every axe violation on `path` once it has loaded and rendered, one line each. */
async function violationsOn(path: string, ready: string): Promise<string[]> {
  // bypassCSP: the pages forbid inline scripts, and axe is injected as one.
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 }, bypassCSP: true });
  try {
    await page.goto(`${url}${path}`, { waitUntil: "networkidle" });
    await page.waitForSelector(ready);
    await page.addScriptTag({ content: await axeSource });
    const violations = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run(context: Document): Promise<{ violations: AxeViolation[] }> } }).axe;
      return (await axe.run(document)).violations;
    });
    return violations.map(
      (violation) => `${violation.impact} ${violation.id} (${violation.help}) on ${violation.nodes.map((node) => JSON.stringify(node.target)).join(", ")}`,
    );
  } finally {
    await page.close();
  }
}

describe("axe-core in Chromium", () => {
  it("finds no violation on /demo", async () => {
    expect(await violationsOn("/demo", "body")).toEqual([]);
  });

  it("finds no violation on /docs, once its operations have rendered", async () => {
    expect(await violationsOn("/docs", 'body[data-state="ready"]')).toEqual([]);
  });
});
