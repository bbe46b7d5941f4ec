import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wallet } from "ethers";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { loadDemoDataset } from "../../src/synthetic/demo.js";
import { demoWallet } from "../../src/synthetic/demo-wallet.js";
import { DEV_API_KEY, createRelgraph, type Relgraph } from "../../src/relgraph.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { injectWallet, launchChromium, watchProblems } from "../support/chromium.js";
import { demoExpectation } from "../support/demo-expectations.js";
import { freePort } from "../support/ports.js";

/**
 * relgraph/client in headless Chromium. The demo dApp end to end: a fresh server with the bundled demo
 * dataset and the development key, the page loaded from another origin than the API (so CORS is on
 * the path of every call, the key nodes' included), a wallet of demo user u1 injected as
 * window.ethereum. Over each protocol the page must sign in, decrypt, and show exactly what the
 * dataset holds; any refused request, failed decryption or script error fails the test.
 * And the docs page: it renders the five operations from /openapi.json and "try it" succeeds with
 * the development key. Needs dist/ (npm run build bundles the pages). DEMO_SCREENSHOT=path keeps
 * the demo's screenshot there (the README's is made so).
 */

const USER = "u1";
let relgraph: Relgraph;
let browser: Browser;
let apiUrl: string;
let pageOrigin: string;

beforeAll(async () => {
  const port = await freePort();
  // The page comes from localhost, the API is called at 127.0.0.1: two origins, one server.
  pageOrigin = `http://localhost:${port}`;
  apiUrl = `http://127.0.0.1:${port}`;
  const store = createMemoryStore();
  await loadDemoDataset(store);
  relgraph = await createRelgraph(loadConfig({ CORS_ORIGINS: pageOrigin }), store, { devApiKey: true, logLevel: false });
  await relgraph.server.listen({ port, host: "127.0.0.1" });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await relgraph?.close();
});

describe.each(["rest", "connect", "grpc-web"] as const)("the demo dApp over %s", (protocol) => {
  it("signs in with the wallet and shows the user's decrypted data, mutual friends and recommendations", async () => {
    const expected = demoExpectation(USER);
    const wallet = new Wallet(demoWallet(1).privateKey);
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const problems = watchProblems(page);
    const signed = await injectWallet(page, wallet);
    const apiRequests: string[] = [];
    page.on("request", (request) => {
      if (request.url().startsWith(apiUrl)) apiRequests.push(`${request.method()} ${new URL(request.url()).pathname}`);
    });

    await openDemo(page, `${pageOrigin}/demo?protocol=${protocol}`, apiUrl);
    await page.click("#connect");
    await page.waitForSelector("body[data-state=done], body[data-state=failed]", { timeout: 60_000 });
    const error = await page.textContent("#error");
    expect({ state: await page.getAttribute("body", "data-state"), error, problems: problems.list }).toEqual({
      state: "done",
      error: "",
      problems: [],
    });

    // Two authorizations, one per statement, for the page's own origin.
    expect(signed.map((message) => message.split("\n")[3])).toEqual(["Access to User Profile.", "Access to Relationship Graph."]);
    expect(signed[0]).toContain(`${new URL(pageOrigin).host} wants you to sign in`);
    expect(signed[0]!.split("\n")[1]).toBe(wallet.address);

    // The calls really crossed origins, over the chosen protocol, and went to the key nodes.
    const rpcPath = protocol === "rest" ? "GET /api/v1/profile" : "POST /relgraph.v1.RelationService/Profile";
    expect(apiRequests).toContain(rpcPath);
    expect(apiRequests.some((r) => r.startsWith("POST /dev-key-nodes/"))).toBe(true);

    // The decrypted Profile.
    const profileText = (id: string) => page.textContent(`#profile-${id}`);
    expect({
      relationId: await profileText("relationId"),
      name: await profileText("name"),
      followingCount: Number(await profileText("followingCount")),
      followerCount: Number(await profileText("followerCount")),
    }).toEqual({
      relationId: expected.profile.relationId,
      name: expected.profile.name,
      followingCount: expected.profile.followingCount,
      followerCount: expected.profile.followerCount,
    });

    // The decrypted Relationship graph: every released friend, in relationId order, nothing else.
    const rows = await page.$$eval("#graph-rows tr", (trs) =>
      trs.map((tr) => Object.fromEntries([...tr.querySelectorAll("td")].map((td) => [td.dataset.field, td.textContent]))),
    );
    // Usernames exactly as ingested (display case).
    expect(rows).toEqual(expected.graph.map((entry) => ({ ...entry, address: entry.address.join(" ") })));
    expect(rows.length).toBeGreaterThan(0);

    // Mutual friends with the first friend, and recommendations: what relgraph answers for them.
    const first = expected.graph[0]!;
    const mutual = await rest("mutualFriend", { address: `${wallet.address},${first.address[0]}`, limit: "10" });
    const shownMutual = await page.$$eval("#mutual-list li", (lis) => lis.map((li) => li.dataset.relationId ?? li.textContent));
    expect(shownMutual).toEqual(
      (mutual as { relationId: { relationId: string } }[]).length === 0
        ? ["No mutual friends."]
        : (mutual as { relationId: { relationId: string } }[]).map((u) => u.relationId.relationId),
    );
    const recommended = (await rest("multi-dimensional-recommendation", { address: wallet.address, limit: "10" })) as {
      relationId: { relationId: string; name: string };
      description: string;
    }[];
    expect(recommended.length).toBeGreaterThan(0);
    const shownRecommendations = await page.$$eval("#recommendation-rows tr", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)),
    );
    expect(shownRecommendations).toEqual(recommended.map((u) => [u.relationId.relationId, u.relationId.name, u.description]));
    for (const [, , why] of shownRecommendations) expect(why).not.toBe("");

    if (protocol === "rest") {
      const path = process.env.DEMO_SCREENSHOT ?? join(tmpdir(), "relgraph-demo.png");
      await mkdir(dirname(path), { recursive: true });
      await page.screenshot({ path, fullPage: true });
    }
    await page.close();
  });
});

