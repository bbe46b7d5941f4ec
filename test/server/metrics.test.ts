import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { addr, fixtureRecords } from "../support/fixtures.js";
import { TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { restGet } from "./http.js";

/** Issue 15, operator's basics: GET /metrics in Prometheus text format, with no ApiKey. */
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
