import { createHash, randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Wallet } from "ethers";
import { availableParallelism } from "node:os";
import { createRelgraphClient } from "../../src/client/index.js";
import { loadEncryptionCurve } from "../../src/crypto/encryption-curve.js";
import { encryptKey } from "../../src/crypto/ibe.js";
import { startKeyNodes } from "../../test/support/keynodes.js";
import { gets, httpSaturate } from "../load/http-load.js";
import { cpuSeconds, freePort, run, start } from "../processes/processes.js";
import { signAuthorizations, type Authorization } from "../workload/siwe-auth.js";

/**
 * Issue 35's measurements, `--only private`: encrypted answers beside open ones, in one run, on the
 * bench's Redis with a 2-of-3 key network of `relgraph keynode` processes and a relgraph server of its
 * own that uses it (KEY_NETWORK_FILE). Every REST figure is autocannon at saturation over the same
 * number of connections, so the ratios compare like with like; the dApp figures are relgraph/client
 * in this process over loopback. Figures are whatever this machine delivers while they run.
 */

const MAIN = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

/** Connections of the REST runs: the issue's. */
export const PRIVATE_CONNECTIONS = 16;
/** The paged graph's size and page: the issue's dApp. */
export const GRAPH_FRIENDS = 1000;
export const GRAPH_PAGE = 20;

/** What measurePrivate needs from the bench. */
export interface PrivateContext {
  redisUrl: string;
  work: string;
  /** Users the bench can sign for, each with a profile and released friends in the store. */
  wallets: readonly { relationId: string; address: string; wallet: Wallet }[];
  /** relationIds of stored users, of which the paged graph's owner befriends GRAPH_FRIENDS. */
  friendPool: readonly string[];
  /** mutualFriend REST paths (the bench's median × median pairs). */
  mutualFriendPaths: readonly string[];
  durationSeconds: number;
  /** Share requests timed for the key-node CPU figure. */
  shares: number;
  /** Also time the first decryption in Chromium through /demo (needs Debian's chromium). */
  chromium: boolean;
  log: (line: string) => void;
}

/** One REST figure. */
export interface RestFigure {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** CPU of the relgraph server process (every thread, the encryption workers included) per answered request, µs. */
  serverCpuUs: number | null;
}

/** The figures, named as in the issue's table. */
export interface PrivateResult {
  connections: number;
  mutualFriend: RestFigure;
  profileReused: RestFigure;
  graphReused: RestFigure;
  profileFresh: RestFigure & { authorizations: number; requests: number };
  ratios: { profileReused: number; graphReused: number; profileFresh: number };
  /** relgraph/client in Node: the first Profile decrypted (fresh client, fresh authorization), ms. */
  dappFirstProfileMs: { median: number; first: number; trials: number };
  /** relgraph/client paging the GRAPH_FRIENDS graph: ms per page after the first. */
  dappPages: { pages: number; entries: number; firstPageMs: number; laterPageMs: number };
  /**
   * The ceiling of fresh authorizations on this machine: one payload-key encryption (the server's
   * curve, on one thread of this process), and the rate every core would reach doing nothing else.
   */
  freshCeiling: { encryptionMs: number; cores: number; rps: number; ratio: number };
  /** CPU of the key-node processes per share served. */
  keyNodeCpuPerShareMs: { verifiedAuthorization: number; freshAuthorization: number; shares: number };
  /** The first Profile decrypted in Chromium through /demo, ms; null when not measured. */
  chromiumFirstProfileMs: number | null;
  chromiumNote: string | null;
}

