import { ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { createClient as createRedisClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorDetailSchema, RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import type { IngestRecord } from "../../src/ingest/format.js";
import { createStore } from "../../src/store/index.js";
import { generateRecords } from "../../src/synthetic/generate.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";
import { SERVING_WAYS, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { closeH2c, connectH2c, h2cGet, restGet } from "./http.js";

/*
 * The snapshot pool shared fairly (issue 36): one ApiKey opening recommendation cursor chains as
 * fast as it can fills its own share and is refused 10110 past it, on every protocol, while another
 * key's new chains are served and the first key's open chains go on. Over real HTTP, on the memory
 * engine and on a real redis-server, with the fast paths on and off: every way a request is
 * admitted hands its key down to the recommendation.
 */

const records = [...generateRecords({ users: 200, seed: "relgraph-snapshot-shares", meanDegree: 12 })];
/** Users in generation order: with a page of 1, each one's answer runs over pages, so each first page opens a chain. */
const addresses = records.filter((r): r is Extract<IngestRecord, { type: "user" }> => r.type === "user").map((r) => r.addresses[0]!);

const RECOMMENDATION = "/api/v1/multi-dimensional-recommendation";

/** One first page of a recommendation for `address` (limit 1): the contract's code, and the cursor or the desc. */
type Ask = (server: RunningRelgraph, apiKey: string, address: string) => Promise<{ code: string; cursor: string; desc: string }>;

const restOverHttp1: Ask = async (server, apiKey, address) => {
  const { body } = await restGet(server.url, RECOMMENDATION, { address, limit: 1 }, { apiKey });
  return { code: body.code, cursor: body.cursor ?? "", desc: body.desc };
};

const restOverH2c: Ask = async (server, apiKey, address) => {
  const session = await connectH2c(server.url);
  try {
    const { body } = await h2cGet(session, RECOMMENDATION, { address, limit: 1 }, { apiKey });
    return { code: body.code, cursor: body.cursor ?? "", desc: body.desc };
  } finally {
    await closeH2c(session);
  }
};

const rpc =
  (transportOf: (baseUrl: string) => Transport): Ask =>
  async (server, apiKey, address) => {
    try {
      const response = await createClient(RelationService, transportOf(server.url)).multiDimensionalRecommendation({ address, limit: 1 }, { headers: { apikey: apiKey } });
      return { code: "0", cursor: response.cursor, desc: "" };
    } catch (err) {
      const error = ConnectError.from(err);
      return { code: error.findDetails(ErrorDetailSchema)[0]?.code ?? `no detail (${error.code})`, cursor: "", desc: error.rawMessage };
    }
  };

const PROTOCOLS: [string, Ask][] = [
  ["REST over HTTP/1.1", restOverHttp1],
  ["REST over h2c", restOverH2c],
  ["Connect JSON", rpc((baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" }))],
  ["Connect binary over HTTP/2", rpc((baseUrl) => createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true }))],
  ["gRPC", rpc((baseUrl) => createGrpcTransport({ baseUrl }))],
  ["gRPC-Web", rpc((baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }))],
];

const [KEY_A, KEY_B] = ["flooding-key", "other-key"];
/** Each key's share: room for key B's chains below (one per protocol, and one more). The pool holds many shares, so that only a share refuses here. */
const SHARE = PROTOCOLS.length + 2;
const env = { API_KEYS: `${KEY_A},${KEY_B}`, RECOMMEND_SNAPSHOTS_PER_KEY: String(SHARE), RECOMMEND_SNAPSHOT_LIMIT: String(SHARE * 10) };

let redis: TestRedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.stop();
});

/** The store each server runs on: the default (memory, behind the caches), or the redis-server emptied first, so that no share is left over from another server's test. */
const engines = [
  { name: "memory", store: async () => undefined },
  {
    name: "redis",
    store: async () => {
      await flush(redis.url);
      return createStore({ redisUrl: redis.url, redisClusterNodes: [] });
    },
  },
];

describe.each(engines.flatMap((engine) => SERVING_WAYS.map((way) => ({ engine, way, title: `${engine.name}, ${way.name}` }))))("the snapshot pool ($title)", ({ engine, way }) => {
  let server: RunningRelgraph;
  beforeAll(async () => {
    server = await startRelgraph({ store: await engine.store(), records, env: { ...env, ...way.env } });
  });
  afterAll(() => server?.close());

  it("refuses a key flooding new chains 10110 past its share on every protocol, while another key's new chains and its own open ones are served", async () => {
    const users = [...addresses];
    const take = () => users.shift()!;

    // Key A opens chains, each for another user, until its share is full.
    const opened: { address: string; cursor: string }[] = [];
    for (let i = 0; i < SHARE; i++) {
      const address = take();
      const answer = await restOverHttp1(server, KEY_A, address);
      expect(answer.code, answer.desc).toBe("0");
      expect(answer.cursor, "each first page opens a chain").not.toBe("");
      opened.push({ address, cursor: answer.cursor });
    }

    // One more is refused over REST, with the contract's code, status and Retry-After.
    const refusedUser = take();
    const refused = await fetch(`${server.url}${RECOMMENDATION}?${new URLSearchParams({ address: refusedUser, limit: "1" })}`, { headers: { ApiKey: KEY_A } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    const body = await refused.json();
    expect(body).toMatchObject({ code: "10110", data: null });
    expect(body.desc).toMatch(/too many recommendation cursor chains are open for this ApiKey; retry in \d+ s/);

    // And over every other protocol: each way of admitting a request hands the key down.
    for (const [protocol, ask] of PROTOCOLS) {
      const answer = await ask(server, KEY_A, refusedUser);
      expect(answer.code, protocol).toBe("10110");
      expect(answer.desc, protocol).toMatch(/for this ApiKey/);
    }

    // Key B opens new chains meanwhile, over every protocol, within its own share.
    for (const [protocol, ask] of PROTOCOLS) {
      const answer = await ask(server, KEY_B, take());
      expect(answer.code, `${protocol}: ${answer.desc}`).toBe("0");
      expect(answer.cursor, protocol).not.toBe("");
    }
    // The user refused to key A included.
    const shared = await restOverHttp1(server, KEY_B, refusedUser);
    expect(shared.code, shared.desc).toBe("0");

    // Key A's open chains are not touched: each goes on to its next page.
    for (const { address, cursor } of opened) {
      const { status, body: next } = await restGet(server.url, RECOMMENDATION, { address, limit: 1, cursor }, { apiKey: KEY_A });
      expect(status, JSON.stringify(next)).toBe(200);
      expect(next.data).toHaveLength(1);
    }
  });
});

/** Empties the test's redis-server, so that each server's test starts with no snapshot held. */
async function flush(url: string): Promise<void> {
  const client = createRedisClient({ url });
  await client.connect();
  try {
    await client.flushAll();
  } finally {
    await client.close();
  }
}
