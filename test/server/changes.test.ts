import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { MultiDimensionalRecommendationRequestSchema, MutualFriendRequestSchema, RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { addr } from "../ingest/helpers.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";
import { TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { createRelationGrpcClient, errorDetailsOf, type RelationGrpcClient } from "./grpc-client.js";
import { restGet } from "./http.js";

/*
 * The living graph as clients see it, over every protocol: usernames in display case, and erased
 * users gone from every answer, including the next pages of chains begun before the erasure.
 */

const MUTUAL = 12;
const user = (relationId: string, extra: object = {}) => ({ type: "user", relationId, name: relationId, avatar: "", addresses: [addr(relationId.replace(/\D/g, "") || "9")], ...extra });

/** Hubs h1 and h2 share MUTUAL friends m10..m21; s1 has a display-case username; r1 follows what h1 follows. */
function records(): object[] {
  const mutual = Array.from({ length: MUTUAL }, (_, i) => `m${10 + i}`);
  return [
    user("h1", { addresses: [addr("a1")] }),
    user("h2", { addresses: [addr("a2")] }),
    user("s1", { addresses: [addr("a3")], social: { username: "Soc150User", name: "S", avatar: "" } }),
    ...mutual.map((m) => user(m)),
    ...mutual.flatMap((m) => [
      { type: "friend", a: "h1", b: m },
      { type: "friend", a: "h2", b: m },
    ]),
    { type: "friend", a: "s1", b: "h1" },
    { type: "friend", a: "s1", b: "h2" },
  ];
}

/** The social usernames an answer's JSON holds, wherever they are. */
function usernames(json: unknown): string[] {
  const found: string[] = [];
  JSON.stringify(json, (key, value: unknown) => {
    if (key === "username" && typeof value === "string") found.push(value);
    return value;
  });
  return found;
}

function defineChangeTests(engine: string, open: () => Promise<GraphStore>) {
  describe(`changes seen over every protocol: ${engine}`, () => {
    let server: RunningRelgraph;
    let store: GraphStore;
    let writer: GraphStore;
    let grpcJs: RelationGrpcClient;
    beforeEach(async () => {
      store = await open();
      server = await startRelgraph({ store, records: records() });
      // Changes come from another store object, as from another process.
      writer = engine === "memory" ? store : await open();
      grpcJs = createRelationGrpcClient(`127.0.0.1:${server.port}`);
    });
    afterEach(async () => {
      grpcJs.close();
      if (writer !== store) await writer.close();
      await server.close();
    });

    it("returns a username as ingested and finds it in any letter case, on every protocol", async () => {
      // s1 (Soc150User) and m10 are both friends of h1 and h2; s1 is recommended to m10.
      const rest = await restGet(server.url, "/api/v1/mutualFriend", { socialUsername: "SOC150USER,soc150user", address: addr("10"), limit: 5 });
      expect(rest.body.data).toHaveLength(2);
      const recommended = await restGet(server.url, "/api/v1/multi-dimensional-recommendation", { address: addr("10"), limit: 100 });
      expect(usernames(recommended.body)).toEqual(["Soc150User"]);
      const headers = { apikey: TEST_API_KEY };
      const connect = createClient(RelationService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
      const grpcWeb = createClient(RelationService, createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" }));
      const request = { address: [addr("10")], socialUsername: ["sOC150uSER"], gameId: [], limit: 100, cursor: "" };
      for (const answer of [
        await connect.mutualFriend(request, { headers }),
        await grpcWeb.mutualFriend(request, { headers }),
        await grpcJs.call(RelationService.method.mutualFriend, create(MutualFriendRequestSchema, request)),
      ]) {
        expect(answer.data.map((entry) => entry.relationId?.relationId)).toEqual(["h1", "h2"]);
      }
      const byConnect = await connect.multiDimensionalRecommendation({ address: addr("10"), limit: 100 }, { headers });
      const byGrpcWeb = await grpcWeb.multiDimensionalRecommendation({ address: addr("10"), limit: 100 }, { headers });
      const byGrpc = await grpcJs.call(RelationService.method.multiDimensionalRecommendation, create(MultiDimensionalRecommendationRequestSchema, { address: addr("10"), limit: 100 }));
      for (const answer of [byConnect, byGrpcWeb, byGrpc]) expect(answer.data.flatMap((entry) => entry.social?.username ?? [])).toEqual(["Soc150User"]);
    });

    it("drops an erased user from every answer, the next pages of earlier chains included, and answers 11602 for them", async () => {
      const first = await restGet(server.url, "/api/v1/mutualFriend", { address: `${addr("a1")},${addr("a2")}`, limit: 5 });
      expect(first.body.data.map((u: { relationId: { relationId: string } }) => u.relationId.relationId)).toEqual(["m10", "m11", "m12", "m13", "m14"]);
      // m10's recommendations: the other eleven of m10..m21 and s1, by their mutual friends h1 and h2.
      const recommendation = await restGet(server.url, "/api/v1/multi-dimensional-recommendation", { address: addr("10"), limit: 1 });
      expect(recommendation.body.cursor).not.toBe("");

      await ingestRecords(writer, [{ op: "delete", type: "user", relationId: "m15" }]);
      // Let every instance's caches hear of it (Redis invalidations arrive within milliseconds).
      await eventually(async () => (await restGet(server.url, "/api/v1/mutualFriend", { address: `${addr("15")},${addr("a1")}`, limit: 5 })).body.code === "11602");

      const second = await restGet(server.url, "/api/v1/mutualFriend", { address: `${addr("a1")},${addr("a2")}`, limit: 5, cursor: first.body.cursor });
      expect(second.body.data.map((u: { relationId: { relationId: string } }) => u.relationId.relationId)).toEqual(["m16", "m17", "m18", "m19", "m20"]);
      let cursor = recommendation.body.cursor as string;
      const recommended: string[] = [recommendation.body.data[0].relationId.relationId];
      while (cursor !== "") {
        const page = await restGet(server.url, "/api/v1/multi-dimensional-recommendation", { address: addr("10"), limit: 1, cursor });
        expect(page.status).toBe(200);
        recommended.push(...page.body.data.map((u: { relationId: { relationId: string } }) => u.relationId.relationId));
        cursor = page.body.cursor;
      }
      expect(recommended).not.toContain("m15");
      expect(recommended).toHaveLength(MUTUAL - 1);
      expect(JSON.stringify(second.body)).not.toContain("m15");

      const rest = await restGet(server.url, "/api/v1/mutualContractInteraction", { address: `${addr("15")},${addr("a1")}` });
      expect([rest.status, rest.body.code]).toEqual([404, "11602"]);
      const error: grpc.ServiceError = await grpcJs
        .call(RelationService.method.mutualFriend, create(MutualFriendRequestSchema, { address: [addr("15"), addr("a1")], limit: 5 }))
        .then(
          () => {
            throw new Error("answered");
          },
          (e: grpc.ServiceError) => e,
        );
      expect(error.code).toBe(grpc.status.NOT_FOUND);
      expect(errorDetailsOf(error).details.map((d) => d.code)).toEqual(["11602"]);
    });
  });
}

async function eventually(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("the change was not seen within 5 s");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

defineChangeTests("memory", async () => createMemoryStore());

let redis: TestRedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.stop();
});
let db = 0;
defineChangeTests("redis", async () => {
  // One database per test, empty; every store of a test opens the same one.
  const url = `${redis.url}/${Math.floor(db++ / 2) % 16}`;
  return createRedisStore({ url });
});
