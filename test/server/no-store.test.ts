import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addr, fixtureRecords } from "../support/fixtures.js";
import { SERVING_WAYS, TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { closeH2c, connectH2c } from "./http.js";

/*
 * No /api/v1/ answer may be kept by a shared cache in front of relgraph (a CDN, a corporate proxy):
 * it would answer the next asker of the same URL without their ApiKey, and keep showing a user after
 * their erasure, or a relation after its release was withdrawn. Every answer, success or refusal, on
 * HTTP/1.1 and h2c (served off the stream by rest/h2c-handler.ts), says `Cache-Control: no-store`.
 */

const MUTUAL_FRIEND = `/api/v1/mutualFriend?address=${addr("alice")},${addr("bob")}&limit=2`;

/** [what is asked, its path, its ApiKey, the HTTP status expected]. */
const CASES: [string, string, string | undefined, number][] = [
  ["a success", MUTUAL_FRIEND, TEST_API_KEY, 200],
  ["a refused query", "/api/v1/mutualFriend?address=nope&limit=2", TEST_API_KEY, 400],
  ["a missing ApiKey", MUTUAL_FRIEND, undefined, 401],
  ["an unknown user", `/api/v1/profile?address=0x${"1".repeat(40)}&sig=0x00&message=x`, TEST_API_KEY, 401],
  ["an unknown operation", "/api/v1/nothing", TEST_API_KEY, 404],
];

describe.each(SERVING_WAYS)("Cache-Control of /api/v1/ answers, $name", ({ env }) => {
  let server: RunningRelgraph;
  let h2: http2.ClientHttp2Session;
  beforeAll(async () => {
    server = await startRelgraph({ records: fixtureRecords(), env });
    h2 = await connectH2c(server.url);
  });
  afterAll(async () => {
    if (h2) await closeH2c(h2);
    await server?.close();
  });

  it.each(CASES)("is no-store on %s over HTTP/1.1", async (_what, path, apiKey, status) => {
    const response = await fetch(`${server.url}${path}`, { headers: apiKey ? { ApiKey: apiKey } : {} });
    expect(response.status).toBe(status);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(await response.json()).toMatchObject({ code: status === 200 ? "0" : expect.any(String) });
  });

  it.each(CASES)("is no-store on %s over h2c", async (_what, path, apiKey, status) => {
    const answer = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const stream = h2.request({ ":path": path, ...(apiKey ? { apikey: apiKey } : {}) }, { endStream: true });
      stream.on("response", resolve);
      stream.on("error", reject);
      stream.resume();
    });
    expect(answer[":status"]).toBe(status);
    expect(answer["cache-control"]).toBe("no-store");
  });

  it("answers a malformed percent-encoding, which Fastify's router refuses before any route or hook, in the envelope", async () => {
    const response = await fetch(`${server.url}/api/v1/%E0%A4%A`, { headers: { ApiKey: TEST_API_KEY, "X-Request-Id": "bad-url-1" } });
    expect(response.status).toBe(400);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("x-request-id")).toBe("bad-url-1");
    expect(await response.json()).toEqual({ code: "11600", desc: "the request's URL is malformed", data: null });
  });
});