/** Runs the measurements; starts and stops its own key nodes and server. */
export async function measurePrivate(context: PrivateContext): Promise<PrivateResult> {
  const { log } = context;
  const relgraphPort = await freePort();
  const origin = `http://127.0.0.1:${relgraphPort}`;
  // The CPU figure sends many shares from one address: the limit is lifted so that it measures work, not refusals.
  const nodes = await startKeyNodes({
    threshold: 2,
    nodes: 3,
    env: { KEY_NODE_RATE_LIMIT_PER_SECOND: "1000000", KEY_NODE_RATE_LIMIT_BURST: "1000000", CORS_ORIGINS: origin },
  });
  try {
    const networkFile = path.join(context.work, "private-key-network.json");
    await writeFile(networkFile, JSON.stringify(nodes.network));
    const owner = await addGraphOwner(context);
    const apiKey = `bench-private-${randomBytes(8).toString("hex")}`;
    const server = await start(process.execPath, [MAIN, "serve"], {
      env: { REDIS_URL: context.redisUrl, API_KEYS: apiKey, KEY_NETWORK_FILE: networkFile, PORT: String(relgraphPort), HOST: "127.0.0.1", LOG_LEVEL: "warn", CORS_ORIGINS: origin },
      ready: /relgraph listening on/,
    });
    try {
      const target = (paths: readonly string[]) => ({ baseUrl: origin, requests: gets(paths), headers: { ApiKey: apiKey } });
      const saturate = async (name: string, paths: readonly string[], warm: boolean): Promise<RestFigure> => {
        log(`bench: private: ${name} …`);
        if (warm) await httpSaturate(target(paths), PRIVATE_CONNECTIONS, Math.min(2, context.durationSeconds));
        const cpuBefore = await cpuSeconds(server.pid);
        const result = await httpSaturate(target(paths), PRIVATE_CONNECTIONS, context.durationSeconds);
        const serverCpuUs = result.requests > 0 ? ((await cpuSeconds(server.pid)) - cpuBefore) * 1e6 / result.requests : null;
        return { rps: result.rps, p50Ms: result.p50Ms, p99Ms: result.p99Ms, errors: result.errors, serverCpuUs };
      };
      const wallets = context.wallets.map((w) => w.wallet);
      const query = (operation: "profile" | "relationshipGraph", address: string, { sig, message }: Authorization) =>
        `/api/v1/${operation}?address=${address}&sig=${sig}&message=${encodeURIComponent(message)}${operation === "relationshipGraph" ? `&limit=${GRAPH_PAGE}` : ""}`;

      const mutualFriend = await saturate("mutualFriend over REST", context.mutualFriendPaths, true);
      const profileAuth = await signAuthorizations(wallets, "profile");
      const graphAuth = await signAuthorizations(wallets, "relationshipGraph");
      const profileReused = await saturate(
        `Profile, ${wallets.length} users re-asking`,
        context.wallets.map((w, i) => query("profile", w.address, profileAuth[i]!)),
        true,
      );
      const graphReused = await saturate(
        `Relationship graph (limit ${GRAPH_PAGE}), ${wallets.length} users re-asking`,
        context.wallets.map((w, i) => query("relationshipGraph", w.address, graphAuth[i]!)),
        true,
      );
      // Enough distinct authorizations that none is asked twice at the rate the reused ones reached.
      const freshCount = Math.min(20_000, Math.max(500, Math.ceil(profileReused.rps * 0.4 * context.durationSeconds)));
      log(`bench: private: signing ${freshCount} authorizations …`);
      const fresh: string[] = [];
      while (fresh.length < freshCount) {
        const batch = await signAuthorizations(wallets, "profile");
        batch.forEach((auth, i) => fresh.push(query("profile", context.wallets[i]!.address, auth)));
      }
      const profileFreshFigure = await saturate("Profile, a fresh authorization per request", fresh.slice(0, freshCount), false);
      const profileFresh = {
        ...profileFreshFigure,
        authorizations: freshCount,
        requests: Math.round(profileFreshFigure.rps * context.durationSeconds),
      };

      log("bench: private: dApp, first Profile decrypted …");
      const dappFirstProfileMs = await firstProfiles(origin, apiKey, context.wallets.slice(0, 10));
      log(`bench: private: dApp, every page of a ${GRAPH_FRIENDS}-friend graph …`);
      const dappPages = await pageGraph(origin, apiKey, owner);
      log("bench: private: one payload-key encryption, for the ceiling of fresh authorizations …");
      const encryptionMs = await encryptionCost(nodes.network.publicKey);
      const cores = availableParallelism();
      const ceilingRps = (cores * 1000) / encryptionMs;
      const freshCeiling = { encryptionMs, cores, rps: ceilingRps, ratio: ceilingRps / mutualFriend.rps };
      log("bench: private: key-node CPU per share …");
      const keyNodeCpuPerShareMs = await shareCpu(nodes, context.wallets[0]!.wallet, context.shares);
      let chromiumFirstProfileMs: number | null = null;
      let chromiumNote: string | null = "not asked for";
      if (context.chromium) {
        log("bench: private: first decryption in Chromium through /demo …");
        try {
          const chromium = await chromiumFirstProfile(origin, apiKey, context.wallets[1]!);
          chromiumFirstProfileMs = chromium.ms;
          chromiumNote = `in ms after the click: ${chromium.phases}`;
          log(`bench: private: Chromium: ${chromiumNote}`);
        } catch (error) {
          chromiumNote = `not measured: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`;
        }
      }
      return {
        connections: PRIVATE_CONNECTIONS,
        mutualFriend,
        profileReused,
        graphReused,
        profileFresh,
        ratios: {
          profileReused: profileReused.rps / mutualFriend.rps,
          graphReused: graphReused.rps / mutualFriend.rps,
          profileFresh: profileFresh.rps / mutualFriend.rps,
        },
        dappFirstProfileMs,
        dappPages,
        freshCeiling,
        keyNodeCpuPerShareMs,
        chromiumFirstProfileMs,
        chromiumNote,
      };
    } finally {
      await server.stop();
    }
  } finally {
    await nodes.close();
  }
}

