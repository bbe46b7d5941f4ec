import http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MutualFriendRequestSchema, RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { addr, fixtureRecords } from "../support/fixtures.js";
import { startServeProcess } from "../support/relgraph-process.js";
import { TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";

/** X-Request-Id is accepted or generated, echoed on every answer, and logged. */

const PATH = `/${RelationService.typeName}/${RelationService.method.mutualFriend.name}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const question = create(MutualFriendRequestSchema, { address: [addr("alice"), addr("bob")], limit: 2 });

function envelope(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

/** The response headers of one gRPC call over h2c. */
async function grpcHeaders(url: string, headers: http2.OutgoingHttpHeaders): Promise<http2.IncomingHttpHeaders> {
  const session = http2.connect(url);
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request({ ":method": "POST", ":path": PATH, "content-type": "application/grpc+proto", te: "trailers", ...headers });
      stream.on("response", resolve);
      stream.on("error", reject);
      stream.resume();
      stream.end(envelope(toBinary(MutualFriendRequestSchema, question)));
    });
  } finally {
    session.close();
  }
}

describe("X-Request-Id", () => {
  let server: RunningRelgraph;
  beforeAll(async () => {
    server = await startRelgraph({ records: fixtureRecords() });
  });
  afterAll(() => server?.close());

  it("echoes the client's id, or a generated one, on REST answers and errors", async () => {
    const given = await fetch(`${server.url}/api/v1/mutualFriend?address=${addr("alice")},${addr("bob")}&limit=2`, {
      headers: { ApiKey: TEST_API_KEY, "X-Request-Id": "trace-42" },
    });
    expect(given.headers.get("x-request-id")).toBe("trace-42");
    const generated = await fetch(`${server.url}/api/v1/mutualFriend`);
    expect(generated.status).toBe(401);
    expect(generated.headers.get("x-request-id")).toMatch(UUID);
    const unfit = await fetch(`${server.url}/healthz`, { headers: { "X-Request-Id": "x".repeat(200) } });
    expect(unfit.headers.get("x-request-id")).toMatch(UUID);
  });

  it("echoes it on the gRPC and Connect fast paths and on connect-es's", async () => {
    expect((await grpcHeaders(server.url, { apikey: TEST_API_KEY, "x-request-id": "grpc-1" }))["x-request-id"]).toBe("grpc-1");
    expect((await grpcHeaders(server.url, { "x-request-id": "grpc-refused" }))["x-request-id"]).toBe("grpc-refused");
    const connect = await fetch(server.url + PATH, {
      method: "POST",
      headers: { "content-type": "application/json", apikey: TEST_API_KEY, "x-request-id": "connect-1" },
      body: JSON.stringify({ address: [addr("alice"), addr("bob")], limit: 2 }),
    });
    expect(connect.headers.get("x-request-id")).toBe("connect-1");
    const web = await fetch(server.url + PATH, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", apikey: TEST_API_KEY, "x-request-id": "web-1" },
      body: new Uint8Array(envelope(toBinary(MutualFriendRequestSchema, question))),
    });
    expect(web.headers.get("x-request-id")).toBe("web-1");
  });

  it("puts it in the log lines of the request, on REST and on the fast paths", async () => {
    const served = await startServeProcess({ LOG_LEVEL: "info" });
    try {
      await fetch(`${served.url}/api/v1/mutualFriend?socialUsername=alice,bob&limit=2`, { headers: { ApiKey: "relgraph-dev-key", "X-Request-Id": "trace-rest" } });
      await fetch(served.url + PATH, {
        method: "POST",
        headers: { "content-type": "application/json", apikey: "relgraph-dev-key", "x-request-id": "trace-connect" },
        body: JSON.stringify({ socialUsername: ["alice", "bob"], limit: 2 }),
      });
    } finally {
      await served.stop();
    }
    const logged = served.output.join("\n");
    expect(logged).toContain('"reqId":"trace-rest"');
    expect(logged).toContain('"reqId":"trace-connect"');
  });
});
