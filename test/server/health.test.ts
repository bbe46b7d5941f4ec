import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../../gen/grpc/health/v1/health_pb.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";

/** grpc.health.v1.Health on the one port, over real gRPC (h2c), with no ApiKey, as Kubernetes probes call it. */
describe("grpc.health.v1.Health", () => {
  const servers: RunningRelgraph[] = [];
  const managers: Http2SessionManager[] = [];
  afterAll(async () => {
    for (const manager of managers) manager.abort();
    for (const server of servers) await server.close();
  });
  const healthOf = async (store?: GraphStore) => {
    const server = await startRelgraph(store ? { store } : {});
    servers.push(server);
    const sessionManager = new Http2SessionManager(server.url);
    managers.push(sessionManager);
    return createClient(Health, createGrpcTransport({ baseUrl: server.url, sessionManager }));
  };

  it("answers SERVING for the server and for relgraph.v1.RelationService, and NOT_FOUND for another service", async () => {
    const health = await healthOf();
    expect((await health.check({})).status).toBe(Status.SERVING);
    expect((await health.check({ service: "relgraph.v1.RelationService" })).status).toBe(Status.SERVING);
    const unknown = await health.check({ service: "nope.Service" }).catch((e: unknown) => ConnectError.from(e));
    expect((unknown as ConnectError).code).toBe(Code.NotFound);
    const listed = await health.list({});
    expect(Object.keys(listed.statuses).sort()).toEqual(["", "relgraph.v1.RelationService"]);
    for await (const first of health.watch({})) {
      expect(first.status).toBe(Status.SERVING);
      break;
    }
  });

  it("answers NOT_SERVING while the store does not answer", async () => {
    const memory = createMemoryStore();
    const down: GraphStore = Object.assign(Object.create(memory) as GraphStore, {
      ping: async () => {
        throw new Error("store down");
      },
    });
    const health = await healthOf(down);
    expect((await health.check({})).status).toBe(Status.NOT_SERVING);
  });
});
