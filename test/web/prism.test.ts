import { spawn, type ChildProcess } from "node:child_process";
import type { AddressInfo } from "node:net";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { PROFILE_STATEMENT, RELATIONSHIP_GRAPH_STATEMENT } from "../../src/domain/statements.js";
import { loadDemoDataset } from "../../src/synthetic/demo.js";
import { demoWallet } from "../../src/synthetic/demo-wallet.js";
import { DEV_API_KEY, createRelgraph, type Relgraph } from "../../src/relgraph.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { signAuthorization } from "../support/keynodes.js";
import { freePort } from "../support/ports.js";

/*
 * Stoplight Prism's validation proxy (a pinned dev dependency), holding every answer of a fresh
 * relgraph against relgraph's own /openapi.json: every route, asked a valid, an invalid, an
 * unknown-user, a no-key and a wrong-key request. Prism reports what disagrees with the document in
 * each answer's sl-violations header; there must be none about an answer, and none about a request
 * that is valid.
 */

interface Violation {
  location: string[];
  severity: string;
  message: string;
}

interface OpenApiOperation {
  "x-relgraph-rpc"?: string;
  parameters?: { name: string; schema?: { type?: string } }[];
}

let relgraph: Relgraph;
let prism: ChildProcess;
let prismOutput = "";
let proxyUrl: string;
let document: { paths: Record<string, Record<string, OpenApiOperation>> };

beforeAll(async () => {
  const store = createMemoryStore();
  await loadDemoDataset(store);
  relgraph = await createRelgraph(loadConfig({}), store, { devApiKey: true, logLevel: false });
  await relgraph.server.listen({ port: 0, host: "127.0.0.1" });
  const url = `http://127.0.0.1:${(relgraph.server.server.address() as AddressInfo).port}`;
  document = (await (await fetch(`${url}/openapi.json`)).json()) as typeof document;
  const port = await freePort();
  proxyUrl = `http://127.0.0.1:${port}`;
  prism = spawn(process.execPath, ["node_modules/@stoplight/prism-cli/dist/index.js", "proxy", `${url}/openapi.json`, url, "-p", String(port), "-h", "127.0.0.1"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  prism.stdout!.on("data", (chunk: Buffer) => (prismOutput += chunk.toString()));
  prism.stderr!.on("data", (chunk: Buffer) => (prismOutput += chunk.toString()));
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (prism.exitCode !== null) throw new Error(`prism exited with ${prism.exitCode}:\n${prismOutput}`);
    try {
      await fetch(`${proxyUrl}/healthz`);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`prism did not listen within 90 s:\n${prismOutput}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}, 120_000);

afterAll(async () => {
  if (prism && prism.exitCode === null) {
    const exited = new Promise((resolve) => prism.once("exit", resolve));
    prism.kill("SIGTERM");
    await exited;
  }
  await relgraph?.close();
});

const UNKNOWN = new Wallet("0x" + "42".repeat(32)).address.toLowerCase();
const KNOWN = [demoWallet(1).address.toLowerCase(), demoWallet(2).address.toLowerCase()];

type Kind = "valid" | "invalid" | "unknown user" | "no key" | "wrong key";

/** The query of one kind of request to a relation operation. */
async function queryOf(operation: OpenApiOperation, kind: Kind): Promise<URLSearchParams> {
  const query = new URLSearchParams();
  const names = (operation.parameters ?? []).map((parameter) => parameter.name);
  const list = operation.parameters?.find((parameter) => parameter.name === "address")?.schema?.type === "array";
  const rpc = operation["x-relgraph-rpc"];
  const statement = rpc === "Profile" ? PROFILE_STATEMENT : rpc === "RelationshipGraph" ? RELATIONSHIP_GRAPH_STATEMENT : null;
  if (names.includes("address")) {
    const addresses = kind === "unknown user" ? [UNKNOWN, KNOWN[1]!] : KNOWN;
    query.set("address", list ? addresses.join(",") : addresses[0]!);
  }
  if (names.includes("limit")) query.set("limit", kind === "invalid" ? "0" : "10");
  if (statement !== null) {
    const signed = await signAuthorization(new Wallet(kind === "unknown user" ? "0x" + "42".repeat(32) : demoWallet(1).privateKey), statement);
    query.set("message", signed.message);
    query.set("sig", kind === "invalid" ? "0x00" : signed.sig);
  }
  return query;
}

describe("Prism's validation proxy on relgraph's own OpenAPI document", () => {
  it("finds 0 violations over every route for valid, invalid, unknown-user, no-key and wrong-key requests", async () => {
    const found: string[] = [];
    const statuses: string[] = [];
    let requests = 0;
    const ask = async (path: string, kind: Kind, query: URLSearchParams) => {
      const headers: Record<string, string> = kind === "no key" ? {} : { ApiKey: kind === "wrong key" ? "wrong-key" : DEV_API_KEY };
      const response = await fetch(`${proxyUrl}${path}${query.size > 0 ? `?${query}` : ""}`, { headers });
      await response.arrayBuffer();
      requests++;
      statuses.push(`${kind} ${path} ${response.status}`);
      const violations = JSON.parse(response.headers.get("sl-violations") ?? "[]") as Violation[];
      for (const violation of violations) {
        // An invalid request is invalid by design: only what Prism says about the answer counts there.
        if (violation.location[0] === "request" && kind !== "valid") continue;
        found.push(`${kind} ${path} → ${response.status}: ${violation.location.join(".")}: ${violation.message}`);
      }
      return response.status;
    };
    for (const [path, methods] of Object.entries(document.paths)) {
      const operation = methods.get;
      if (operation === undefined || path.includes("{")) continue;
      if (operation["x-relgraph-rpc"] === undefined) {
        await ask(path, "valid", new URLSearchParams());
        continue;
      }
      for (const kind of ["valid", "invalid", "unknown user", "no key", "wrong key"] as const) {
        const status = await ask(path, kind, await queryOf(operation, kind));
        if (kind === "valid") expect(`${path} ${status}`).toBe(`${path} 200`);
      }
    }
    expect(requests).toBeGreaterThan(30);
    expect(found, statuses.join("\n")).toEqual([]);
  }, 120_000);
});
