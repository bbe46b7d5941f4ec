import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createHttpPacerClient, type HttpPacerClient } from "../../../bench/load/http-pacer.js";

/*
 * The bench's paced HTTP client reads answers out of one reused buffer, so its framing is its own:
 * these tests feed it answers cut at every kind of boundary, over real sockets.
 */

interface RawServer {
  baseUrl: string;
  /** Every request head received, in order. */
  heads: string[];
  close(): Promise<void>;
}

/** Answers each request with `answer(n)` (n counts from 0), written in pieces of `piece` bytes. */
async function rawServer(answer: (n: number) => Buffer, piece: number): Promise<RawServer> {
  const heads: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    let pending = "";
    socket.on("data", async (chunk) => {
      pending += chunk.toString("latin1");
      for (let end = pending.indexOf("\r\n\r\n"); end >= 0; end = pending.indexOf("\r\n\r\n")) {
        const head = pending.slice(0, end);
        const bodyLength = Number(/\r\nContent-Length: (\d+)/.exec(head)?.[1] ?? 0);
        if (pending.length < end + 4 + bodyLength) return;
        heads.push(head);
        pending = pending.slice(end + 4 + bodyLength);
        const bytes = answer(heads.length - 1);
        for (let at = 0; at < bytes.length; at += piece) {
          socket.write(bytes.subarray(at, at + piece));
          // Separate writes, so that the client sees separate reads.
          if (piece < bytes.length) await new Promise((resolve) => setImmediate(resolve));
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    heads,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function withLength(status: string, body: string): Buffer {
  return Buffer.from(`HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

function chunked(status: string, parts: string[]): Buffer {
  const chunks = parts.map((part) => `${Buffer.byteLength(part).toString(16)}\r\n${part}\r\n`).join("");
  return Buffer.from(`HTTP/1.1 ${status}\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`);
}

let server: RawServer | undefined;
let client: HttpPacerClient | undefined;
afterEach(async () => {
  client?.close();
  await server?.close();
  client = server = undefined;
});

describe("the bench's paced HTTP client", () => {
  it.each([
    ["whole", 1 << 20],
    ["one byte at a time", 1],
    ["in pieces of 7 bytes", 7],
  ])("reads answers with a Content-Length sent %s, one after another on one connection", async (_, piece) => {
    server = await rawServer((n) => withLength("200 OK", `answer ${n} ${"x".repeat(n * 13)}`), piece);
    client = createHttpPacerClient(server.baseUrl, { ApiKey: "k" }, 1);
    for (let i = 0; i < 20; i++) await client.send({ method: "GET", path: `/q?i=${i}` });
    expect(server.heads).toHaveLength(20);
    expect(server.heads[19]).toMatch(/^GET \/q\?i=19 HTTP\/1\.1\r\n/);
    expect(server.heads[19]).toContain("\r\nApiKey: k");
  });

  it("reads answers longer than its answer buffer, then short ones again", async () => {
    const long = "y".repeat(100_000);
    server = await rawServer((n) => withLength("200 OK", n % 2 === 0 ? long : "short"), 4_096);
    client = createHttpPacerClient(server.baseUrl, {}, 1);
    for (let i = 0; i < 6; i++) await client.send({ method: "GET", path: "/" });
    expect(server.heads).toHaveLength(6);
  });

  it("reads chunked answers, whole or cut anywhere", async () => {
    for (const piece of [1 << 20, 1, 5]) {
      server = await rawServer(() => chunked("200 OK", ["ab", "c".repeat(300), "d"]), piece);
      client = createHttpPacerClient(server.baseUrl, {}, 1);
      await client.send({ method: "GET", path: "/" });
      await client.send({ method: "GET", path: "/" });
      expect(server.heads).toHaveLength(2);
      client.close();
      await server.close();
    }
  });

  it("rejects an answer other than 200 and goes on with the next request", async () => {
    server = await rawServer((n) => (n === 1 ? withLength("503 Service Unavailable", "down") : withLength("200 OK", "up")), 3);
    client = createHttpPacerClient(server.baseUrl, {}, 1);
    await client.send({ method: "GET", path: "/" });
    await expect(client.send({ method: "GET", path: "/" })).rejects.toThrow("HTTP 503");
    await client.send({ method: "GET", path: "/" });
  });

  it("sends a POST's body, and spreads concurrent requests over its connections", async () => {
    server = await rawServer(() => withLength("200 OK", "ok"), 1 << 20);
    client = createHttpPacerClient(server.baseUrl, {}, 4);
    await Promise.all(Array.from({ length: 12 }, (_, i) => client!.send({ method: "POST", path: `/p${i}`, body: Buffer.from("body!") })));
    expect(server.heads).toHaveLength(12);
    expect(server.heads.every((head) => head.includes("\r\nContent-Length: 5"))).toBe(true);
  });

  it("rejects the request in flight when the server closes the connection", async () => {
    const sockets: net.Socket[] = [];
    const closing = net.createServer((socket) => {
      sockets.push(socket);
      socket.once("data", () => socket.end("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf"));
    });
    await new Promise<void>((resolve) => closing.listen(0, "127.0.0.1", resolve));
    client = createHttpPacerClient(`http://127.0.0.1:${(closing.address() as net.AddressInfo).port}`, {}, 1);
    await expect(client.send({ method: "GET", path: "/" })).rejects.toThrow("connection closed");
    await new Promise((resolve) => closing.close(resolve));
  });
});
