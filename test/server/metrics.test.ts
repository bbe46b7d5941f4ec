import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { addr, fixtureRecords } from "../support/fixtures.js";
import { SERVING_WAYS, TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { restGet } from "./http.js";

/** GET /metrics in Prometheus text format, with no ApiKey. */
describe("GET /metrics", () => {
  let server: RunningRelgraph;
  let sessions: Http2SessionManager;
  beforeAll(async () => {
    server = await startRelgraph({ records: fixtureRecords() });
    sessions = new Http2SessionManager(server.url);
  });
  afterAll(async () => {
    sessions?.abort();
    await server?.close();
  });

  it("counts requests by operation, protocol and code, times them, and times store calls", async () => {
    const question = { address: [addr("alice"), addr("bob")], limit: 2 };
    expect((await restGet(server.url, "/api/v1/mutualFriend", { address: question.address.join(","), limit: 2 })).status).toBe(200);
    expect((await restGet(server.url, "/api/v1/mutualFriend", {}, { apiKey: null })).status).toBe(401);
    const client = createClient(RelationService, createGrpcTransport({ baseUrl: server.url, sessionManager: sessions }));
    await client.mutualFriend(question, { headers: { apikey: TEST_API_KEY } });

    const response = await fetch(`${server.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    expect(text).toContain('relgraph_requests_total{operation="/api/v1/mutualFriend",protocol="rest",code="200"} 1');
    expect(text).toContain('relgraph_requests_total{operation="/api/v1/mutualFriend",protocol="rest",code="401"} 1');
    expect(text).toContain('relgraph_requests_total{operation="/relgraph.v1.RelationService/MutualFriend",protocol="grpc",code="0"} 1');
    expect(text).toMatch(/relgraph_request_duration_seconds_bucket\{le="0.0005",operation="\/api\/v1\/mutualFriend",protocol="rest"\} \d+/);
    expect(text).toMatch(/relgraph_store_call_duration_seconds_count\{method="\w+"\} [1-9]/);
    expect(text).toContain("relgraph_process_cpu_seconds_total");
  });

  it("gives clients no way to add series: a path nobody serves is counted under its route's pattern, or not at all", async () => {
    const series = async () => (await (await fetch(`${server.url}/metrics`)).text()).split("\n").filter((line) => /^relgraph_request(s_total|_duration_seconds_count)\{/.test(line)).length;
    const grpc = createClient(RelationService, createGrpcTransport({ baseUrl: server.url, sessionManager: sessions }));
    const askEverywhere = async (n: number) => {
      const junk = `no-such-${n}-"\\`;
      await restGet(server.url, `/api/v1/${encodeURIComponent(junk)}`, {});
      await fetch(`${server.url}/${encodeURIComponent(junk)}`);
      for (const contentType of ["application/json", "application/proto", "application/grpc-web+proto"]) {
        await fetch(`${server.url}/relgraph.v1.RelationService/${encodeURIComponent(junk)}`, { method: "POST", headers: { "content-type": contentType, apikey: TEST_API_KEY }, body: "{}" });
        await fetch(`${server.url}/grpc.health.v1.Health/${encodeURIComponent(junk)}`, { method: "POST", headers: { "content-type": contentType }, body: "{}" });
      }
      await grpc.mutualFriend({ address: [addr("alice"), addr("bob")], limit: 1 }, { headers: { apikey: TEST_API_KEY } });
    };
    await askEverywhere(0);
    const before = await series();
    for (let n = 1; n <= 20; n++) await askEverywhere(n);
    expect(await series()).toBe(before);
  });

  it("counts read-cache hits and misses by cache", async () => {
    const lookups = async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const count = (cache: string, result: string) => Number(new RegExp(`^relgraph_cache_lookups_total\\{cache="${cache}",result="${result}"\\} (\\d+)$`, "m").exec(text)?.[1]);
      return { hits: count("users", "hit"), misses: count("users", "miss"), entries: text };
    };
    const before = await lookups();
    // A question asked nowhere else here: the first asking misses, the second hits.
    const question = { address: `${addr("carol")},${addr("dave")}`, limit: 5 };
    expect((await restGet(server.url, "/api/v1/mutualFriend", question)).status).toBe(200);
    const first = await lookups();
    expect((await restGet(server.url, "/api/v1/mutualFriend", question)).status).toBe(200);
    const second = await lookups();
    expect(first.misses).toBeGreaterThan(before.misses);
    expect(second.hits).toBeGreaterThan(first.hits);
    expect(second.misses).toBe(first.misses);
    expect(second.entries).toMatch(/^relgraph_cache_entries\{cache="users"\} [1-9]\d*$/m);
    for (const cache of ["relationIds", "setSizes", "setMembers", "intersections"]) expect(second.entries).toContain(`relgraph_cache_lookups_total{cache="${cache}",result="hit"}`);
  });
});

/**
 * A call's `code` label is its status code (0 is OK, 16 unauthenticated, ...) whichever way it is
 * served: gRPC and gRPC-Web answer HTTP 200 even when a call fails, so the HTTP status says nothing.
 */
describe.each(SERVING_WAYS)("GET /metrics counts RPCs by their status code ($name)", ({ env }) => {
  let server: RunningRelgraph;
  let sessions: Http2SessionManager;
  beforeAll(async () => {
    server = await startRelgraph({ records: fixtureRecords(), env });
    sessions = new Http2SessionManager(server.url);
  });
  afterAll(async () => {
    sessions?.abort();
    await server?.close();
  });

  it("labels successes 0 and refusals by their code, on gRPC, gRPC-Web and Connect", async () => {
    const question = { address: [addr("alice"), addr("bob")], limit: 2 };
    const transports = {
      grpc: createGrpcTransport({ baseUrl: server.url, sessionManager: sessions }),
      "grpc-web": createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" }),
      connect: createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }),
    };
    for (const transport of Object.values(transports)) {
      const client = createClient(RelationService, transport);
      await client.mutualFriend(question, { headers: { apikey: TEST_API_KEY } });
      await client.mutualFriend(question, { headers: { apikey: TEST_API_KEY } });
      await expect(client.mutualFriend(question, { headers: { apikey: "no-such-key" } })).rejects.toThrow();
    }
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const count = (protocol: string, code: string) =>
      Number(new RegExp(`^relgraph_requests_total\\{operation="/relgraph\\.v1\\.RelationService/MutualFriend",protocol="${protocol}",code="${code}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
    for (const protocol of Object.keys(transports)) {
      expect({ protocol, ok: count(protocol, "0"), unauthenticated: count(protocol, "16"), http200: count(protocol, "200") }).toEqual({
        protocol,
        ok: 2,
        unauthenticated: 1,
        http200: 0,
      });
    }
    expect(text).toMatch(/^relgraph_request_duration_seconds_count\{operation="\/relgraph\.v1\.RelationService\/MutualFriend",protocol="grpc-web"\} 3$/m);
  });

  it("counts calls of unknown methods under one label, whatever their paths", async () => {
    for (const name of ["NoSuchA", "NoSuchB"]) {
      const response = await fetch(`${server.url}/relgraph.v1.RelationService/${name}`, {
        method: "POST",
        headers: { "content-type": "application/json", apikey: TEST_API_KEY },
        body: "{}",
      });
      expect(response.status).toBe(404);
    }
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).not.toContain("NoSuch");
    expect(text).toMatch(/^relgraph_requests_total\{operation="\/relgraph\.v1\.RelationService\/\*",protocol="connect",code="5"\} 2$/m);
  });
});