/** Milliseconds of one payload-key encryption as the server makes it, timed over many on this thread after a warm-up. */
async function encryptionCost(publicKey: string): Promise<number> {
  const curve = await loadEncryptionCurve();
  const key = curve.publicKey(Buffer.from(publicKey, "hex"));
  const payloadKey = randomBytes(32);
  const encrypt = (i: number) => encryptKey(key, `bench-ceiling-identity-${i}`, payloadKey, curve);
  for (let i = 0; i < 20; i++) encrypt(i);
  const count = 200;
  const started = performance.now();
  for (let i = 0; i < count; i++) encrypt(20 + i);
  return (performance.now() - started) / count;
}

/** A bench wallet with GRAPH_FRIENDS released friends, added with `relgraph ingest`. */
async function addGraphOwner(context: PrivateContext): Promise<{ wallet: Wallet; relationId: string }> {
  if (context.friendPool.length < GRAPH_FRIENDS) throw new Error(`the dataset has fewer than ${GRAPH_FRIENDS} users to befriend`);
  const wallet = new Wallet(`0x${createHash("sha256").update("relgraph-bench-private-owner").digest("hex")}`);
  const relationId = "bench-private-owner";
  const lines = [
    { type: "user", relationId, name: "Bench private owner", avatar: "", addresses: [wallet.address.toLowerCase()] },
    ...context.friendPool.slice(0, GRAPH_FRIENDS).map((friend) => ({ type: "friend", a: relationId, b: friend, description: "paged" })),
    { type: "release", relationId, peers: "*" },
  ];
  const file = path.join(context.work, "private-owner.jsonl");
  await writeFile(file, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
  const ingest = await run(process.execPath, [MAIN, "ingest", file], { REDIS_URL: context.redisUrl }, "  ingest: ");
  if (ingest.code !== 0) throw new Error(`relgraph ingest of the paged graph's owner failed (exit ${ingest.code}): ${ingest.stderr.slice(-500)}`);
  return { wallet, relationId };
}

function signerOf(wallet: Wallet) {
  return { address: wallet.address, signMessage: (message: string) => wallet.signMessage(message) };
}

/** A new client and a new authorization per trial, signed before the clock starts (the wallet's time is not relgraph's). */
async function firstProfiles(baseUrl: string, apiKey: string, users: PrivateContext["wallets"]): Promise<PrivateResult["dappFirstProfileMs"]> {
  const times: number[] = [];
  for (const user of users) {
    const client = createRelgraphClient({ baseUrl, apiKey });
    const authorization = await client.authorize("profile", signerOf(user.wallet));
    const started = performance.now();
    await client.decryptedProfile({ address: user.address }, authorization);
    times.push(performance.now() - started);
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)]!, first: times[0]!, trials: times.length };
}

async function pageGraph(baseUrl: string, apiKey: string, owner: { wallet: Wallet }): Promise<PrivateResult["dappPages"]> {
  const client = createRelgraphClient({ baseUrl, apiKey });
  const authorization = await client.authorize("relationshipGraph", signerOf(owner.wallet));
  const me = { address: owner.wallet.address };
  let started = performance.now();
  let page = await client.decryptedRelationshipGraph(me, authorization, { limit: GRAPH_PAGE });
  const firstPageMs = performance.now() - started;
  let entries = page.data.length;
  let pages = 1;
  started = performance.now();
  while (page.cursor !== "") {
    page = await client.decryptedRelationshipGraph(me, authorization, { limit: GRAPH_PAGE, cursor: page.cursor });
    entries += page.data.length;
    pages++;
  }
  const laterPageMs = pages > 1 ? (performance.now() - started) / (pages - 1) : 0;
  return { pages, entries, firstPageMs, laterPageMs };
}

