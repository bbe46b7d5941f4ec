import http from "node:http";
import { createClient, type Transport } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport, createGrpcWebTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { WALLETS, fixtureRecords } from "../support/fixtures.js";
import { signAuthorization } from "../support/keynodes.js";
import { SERVING_WAYS, TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";

/*
 * A deadline of 2^31 ms or more does not fit Node's timers, which fire such a
 * timeout after 1 ms. Huge deadlines are clamped instead, on the fast paths and on connect-es's.
 * Profile is asked because it takes well over 1 ms (a signature check and an encryption).
 */

describe.each(SERVING_WAYS)("huge client deadlines ($name)", ({ env }) => {
  let server: RunningRelgraph;
  const managers: Http2SessionManager[] = [];
  /** Node's word that a timer did not fit and was set to 1 ms: none may be armed, on any path. */
  const overflows: string[] = [];
  const onWarning = (warning: Error) => {
    if (warning.name === "TimeoutOverflowWarning") overflows.push(`${warning.message}\n${warning.stack ?? ""}`);
  };
  beforeAll(async () => {
    process.on("warning", onWarning);
    server = await startRelgraph({ records: fixtureRecords(), env });
  });
  afterAll(async () => {
    process.off("warning", onWarning);
    for (const manager of managers) manager.abort();
    await server?.close();
  });

  const h2 = () => {
    const manager = new Http2SessionManager(server.url);
    managers.push(manager);
    return manager;
  };

  // A different user each time: an encrypted answer may be cached, and a cached one comes back too fast to tell.
  const cases: [string, keyof typeof WALLETS, () => Transport, Record<string, string>][] = [
    ["gRPC", "alice", () => createGrpcTransport({ baseUrl: server.url, sessionManager: h2() }), { "grpc-timeout": "99999999S" }],
    ["gRPC-Web", "bob", () => createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" }), { "grpc-timeout": "99999999H" }],
    [
      "gzip gRPC",
      "dave",
      () => createGrpcTransport({ baseUrl: server.url, sessionManager: h2(), sendCompression: compressionGzip, compressMinBytes: 0 }),
      { "grpc-timeout": "3000000M" },
    ],
    [
      "gzip Connect",
      "erin",
      () => createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", sendCompression: compressionGzip, compressMinBytes: 0 }),
      { "connect-timeout-ms": "9999999999" },
    ],
  ];

  it.each(cases)("are clamped, not wrapped to 1 ms, over %s", async (_name, user, transport, deadline) => {
    const { sig, message } = await signAuthorization(WALLETS[user]);
    const client = createClient(RelationService, transport());
    const reply = await client.profile({ address: WALLETS[user].address, sig, message }, { headers: { apikey: TEST_API_KEY, ...deadline } });
    expect(reply.data?.encryptedString).toBeTruthy();
  });

  it("are clamped, not wrapped to 1 ms, over Connect", async () => {
    const { sig, message } = await signAuthorization(WALLETS.carol);
    const text = await new Promise<string>((resolve, reject) => {
      const request = http.request(`${server.url}/${RelationService.typeName}/Profile`, {
        method: "POST",
        headers: { "content-type": "application/json", apikey: TEST_API_KEY, "connect-timeout-ms": "9999999999" },
      });
      request.on("response", (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (body += chunk));
        response.on("end", () => resolve(body));
      });
      request.on("error", reject);
      // The body follows the headers a little later, as over a real network: the call then spans timers.
      request.flushHeaders();
      setTimeout(() => request.end(JSON.stringify({ address: WALLETS.carol.address, sig, message })), 20);
    });
    expect(JSON.parse(text).data?.encryptedString, text).toBeTruthy();
  });

  it("arm no timer that Node cuts to 1 ms, on any of these paths", async () => {
    // Warnings are emitted on the next tick of the process that armed the timer.
    await new Promise((resolve) => setImmediate(resolve));
    expect(overflows).toEqual([]);
  });
});