describe("the demo dApp's failures", () => {
  it("shows a refusal instead of data when the ApiKey is wrong", async () => {
    const page = await browser.newPage();
    await injectWallet(page, new Wallet(demoWallet(1).privateKey));
    await openDemo(page, `${pageOrigin}/demo?apiKey=wrong-key`, apiUrl);
    await page.click("#connect");
    await page.waitForSelector("body[data-state=done], body[data-state=failed]", { timeout: 60_000 });
    expect(await page.getAttribute("body", "data-state")).toBe("failed");
    expect(await page.textContent("#error")).toContain("10002");
    expect(await page.isVisible("#profile")).toBe(false);
    await page.close();
  });

  it("shows the failure, and no data, when the key nodes refuse to decrypt", async () => {
    const page = await browser.newPage();
    await injectWallet(page, new Wallet(demoWallet(1).privateKey));
    await page.route("**/v1/decryption-share", (route) =>
      route.fulfill({ status: 403, contentType: "application/json", body: JSON.stringify({ error: "forbidden", message: "not you" }) }),
    );
    await openDemo(page, `${pageOrigin}/demo`, apiUrl);
    await page.click("#connect");
    await page.waitForSelector("body[data-state=done], body[data-state=failed]", { timeout: 60_000 });
    expect(await page.getAttribute("body", "data-state")).toBe("failed");
    expect(await page.textContent("#error")).toMatch(/valid decryption share.*refused with HTTP 403: not you/);
    expect(await page.isVisible("#profile")).toBe(false);
    await page.close();
  });

  it("cannot call the API from an origin CORS_ORIGINS does not list", async () => {
    const page = await browser.newPage();
    const problems = watchProblems(page);
    await injectWallet(page, new Wallet(demoWallet(1).privateKey));
    // Same server, but the page's origin is now 127.0.0.1 and the API is called at localhost.
    await openDemo(page, `${apiUrl}/demo`, pageOrigin);
    await page.click("#connect");
    await page.waitForSelector("body[data-state=done], body[data-state=failed]", { timeout: 60_000 });
    expect(await page.getAttribute("body", "data-state")).toBe("failed");
    expect(problems.list.join("\n")).toMatch(/CORS|request failed/);
    await page.close();
  });
});