/**
 * CPU seconds the key-node processes spent (from /proc) over `count` share requests, 16 in flight,
 * each for a new identity: once under one authorization (verified once, then remembered), once with
 * a new authorization each (a signature check per share).
 */
async function shareCpu(
  nodes: Awaited<ReturnType<typeof startKeyNodes>>,
  wallet: Wallet,
  count: number,
): Promise<PrivateResult["keyNodeCpuPerShareMs"]> {
  const node = nodes.network.nodes[0]!;
  const pid = nodes.pids.get(node.index)!;
  const url = `${node.url.replace(/\/$/, "")}/v1/decryption-share`;
  const conditions = [
    { contractAddress: "", standardContractType: "", chain: "ethereum", method: "", parameters: [":userAddress"], returnValueTest: { comparator: "=", value: wallet.address.toLowerCase() } },
  ];
  const send = async (authorizations: readonly Authorization[]) => {
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const { sig, message } = authorizations[next++ % authorizations.length]!;
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ accessControlConditions: conditions, dataToEncryptHash: randomBytes(32).toString("hex"), authSig: { sig, signedMessage: message } }),
        });
        if (!response.ok) throw new Error(`a key node answered HTTP ${response.status}: ${await response.text()}`);
        await response.arrayBuffer();
      }
    };
    const before = await cpuSeconds(pid);
    await Promise.all(Array.from({ length: 16 }, worker));
    return (((await cpuSeconds(pid)) - before) * 1000) / count;
  };
  const one = await signAuthorizations([wallet], "profile");
  await send(one); // warm-up: JIT, connections
  const verifiedAuthorization = await send(one);
  const many: Authorization[] = [];
  while (many.length < count) many.push(...(await signAuthorizations([wallet], "profile")));
  const freshAuthorization = await send(many);
  return { verifiedAuthorization, freshAuthorization, shares: count };
}

/**
 * Opens /demo in headless Chromium with a wallet, and times, on the page's clock, from the click on
 * "connect" to the decrypted profile on the page: signing (in this process, as a wallet would), the Profile call, the key nodes and
 * the decryption in the page's WebAssembly. The page and the API share one origin.
 */
async function chromiumFirstProfile(
  baseUrl: string,
  apiKey: string,
  user: PrivateContext["wallets"][number],
): Promise<{ ms: number; phases: string }> {
  const { injectWallet, launchChromium } = await import("../../test/support/chromium.js");
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await injectWallet(page, user.wallet);
    await page.goto(`${baseUrl}/demo?apiKey=${encodeURIComponent(apiKey)}&address=${user.address}`);
    await page.waitForSelector("#connect");
    await page.click("#connect");
    await page.waitForFunction(() => (document.querySelector("#profile-name")?.textContent ?? "") !== "" || document.body.dataset.state === "failed", null, {
      timeout: 60_000,
    });
    if ((await page.getAttribute("body", "data-state")) === "failed") throw new Error(`the demo failed: ${await page.textContent("#error")}`);
    // On the page's own clock, from the click event to the profile on the page: what the user waits,
    // without Playwright's own round trips and polling around it.
    const elapsed = await page.evaluate(() => {
      const mark = (name: string) => performance.getEntriesByName(name, "mark")[0]?.startTime ?? Number.NaN;
      return mark("demo:profile-shown") - mark("demo:connect");
    });
    if (!Number.isFinite(elapsed)) throw new Error("the demo did not mark its click and profile");
    return { ms: elapsed, phases: await page.evaluate(demoPhases) };
  } finally {
    await browser.close();
  }
}

/**
 * Where the page's wait went, from its performance marks (demo.ts) and resource timings, in ms after
 * the click on "connect": runs in the page.
 */
