import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MutualFriendRequestSchema } from "../../gen/relgraph/v1/relation_service_pb.js";
import { createSiweVerifier } from "../../src/auth/siwe.js";
import { ConfigError, loadConfig } from "../../src/config/config.js";
import { dealKeyNetwork } from "../../src/crypto/keygen.js";
import { startKeyNode, type RunningKeyNode } from "../../src/crypto/key-node.js";
import { startRelgraph, TEST_API_KEY, type RunningRelgraph } from "../support/relgraph-server.js";

/**
 * CORS_ORIGINS opens REST, Connect, gRPC-Web and the key nodes to pages of those origins,
 * with the preflight allowing what connect-es's browser transports send plus ApiKey; other origins,
 * and every origin by default, get no CORS answer at all. Real requests over real sockets, with the
 * headers a browser sends.
 */

const APP = "https://app.example";
const CONNECT_HEADERS = ["content-type", "connect-protocol-version", "connect-timeout-ms", "apikey"];
const GRPC_WEB_HEADERS = ["content-type", "x-grpc-web", "x-user-agent", "grpc-timeout", "apikey"];

let server: RunningRelgraph;

beforeAll(async () => {
  server = await startRelgraph({ env: { CORS_ORIGINS: `${APP}, http://localhost:3000` } });
});
afterAll(() => server?.close());

function preflight(url: string, origin: string, method: string, headers: string[]) {
  return fetch(url, {
    method: "OPTIONS",
    headers: { Origin: origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers.join(",") },
  });
}

function allowedHeaders(response: Response): string[] {
  return (response.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(/,\s*/);
}

describe("CORS with CORS_ORIGINS set", () => {
  it.each([
    ["REST", "/api/v1/profile", "GET", ["apikey"]],
    ["Connect", "/relgraph.v1.RelationService/MutualFriend", "POST", CONNECT_HEADERS],
    ["gRPC-Web", "/relgraph.v1.RelationService/MutualFriend", "POST", GRPC_WEB_HEADERS],
    ["a development key node", "/dev-key-nodes/1/v1/decryption-share", "POST", ["content-type"]],
  ])("answers a %s preflight from a listed origin", async (_name, path, method, headers) => {
    const response = await preflight(`${server.url}${path}`, APP, method, headers);
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe(APP);
    expect(response.headers.get("access-control-allow-methods")).toContain(method);
    expect(allowedHeaders(response)).toEqual(expect.arrayContaining(headers));
    expect(response.headers.get("access-control-allow-credentials")).toBeNull();
  });

  it("lets a listed origin read REST answers, their request id and a rate-limited key's budget", async () => {
    const response = await fetch(`${server.url}/api/v1/mutualContractInteraction?address=x`, {
      headers: { Origin: "http://localhost:3000", ApiKey: TEST_API_KEY },
    });
    expect(response.headers.get("access-control-allow-origin")).toBe("http://localhost:3000");
    expect(response.headers.get("vary")).toMatch(/origin/i);
    const exposed = response.headers.get("access-control-expose-headers")?.toLowerCase().split(/\s*,\s*/);
    expect(exposed).toEqual(expect.arrayContaining(["x-request-id", "retry-after", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"]));
    expect(((await response.json()) as { code: string }).code).toBe("11600");
  });

  it("lets a listed origin read Connect answers (a browser's call goes past the unary fast path)", async () => {
    const response = await fetch(`${server.url}/relgraph.v1.RelationService/MutualFriend`, {
      method: "POST",
      headers: { Origin: APP, "content-type": "application/json", "connect-protocol-version": "1", apikey: TEST_API_KEY },
      body: JSON.stringify({ address: ["0x0000000000000000000000000000000000000001"], limit: 10 }),
    });
    expect(response.headers.get("access-control-allow-origin")).toBe(APP);
    expect(((await response.json()) as { code: string }).code).toBe("invalid_argument");
  });

  it("lets a listed origin read gRPC-Web answers, their status headers exposed", async () => {
    const message = toBinary(MutualFriendRequestSchema, create(MutualFriendRequestSchema, { address: ["0x01"], limit: 10 }));
    const frame = new Uint8Array(5 + message.length);
    new DataView(frame.buffer).setUint32(1, message.length);
    frame.set(message, 5);
    const response = await fetch(`${server.url}/relgraph.v1.RelationService/MutualFriend`, {
      method: "POST",
      headers: { Origin: APP, "content-type": "application/grpc-web+proto", "x-grpc-web": "1", apikey: TEST_API_KEY },
      body: frame,
    });
    await response.arrayBuffer();
    expect(response.headers.get("access-control-allow-origin")).toBe(APP);
    expect(response.headers.get("access-control-expose-headers")?.toLowerCase()).toContain("grpc-status");
  });

  it("gives an origin it does not list no CORS answer, so browsers keep the answer from its pages", async () => {
    const response = await preflight(`${server.url}/api/v1/profile`, "https://evil.example", "GET", ["apikey"]);
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    const answer = await fetch(`${server.url}/healthz`, { headers: { Origin: "https://evil.example" } });
    expect(answer.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("CORS by default", () => {
  it("answers no cross-origin request: preflights find no route and answers carry no CORS headers", async () => {
    const closed = await startRelgraph();
    try {
      const response = await preflight(`${closed.url}/api/v1/profile`, APP, "GET", ["apikey"]);
      expect(response.status).toBe(404);
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      const answer = await fetch(`${closed.url}/healthz`, { headers: { Origin: APP } });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("access-control-allow-origin")).toBeNull();
    } finally {
      await closed.close();
    }
  });

  it("answers any origin with * when CORS_ORIGINS is *", async () => {
    const open = await startRelgraph({ env: { CORS_ORIGINS: "*" } });
    try {
      const response = await preflight(`${open.url}/api/v1/profile`, "https://anyone.example", "GET", ["apikey"]);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
    } finally {
      await open.close();
    }
  });

  it("refuses a CORS_ORIGINS entry that no browser would send", () => {
    expect(() => loadConfig({ CORS_ORIGINS: "https://app.example/" })).toThrow(ConfigError);
    expect(() => loadConfig({ CORS_ORIGINS: "app.example" })).toThrow(ConfigError);
    expect(loadConfig({ CORS_ORIGINS: " https://a.example , http://localhost:3000 " }).corsOrigins).toEqual([
      "https://a.example",
      "http://localhost:3000",
    ]);
  });
});

describe("CORS on a standalone key node", () => {
  let node: RunningKeyNode;

  beforeAll(async () => {
    const { shares } = dealKeyNetwork({ threshold: 1, nodes: 1, url: () => "http://127.0.0.1:0" });
    node = await startKeyNode({
      share: shares[0]!,
      verifier: createSiweVerifier({ domains: [], maxAgeSeconds: 3600 }),
      port: 0,
      host: "127.0.0.1",
      corsOrigins: [APP],
    });
  });
  afterAll(() => node?.close());

  it("lets a listed origin ask for a decryption share", async () => {
    const response = await preflight(`${node.url}/v1/decryption-share`, APP, "POST", ["content-type"]);
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe(APP);
    const answer = await fetch(`${node.url}/v1/decryption-share`, {
      method: "POST",
      headers: { Origin: APP, "content-type": "application/json" },
      body: "{}",
    });
    expect(answer.status).toBe(400);
    expect(answer.headers.get("access-control-allow-origin")).toBe(APP);
  });
});