describe("the demo dApp and a link that names a server", () => {
  let attacker: Server;
  const seen: string[] = [];

  beforeAll(async () => {
    // A server that would take anything a page sends it: it lets every origin call it and records
    // each request, preflights included (their URL already carries the query string).
    attacker = createHttpServer((request, response) => {
      seen.push(`${request.method} ${request.url}`);
      response.writeHead(request.method === "OPTIONS" ? 204 : 200, {
        "access-control-allow-origin": "*",
        "access-control-allow-methods": "GET, POST",
        "access-control-allow-headers": "*",
        "content-type": "application/json",
      });
      response.end(request.method === "OPTIONS" ? undefined : "{}");
    });
    await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
  });

  afterAll(async () => {
    await new Promise((resolve) => attacker?.close(resolve));
  });

  it("sends the wallet's authorizations to its own origin, never to the server the link names", async () => {
    const attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
    const page = await browser.newPage();
    const signed = await injectWallet(page, new Wallet(demoWallet(1).privateKey));
    // The page is relgraph's own, so the wallet signs for relgraph's host: what SIWE_DOMAINS accepts.
    await page.goto(`${pageOrigin}/demo?server=${encodeURIComponent(attackerUrl)}`);
    const server = await page.inputValue("#server");
    await page.click("#connect");
    await page.waitForSelector("body[data-state=done], body[data-state=failed]", { timeout: 60_000 });
    // Before, the link's server got the Profile call, its authorization in the URL (sig=…&message=…).
    expect({ server, seen, state: await page.getAttribute("body", "data-state"), error: await page.textContent("#error") }).toEqual({
      server: pageOrigin,
      seen: [],
      state: "done",
      error: "",
    });
    expect(signed.length).toBe(2);
    await page.close();
  });
});

describe("the docs page", () => {
  it("renders the five operations from /openapi.json, with no asset from elsewhere, and tries one with the development key", async () => {
    const page = await browser.newPage();
    const problems = watchProblems(page);
    const foreign: string[] = [];
    page.on("request", (request) => {
      if (!request.url().startsWith(`${apiUrl}/`) && !request.url().startsWith("data:")) foreign.push(request.url());
    });
    await page.goto(`${apiUrl}/docs`);
    await page.waitForSelector("body[data-state=ready], body[data-state=failed]");
    expect(await page.getAttribute("body", "data-state")).toBe("ready");
    expect(await page.$$eval(".operation", (sections) => sections.map((s) => s.dataset.rpc))).toEqual([
      "Profile",
      "RelationshipGraph",
      "MultiDimensionalRecommendation",
      "MutualFriend",
      "MutualContractInteraction",
    ]);
    expect(await page.inputValue("#apikey")).toBe(DEV_API_KEY);

    // Try MutualFriend with the examples the document gives (demo users u1 and u2).
    const operation = page.locator(".operation[data-rpc=MutualFriend]");
    await operation.locator("button").click();
    await operation.locator("pre.response[data-status]").waitFor();
    expect(await operation.locator("pre.response").getAttribute("data-status")).toBe("200");
    const shown = (await operation.locator("pre.response").textContent())!;
    const envelope = JSON.parse(shown.slice(shown.indexOf("\n") + 1)) as { code: string; data: { relationId: { relationId: string } }[] };
    expect(envelope.code).toBe("0");
    const expected = (await rest("mutualFriend", { address: `${demoWallet(1).address},${demoWallet(2).address}`, limit: "10" })) as unknown[];
    expect(envelope.data).toEqual(expected);
    expect(expected.length).toBeGreaterThan(0);

    // The other two operations that need no signature answer their examples too.
    for (const rpc of ["MultiDimensionalRecommendation", "MutualContractInteraction"]) {
      const other = page.locator(`.operation[data-rpc=${rpc}]`);
      await other.locator("button").click();
      await other.locator("pre.response[data-status]").waitFor();
      expect(`${rpc} ${await other.locator("pre.response").getAttribute("data-status")}`).toBe(`${rpc} 200`);
      expect(await other.locator("pre.response").textContent()).toContain('"code": "0"');
    }

    // A wrong key is refused, and the page shows the refusal.
    await page.fill("#apikey", "wrong-key");
    await operation.locator("button").click();
    await page.waitForFunction(() => document.querySelector(".operation[data-rpc=MutualFriend] pre.response")?.getAttribute("data-status") === "401");
    expect(await operation.locator("pre.response").textContent()).toContain('"code": "10002"');

    expect(foreign).toEqual([]);
    expect(problems.list.filter((p) => !p.includes("401"))).toEqual([]);
    await page.close();
  });
});

async function rest(path: string, params: Record<string, string>): Promise<unknown> {
  const response = await fetch(`${apiUrl}/api/v1/${path}?${new URLSearchParams(params)}`, { headers: { ApiKey: DEV_API_KEY } });
  const envelope = (await response.json()) as { code: string; desc: string; data: unknown };
  if (envelope.code !== "0") throw new Error(`${path}: ${envelope.code} ${envelope.desc}`);
  return envelope.data;
}

/**
 * Opens the demo at `url` and points its form at `server`: a person types the server (a link can
 * name only the ApiKey and protocol).
 */
async function openDemo(page: Page, url: string, server: string): Promise<void> {
  await page.goto(url);
  await page.fill("#server", server);
}

