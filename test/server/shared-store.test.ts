import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorDetailSchema, RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { createApiKey } from "../../src/auth/api-keys.js";
import { generateRecords } from "../../src/synthetic/generate.js";
import type { IngestRecord } from "../../src/ingest/format.js";
import { createStore } from "../../src/store/index.js";
import { addr, fixtureRecords } from "../support/fixtures.js";
import { startRedisCluster, startRedisServer } from "../support/redis-servers.js";
import { startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { createRelationGrpcClient, errorDetailsOf } from "./grpc-client.js";
import { restGet } from "./http.js";

/*
 * Several server instances on one real store (a standalone redis-server, and a 3-master Redis
 * Cluster) behave as one service: each opens the cursors the others issue, under the store's own
 * cursor key (no CURSOR_KEY set), and an ApiKey's rate limit is one budget spent on all of them
 * together, refused with 10110 on every protocol once spent.
 */

const generated: IngestRecord[] = [...generateRecords({ users: 300, seed: "relgraph-shared-store", meanDegree: 20 })].map((r) =>
  r.type === "user" ? { ...r, social: null, game: null } : r,
);
const records: IngestRecord[] = [...fixtureRecords(), ...generated];
const firstAddress = generated.find((r): r is Extract<IngestRecord, { type: "user" }> => r.type === "user")!.addresses[0]!;

const RECOMMENDATION = "/api/v1/multi-dimensional-recommendation";
const mutualContracts = { address: `${addr("alice")},${addr("bob")}` };
/** Windows long enough that none ends during a test: the budget is spent, not waited out. */
const env = { RATE_LIMIT_WINDOW_SECONDS: "3600" };

const backends = [
  {
    name: "standalone redis-server",
    start: async () => {
      const redis = await startRedisServer();
      return { stop: () => redis.stop(), config: { redisUrl: redis.url, redisClusterNodes: [] as string[] } };
    },
  },
  {
    name: "3-master Redis Cluster",
    start: async () => {
      const cluster = await startRedisCluster();
      return { stop: () => cluster.stop(), config: { redisUrl: null, redisClusterNodes: cluster.nodes } };
    },
  },
];

describe.each(backends)("two instances on one $name", ({ start }) => {
  let backend: Awaited<ReturnType<typeof start>>;
  let one: RunningRelgraph;
  let two: RunningRelgraph;

  beforeAll(async () => {
    backend = await start();
    one = await startRelgraph({ store: await createStore(backend.config), records, env });
    two = await startRelgraph({ store: await createStore(backend.config), env });
  });
  afterAll(async () => {
    await Promise.all([one?.close(), two?.close()]);
    await backend?.stop();
  });

  it("open each other's cursors, with no CURSOR_KEY set", async () => {
    const servers = [one, two];
    const seen: string[] = [];
    let cursor = "";
    for (let page = 0; page < 6; page++) {
      const { status, body } = await restGet(servers[page % 2]!.url, RECOMMENDATION, { address: firstAddress, limit: 3, cursor });
      expect(status, JSON.stringify(body)).toBe(200);
      seen.push(...(body.data as { relationId: { relationId: string } }[]).map((user) => user.relationId.relationId));
      cursor = body.cursor as string;
      if (cursor === "") break;
    }
    expect(seen.length).toBeGreaterThan(3);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("refuse an edited cursor with 11603, and a cursor of a server with another key", async () => {
    const first = await restGet(one.url, RECOMMENDATION, { address: firstAddress, limit: 2 });
    const cursor = first.body.cursor as string;
    expect(cursor).not.toBe("");
    const bytes = Buffer.from(cursor, "base64url");
    bytes[bytes.length >> 1]! ^= 0x01;
    for (const server of [one, two]) {
      const edited = await restGet(server.url, RECOMMENDATION, { address: firstAddress, limit: 2, cursor: bytes.toString("base64url") });
      expect(edited.status).toBe(400);
      expect(edited.body).toMatchObject({ code: "11603", data: null });
    }
    const foreign = await startRelgraph({ store: await createStore(backend.config), env: { ...env, CURSOR_KEY: "ab".repeat(32) } });
    try {
      const refused = await restGet(foreign.url, RECOMMENDATION, { address: firstAddress, limit: 2, cursor });
      expect(refused.body).toMatchObject({ code: "11603", data: null });
    } finally {
      await foreign.close();
    }
  });

  it("spend one rate-limit budget per ApiKey between them, refused with 10110 on every protocol", async () => {
    const { key } = await createApiKey(one.store, "limited", 4);
    const rest = (server: RunningRelgraph) =>
      fetch(`${server.url}/api/v1/mutualContractInteraction?${new URLSearchParams(mutualContracts)}`, { headers: { ApiKey: key } });

    const remaining: string[] = [];
    for (const server of [one, two, one, two]) {
      const response = await rest(server);
      expect(response.status).toBe(200);
      expect(response.headers.get("ratelimit-limit")).toBe("4");
      expect(Number(response.headers.get("ratelimit-reset"))).toBeGreaterThan(0);
      remaining.push(response.headers.get("ratelimit-remaining")!);
    }
    expect(remaining).toEqual(["3", "2", "1", "0"]);

    for (const server of [two, one]) {
      const refused = await rest(server);
      expect(refused.status).toBe(429);
      expect(await refused.json()).toMatchObject({ code: "10110", data: null });
      expect(refused.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
      expect(refused.headers.get("ratelimit-remaining")).toBe("0");
      expect(refused.headers.get("ratelimit-limit")).toBe("4");
    }

    const transports: [string, Transport][] = [
      ["Connect JSON", createConnectTransport({ baseUrl: two.url, httpVersion: "1.1" })],
      ["Connect binary", createConnectTransport({ baseUrl: one.url, httpVersion: "1.1", useBinaryFormat: true })],
      ["Connect over HTTP/2", createConnectTransport({ baseUrl: two.url, httpVersion: "2" })],
      ["gRPC", createGrpcTransport({ baseUrl: one.url })],
      ["gRPC-Web", createGrpcWebTransport({ baseUrl: two.url, httpVersion: "1.1" })],
    ];
    for (const [name, transport] of transports) {
      const error = await createClient(RelationService, transport)
        .mutualContractInteraction({ address: [addr("alice"), addr("bob")] }, { headers: { apikey: key } })
        .then(() => expect.unreachable(`${name}: the budget is spent`), (err: unknown) => ConnectError.from(err));
      expect(error.code, name).toBe(Code.ResourceExhausted);
      expect(error.findDetails(ErrorDetailSchema)[0]?.code, name).toBe("10110");
    }
    const grpcJs = createRelationGrpcClient(`127.0.0.1:${one.port}`);
    try {
      const error = await grpcJs.call(RelationService.method.mutualContractInteraction, { $typeName: "relgraph.v1.MutualContractInteractionRequest", address: [addr("alice")] } as never, key).then(
        () => expect.unreachable("grpc-js: the budget is spent"),
        (err: unknown) => err as grpc.ServiceError,
      );
      expect(errorDetailsOf(error).details[0]?.code).toBe("10110");
    } finally {
      grpcJs.close();
    }

    // Other keys are not touched: the configured keys are unlimited here (RATE_LIMIT unset).
    for (const server of [one, two]) expect((await restGet(server.url, "/api/v1/mutualContractInteraction", mutualContracts)).status).toBe(200);
    const other = await createApiKey(two.store, "other", 1);
    expect((await fetch(`${one.url}/api/v1/mutualContractInteraction?${new URLSearchParams(mutualContracts)}`, { headers: { ApiKey: other.key } })).status).toBe(200);
    expect((await fetch(`${two.url}/api/v1/mutualContractInteraction?${new URLSearchParams(mutualContracts)}`, { headers: { ApiKey: other.key } })).status).toBe(429);
  });
});
