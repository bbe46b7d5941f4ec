import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";

/** Every error answer under /api/v1/ is in the envelope, whatever refused it. */

/** One raw HTTP/1.1 exchange: for requests fetch would not send, or that Node's parser refuses. */
function rawHttp(port: number, request: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const [head = "", body = ""] = text.split("\r\n\r\n");
      resolve({ status: Number(head.split(" ")[1]), body });
    });
    socket.write(request);
  });
}

describe("error envelopes under /api/v1/", () => {
  let server: RunningRelgraph;
  beforeAll(async () => {
    server = await startRelgraph();
  });
  afterAll(() => server?.close());

  it.each(["POST", "PUT", "DELETE", "PATCH"])("answers %s on an operation's path with 404 in the envelope", async (method) => {
    const response = await fetch(`${server.url}/api/v1/mutualFriend`, { method, headers: { ApiKey: TEST_API_KEY } });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ code: "11600", desc: `no such operation: ${method} /api/v1/mutualFriend`, data: null });
  });

  it("answers an unknown method without an ApiKey with 10001 in the envelope", async () => {
    const response = await fetch(`${server.url}/api/v1/nothing`, { method: "DELETE" });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: "10001", data: null });
  });

  it("answers headers or a URL too large with 431 in the envelope", async () => {
    const longQuery = await rawHttp(server.port, `GET /api/v1/mutualFriend?address=${"a".repeat(20_000)} HTTP/1.1\r\nHost: x\r\nApiKey: ${TEST_API_KEY}\r\n\r\n`);
    expect(longQuery.status).toBe(431);
    expect(JSON.parse(longQuery.body)).toMatchObject({ code: "11600", data: null });
    const bigHeader = await rawHttp(server.port, `GET /api/v1/mutualFriend HTTP/1.1\r\nHost: x\r\nX-Big: ${"b".repeat(20_000)}\r\n\r\n`);
    expect(bigHeader.status).toBe(431);
    expect(JSON.parse(bigHeader.body)).toMatchObject({ code: "11600", data: null });
  });

  it("answers malformed HTTP with 400 in the envelope", async () => {
    const reply = await rawHttp(server.port, "GET /api/v1/mutualFriend HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n");
    expect(reply.status).toBe(400);
    expect(JSON.parse(reply.body)).toMatchObject({ code: "11600", data: null });
  });
});
