import { ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@connectrpc/connect";
import { Wallet } from "ethers";
import { SiweMessage } from "siwe";
import { afterEach, describe, expect, it } from "vitest";
import { ErrorDetailSchema, RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { addr, fixtureRecords } from "../support/fixtures.js";
import { startRelgraph, TEST_API_KEY, type RunningRelgraph } from "../support/relgraph-server.js";

/** The contract codes that need a particular server setup: rate limits, expired authorizations, internal failures. */

let server: RunningRelgraph | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function get(path: string, params: Record<string, string>) {
  const response = await fetch(`${server!.url}/api/v1/${path}?${new URLSearchParams(params)}`, { headers: { ApiKey: TEST_API_KEY } });
  return { status: response.status, body: (await response.json()) as { code: string; desc: string; data: unknown } };
}

const mutualContracts = { address: `${addr("alice")},${addr("bob")}` };

describe("10110: rate limit per ApiKey", () => {
  it("refuses requests over the budget with 429 on REST and RESOURCE_EXHAUSTED on gRPC", async () => {
    server = await startRelgraph({ records: fixtureRecords(), env: { RATE_LIMIT: "2", RATE_LIMIT_WINDOW_SECONDS: "3600" } });
    expect((await get("mutualContractInteraction", mutualContracts)).status).toBe(200);
    expect((await get("mutualContractInteraction", mutualContracts)).status).toBe(200);
    const limited = await get("mutualContractInteraction", mutualContracts);
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ code: "10110", data: null });
    expect(limited.body.desc).toMatch(/rate limit/i);

    const client = createClient(RelationService, createGrpcTransport({ baseUrl: server.url }));
    const error = await client
      .mutualContractInteraction({ address: [addr("alice"), addr("bob")] }, { headers: { apikey: TEST_API_KEY } })
      .then(() => expect.unreachable("the bucket is empty"), (err: unknown) => ConnectError.from(err));
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(error.findDetails(ErrorDetailSchema)[0]?.code).toBe("10110");
  });
});

describe("10100: authorization out of its validity window", () => {
  it("an expired but correctly signed authorization is 401 with 10100", async () => {
    server = await startRelgraph({ records: fixtureRecords() });
    const wallet = Wallet.createRandom();
    const now = Date.now();
    const message = new SiweMessage({
      domain: "relgraph.test",
      address: wallet.address,
      statement: "Access to User Profile.",
      uri: "https://relgraph.test",
      version: "1",
      chainId: 1,
      nonce: "expired0001",
      issuedAt: new Date(now - 120_000).toISOString(),
      expirationTime: new Date(now - 60_000).toISOString(),
    }).prepareMessage();
    const sig = await wallet.signMessage(message);
    const { status, body } = await get("profile", { address: addr("alice"), sig, message });
    expect(status).toBe(401);
    expect(body.code).toBe("10100");
    expect(body.desc).toMatch(/expired/);
  });
});

describe("50000: unexpected failures", () => {
  it("answers 500 with a fixed desc and never the failure's own text", async () => {
    const store = createMemoryStore();
    // A store whose intersection has a bug: the kind of failure no domain error describes.
    const faulty: GraphStore = Object.assign(Object.create(store) as GraphStore, {
      userSetIntersection: async () => {
        throw new TypeError("secret internal detail at /srv/relgraph/store.js:42");
      },
    });
    server = await startRelgraph({ store: faulty, records: fixtureRecords() });
    const { status, body } = await get("mutualFriend", { address: `${addr("alice")},${addr("bob")}`, limit: "10" });
    expect(status).toBe(500);
    expect(body).toEqual({ code: "50000", desc: "internal error", data: null });

    const client = createClient(RelationService, createGrpcTransport({ baseUrl: server.url }));
    const error = await client
      .mutualFriend({ address: [addr("alice"), addr("bob")], limit: 10 }, { headers: { apikey: TEST_API_KEY } })
      .then(() => expect.unreachable("the store fails"), (err: unknown) => ConnectError.from(err));
    expect(error.code).toBe(Code.Internal);
    expect(error.rawMessage).toBe("internal error");
    expect(JSON.stringify(error.findDetails(ErrorDetailSchema))).not.toContain("secret");
  });
});
