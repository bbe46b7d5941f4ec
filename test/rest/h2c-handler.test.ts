import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { MessageShape } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MutualFriendRequestSchema } from "../../gen/relgraph/v1/relation_service_pb.js";
import type { Caller } from "../../src/domain/caller.js";
import { MissingApiKeyError, RateLimitedError } from "../../src/domain/errors.js";
import { createRestH2cHandler } from "../../src/rest/h2c-handler.js";
import type { RelationServiceCalls } from "../../src/rest/facade.js";
import { createOnePortServer } from "../../src/transport/one-port.js";

/*
 * The REST fast path over h2c serves what it claims and leaves the rest to the server's handler:
 * test/server/differential.test.ts holds its answers to Fastify's, which it could do just as well if
 * the fast path claimed nothing. Here the handler behind it answers 599, so who answered shows.
 */

const STATE = { limit: 10, remaining: 9, resetSeconds: 5 };
const PATH = "/api/v1/mutualFriend?address=0xa,0xb&limit=3";

describe("REST over h2c off the stream (rest/h2c-handler.ts)", () => {
  let server: ReturnType<typeof createOnePortServer>;
  let url: string;
  const requests: MessageShape<typeof MutualFriendRequestSchema>[] = [];
  const callers: Caller[] = [];
  const observed: string[][] = [];

  beforeAll(async () => {
    const service = {
      mutualFriend: async (request: MessageShape<typeof MutualFriendRequestSchema>, caller: Caller) => {
        requests.push(request);
        callers.push(caller);
        return { data: [], cursor: "" };
      },
    } as unknown as RelationServiceCalls;
    const gate = {
      admit: async (apiKey: string | undefined) => {
        if (!apiKey) throw new MissingApiKeyError("missing ApiKey");
        if (apiKey === "spent") throw new RateLimitedError("rate limited", 7, { ...STATE, remaining: 0 });
        return { caller: { keyId: `id-of-${apiKey}` }, rateLimit: STATE };
      },
    };
    const log = { error: () => {}, warn: () => {}, info: () => {} };
    const claim = createRestH2cHandler({ service, gate, log, observe: (...args) => observed.push([args[0], args[1], args[2]]) });
    server = createOnePortServer(
      (_req, res) => {
        res.statusCode = 599;
        res.end();
      },
      { claimStream: claim },
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  async function get(headers: http2.OutgoingHttpHeaders, body?: string) {
    const session = http2.connect(url);
    try {
      return await new Promise<{ headers: http2.IncomingHttpHeaders; body: string }>((resolve, reject) => {
        const stream = session.request({ ":method": "GET", ":path": PATH, ...headers }, { endStream: body === undefined });
        let answer: http2.IncomingHttpHeaders = {};
        let text = "";
        stream.on("response", (h) => (answer = h));
        stream.setEncoding("utf8");
        stream.on("data", (chunk: string) => (text += chunk));
        stream.on("end", () => resolve({ headers: answer, body: text }));
        stream.on("error", reject);
        stream.end(body);
      });
    } finally {
      session.close();
    }
  }

  it("answers a GET of a route: the query decoded by the route's codec, the envelope, its headers, the metric", async () => {
    const answer = await get({ apikey: "k", "x-request-id": "fast-1" });
    expect(answer.headers[":status"]).toBe(200);
    expect(answer.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(answer.headers["x-request-id"]).toBe("fast-1");
    expect(answer.headers["content-length"]).toBe(String(Buffer.byteLength(answer.body)));
    expect([answer.headers["ratelimit-limit"], answer.headers["ratelimit-remaining"], answer.headers["ratelimit-reset"]]).toEqual(["10", "9", "5"]);
    expect(JSON.parse(answer.body)).toEqual({ code: "0", desc: "success", data: [], cursor: "" });
    expect(requests.at(-1)).toMatchObject({ address: ["0xa", "0xb"], limit: 3 });
    // The service is called for the Caller the gate admitted.
    expect(callers.at(-1)).toEqual({ keyId: "id-of-k" });
    expect(observed.at(-1)).toEqual(["/api/v1/mutualFriend", "rest", "200"]);
  });

  it("answers refusals in the contract's envelope, a spent key's with Retry-After", async () => {
    const missing = await get({});
    expect(missing.headers[":status"]).toBe(401);
    expect(JSON.parse(missing.body)).toMatchObject({ code: "10001", data: null });
    const spent = await get({ apikey: "spent" });
    expect(spent.headers[":status"]).toBe(429);
    expect([spent.headers["retry-after"], spent.headers["ratelimit-remaining"]]).toEqual(["7", "0"]);
    expect(observed.at(-1)).toEqual(["/api/v1/mutualFriend", "rest", "429"]);
  });

  it.each([
    ["HEAD", { ":method": "HEAD" }],
    ["POST", { ":method": "POST" }],
    ["a trailing slash", { ":path": "/api/v1/mutualFriend/?limit=3" }],
    ["a percent-escaped path", { ":path": "/api/v1/mutual%46riend?limit=3" }],
    ["an unknown path", { ":path": "/api/v1/nope" }],
    ["an Origin", { origin: "https://dapp.example" }],
    ["a content-type", { "content-type": "application/json" }],
    ["a content-length", { "content-length": "0" }],
  ])("leaves %s to the server's handler", async (_name, headers) => {
    const answer = await get({ apikey: "k", ...headers });
    expect(answer.headers[":status"]).toBe(599);
  });

  it("leaves a GET with a body to the server's handler", async () => {
    const answer = await get({ apikey: "k" }, "x");
    expect(answer.headers[":status"]).toBe(599);
  });
});
