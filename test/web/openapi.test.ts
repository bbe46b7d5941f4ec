import SwaggerParser from "@apidevtools/swagger-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_DATASET } from "../../src/synthetic/demo.js";
import { generateRecords } from "../../src/synthetic/generate.js";
import { REST_ROUTES } from "../../src/rest/facade.js";
import { startRelgraph, TEST_API_KEY, type RunningRelgraph } from "../support/relgraph-server.js";

/**
 * GET /openapi.json is valid OpenAPI 3.1, names every route the server serves (and no
 * route it does not), and describes each REST operation as the server runs it: its parameters are
 * the request message's fields, its examples answer, its error examples are what the server says.
 */

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, { summary?: string; parameters?: { name: string; example?: unknown; required?: boolean }[]; responses: Record<string, unknown> }>>;
};

let server: RunningRelgraph;
let doc: Doc;

beforeAll(async () => {
  server = await startRelgraph({ records: generateRecords(DEMO_DATASET) });
  const response = await fetch(`${server.url}/openapi.json`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  doc = (await response.json()) as Doc;
});

afterAll(() => server?.close());

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    expect(doc.openapi).toBe("3.1.0");
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
  });

  it("names every route the server serves, with its methods, and nothing else", async () => {
    // The Fastify instance is the server's own route table; RPC paths belong to the proto, not to REST.
    const { createRelgraph } = await import("../../src/relgraph.js");
    const { loadConfig } = await import("../../src/config/config.js");
    const { createMemoryStore } = await import("../../src/store/memory/memory-store.js");
    const relgraph = await createRelgraph(loadConfig({ API_KEYS: TEST_API_KEY, CORS_ORIGINS: "*" }), createMemoryStore(), { logLevel: false });
    try {
      await relgraph.server.ready();
      const served = new Map<string, Set<string>>();
      for (const line of relgraph.server.printRoutes({ commonPrefix: false }).split("\n")) {
        const match = /(\S+) \(([A-Z, ]+)\)$/.exec(line);
        if (!match) continue;
        const [, url, methods] = match as unknown as [string, string, string];
        if (url.startsWith("/relgraph.v1.") || url.startsWith("/grpc.")) continue; // Connect, gRPC-Web, reflection
        if (url === "*" || url === "/api/v1/*") continue; // CORS preflights; the envelope's "no such operation"
        const path = url.replace(/^\/dev-key-nodes\/\d+\//, "/dev-key-nodes/{index}/").replace(/:(\w+)/g, "{$1}");
        const set = served.get(path) ?? new Set<string>();
        for (const method of methods.split(", ")) if (method !== "HEAD") set.add(method.toLowerCase());
        served.set(path, set);
      }
      expect(served.size).toBeGreaterThan(10);
      const documented = new Map(Object.entries(doc.paths).map(([path, item]) => [path, new Set(Object.keys(item))]));
      expect(documented).toEqual(served);
      // The routes relgraph's own code serves are described, not just named.
      const summary = (path: string, method = "get") => doc.paths[path]![method]!.summary ?? "";
      for (const path of ["/healthz", "/readyz", "/key-network", "/openapi.json", "/docs", "/demo", "/web/{file}", "/dev-key-nodes/{index}/healthz"]) {
        expect(summary(path), path).not.toMatch(/^GET /);
      }
      expect(summary("/dev-key-nodes/{index}/v1/decryption-share", "post")).toMatch(/decryption share/);
    } finally {
      await relgraph.close();
    }
  });

  it("describes each REST route with its request message's fields as parameters", () => {
    for (const route of REST_ROUTES) {
      const operation = doc.paths[route.path]?.get;
      expect(operation, route.path).toBeDefined();
      expect(operation!.parameters!.map((p) => p.name)).toEqual(route.method.input.fields.map((f) => f.jsonName));
      expect(Object.keys(operation!.responses)).toContain("200");
    }
  });

  it("lists every error code of the contract in some operation, with the status the server answers it with", () => {
    const codes = new Map<string, string>();
    for (const item of Object.values(doc.paths)) {
      for (const operation of Object.values(item)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          const examples = (response as { content?: Record<string, { examples?: Record<string, { value: { code: string } }> }> }).content?.[
            "application/json"
          ]?.examples;
          for (const example of Object.values(examples ?? {})) codes.set(example.value.code, status);
        }
      }
    }
    expect(Object.fromEntries(codes)).toEqual({
      "10001": "401",
      "10002": "401",
      "10100": "401",
      "10101": "401",
      "10102": "403",
      "10110": "429",
      "11600": "400",
      "11602": "404",
      "11603": "400",
      "50000": "500",
      "50300": "503",
    });
  });

  it("gives examples that answer with success on the demo dataset", async () => {
    for (const route of REST_ROUTES.filter((r) => !r.method.input.fields.some((f) => f.jsonName === "sig"))) {
      const query = new URLSearchParams();
      for (const parameter of doc.paths[route.path]!.get!.parameters ?? []) {
        if (parameter.example === undefined) continue;
        const value = parameter.example;
        query.set(parameter.name, Array.isArray(value) ? value.join(",") : String(value));
      }
      const response = await fetch(`${server.url}${route.path}?${query}`, { headers: { ApiKey: TEST_API_KEY } });
      const body = (await response.json()) as { code: string; desc: string; data: unknown[] };
      expect(`${route.path}: ${body.code} ${body.desc}`).toBe(`${route.path}: 0 success`);
      // The documented success example has the shape of the real answer, field for field.
      const example = (doc.paths[route.path]!.get!.responses["200"] as { content: Record<string, { example: typeof body }> }).content[
        "application/json"
      ]!.example;
      expect(body.data.length, route.path).toBeGreaterThan(0);
      expect(shapeMismatches(example, body, route.path)).toEqual([]);
    }
  });
});

/** Where two JSON values differ in shape: key sets, and leaf types; null matches anything (social, game). */
function shapeMismatches(example: unknown, real: unknown, at: string): string[] {
  if (example === null || real === null) return [];
  if (Array.isArray(example) || Array.isArray(real)) {
    if (!Array.isArray(example) || !Array.isArray(real)) return [`${at}: list and not list`];
    return example.length === 0 || real.length === 0 ? [] : shapeMismatches(example[0], real[0], `${at}[0]`);
  }
  if (typeof example === "object" && typeof real === "object") {
    const a = example as Record<string, unknown>;
    const b = real as Record<string, unknown>;
    const keys = Object.keys(a).sort().join(",");
    if (keys !== Object.keys(b).sort().join(",")) return [`${at}: keys ${keys} against ${Object.keys(b).sort().join(",")}`];
    return Object.keys(a).flatMap((key) => shapeMismatches(a[key], b[key], `${at}.${key}`));
  }
  return typeof example === typeof real ? [] : [`${at}: ${typeof example} against ${typeof real}`];
}