function demoPhases(): string {
  const mark = (name: string) => performance.getEntriesByName(name, "mark")[0]?.startTime;
  const click = mark("demo:connect") ?? 0;
  const at = (name: string) => {
    const time = mark(name);
    return time === undefined ? "–" : `${(time - click).toFixed(0)}`;
  };
  const fetches = (performance.getEntriesByType("resource") as PerformanceResourceTiming[])
    .filter((entry) => entry.startTime >= click)
    .map((entry) => {
      const name = new URL(entry.name).pathname.replace(/^.*\/(?=[^/]+$)/, "");
      return `${name} ${(entry.startTime - click).toFixed(0)}–${(entry.responseEnd - click).toFixed(0)}`;
    });
  return `WebAssembly ready at ${at("demo:wasm-ready")}; signed at ${at("demo:signed")}; ${fetches.join(", ")}; profile shown at ${at("demo:profile-shown")}`;
}

/** The table of the closing note: each figure beside the issue's target and goal. */
export function renderPrivate(result: PrivateResult): string {
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  const rest = (figure: RestFigure) =>
    `${figure.rps.toFixed(0)} req/s, p50 ${figure.p50Ms} ms, p99 ${figure.p99Ms} ms${figure.serverCpuUs === null ? "" : `, server CPU ${figure.serverCpuUs.toFixed(0)} µs a request`}${figure.errors > 0 ? `, ${figure.errors} errors` : ""}`;
  const rows = [
    ["mutualFriend over REST (the reference)", rest(result.mutualFriend), "", ""],
    ["Profile, 20 users re-asking ÷ mutualFriend", `${result.ratios.profileReused.toFixed(3)} (${rest(result.profileReused)})`, "≥ 0.5", "≥ 0.9"],
    [`Relationship graph (limit ${GRAPH_PAGE}), same users ÷ mutualFriend`, `${result.ratios.graphReused.toFixed(3)} (${rest(result.graphReused)})`, "≥ 0.4", "≥ 0.8"],
    [
      "Profile, a fresh authorization per request ÷ mutualFriend",
      `${result.ratios.profileFresh.toFixed(3)} (${rest(result.profileFresh)}; ${result.profileFresh.authorizations} authorizations${result.profileFresh.requests > result.profileFresh.authorizations ? ", some reused" : ""})`,
      "≥ 0.1",
      "≥ 0.3",
    ],
    ["dApp (relgraph/client, Node): first Profile decrypted", `${ms(result.dappFirstProfileMs.median)} median of ${result.dappFirstProfileMs.trials} (very first: ${ms(result.dappFirstProfileMs.first)})`, "≤ 150 ms", "≤ 50 ms"],
    [
      `dApp: every page of a ${GRAPH_FRIENDS}-friend graph after the first`,
      `${ms(result.dappPages.laterPageMs)} a page (${result.dappPages.pages} pages, ${result.dappPages.entries} entries; first page ${ms(result.dappPages.firstPageMs)})`,
      "≤ 20 ms",
      "≤ 5 ms",
    ],
    [
      "… the machine's ceiling for fresh authorizations ÷ mutualFriend",
      `${result.freshCeiling.ratio.toFixed(3)} (${result.freshCeiling.rps.toFixed(0)} req/s: ${result.freshCeiling.cores} cores doing nothing but encryptions of ${ms(result.freshCeiling.encryptionMs)} each, one pairing in WebAssembly and blst's multiples)`,
      "",
      "",
    ],
    [
      "key-node CPU per share",
      `${result.keyNodeCpuPerShareMs.verifiedAuthorization.toFixed(2)} ms (authorization already verified); ${result.keyNodeCpuPerShareMs.freshAuthorization.toFixed(2)} ms with a new authorization each`,
      "≤ 2 ms",
      "≤ 0.5 ms",
    ],
    [
      "first decryption in Chromium through /demo",
      result.chromiumFirstProfileMs === null
        ? (result.chromiumNote ?? "not measured")
        : `${ms(result.chromiumFirstProfileMs)}${result.chromiumNote === null ? "" : ` (${result.chromiumNote})`}`,
      "≤ 300 ms",
      "≤ 100 ms",
    ],
  ];
  return [
    `Private answers (issue 35): Redis, 2-of-3 key nodes as processes, REST over ${result.connections} connections`,
    "| measurement | figure | target | goal |",
    "|---|---|---|---|",
    ...rows.map((row) => `| ${row.join(" | ")} |`),
  ].join("\n");
}
