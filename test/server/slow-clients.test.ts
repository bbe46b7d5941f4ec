import net from "node:net";
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { closeH2c, connectH2c } from "./http.js";

/*
 * A slowloris client (connections that send their request a byte at a time, or
 * nothing at all) cannot hold the server. The timeouts are set short here; the test waits for the
 * server to close each connection, and fails by the test timeout if it never does.
 */

const PATH = `/${RelationService.typeName}/${RelationService.method.mutualFriend.name}`;

/** Resolves when the server has closed the socket. */
function closed(socket: net.Socket): Promise<void> {
  socket.on("error", () => {});
  socket.resume();
  return new Promise((resolve) => socket.once("close", () => resolve()));
}

async function connect(port: number): Promise<net.Socket> {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise((resolve) => socket.once("connect", resolve));
  return socket;
}

describe("slow clients", { timeout: 20_000 }, () => {
  let server: RunningRelgraph;
  const sockets: net.Socket[] = [];
  const timers: NodeJS.Timeout[] = [];
  beforeAll(async () => {
    server = await startRelgraph({
      env: { HTTP_HEADERS_TIMEOUT_MS: "500", HTTP_REQUEST_TIMEOUT_MS: "1000", HTTP_IDLE_TIMEOUT_MS: "1000" },
    });
  });
  afterAll(async () => {
    for (const timer of timers) clearInterval(timer);
    for (const socket of sockets) socket.destroy();
    await server?.close();
  });

  it("closes connections that send nothing, part of the h2c preface, or headers a byte at a time, and keeps serving", async () => {
    const silent: net.Socket[] = [];
    const preface: net.Socket[] = [];
    const trickling: net.Socket[] = [];
    for (let i = 0; i < 10; i++) {
      silent.push(await connect(server.port));
      const p = await connect(server.port);
      p.write("PRI * HTTP/2.0\r\n");
      preface.push(p);
      const t = await connect(server.port);
      t.write(`GET /api/v1/mutualFriend HTTP/1.1\r\nHost: relgraph\r\n`);
      timers.push(setInterval(() => t.writable && t.write("X"), 100));
      trickling.push(t);
    }
    sockets.push(...silent, ...preface, ...trickling);
    const allClosed = Promise.all([...silent, ...preface, ...trickling].map(closed));

    // Meanwhile a well-behaved client is served.
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    await allClosed;
  });

  it("ends an HTTP/1.1 upload that stalls", async () => {
    const socket = await connect(server.port);
    sockets.push(socket);
    const gone = closed(socket);
    socket.write(`POST ${PATH} HTTP/1.1\r\nHost: relgraph\r\nContent-Type: application/json\r\nApiKey: ${TEST_API_KEY}\r\nContent-Length: 100\r\n\r\n{"a`);
    await gone;
  });

  it("cancels an HTTP/2 stream that stalls, closes an idle session, and caps concurrent streams", async () => {
    const session = await connectH2c(server.url);
    session.on("error", () => {});
    try {
      expect(session.remoteSettings.maxConcurrentStreams).toBe(100);
      const stream = session.request({ ":method": "POST", ":path": PATH, "content-type": "application/grpc+proto", apikey: TEST_API_KEY });
      stream.on("error", () => {});
      stream.write(Buffer.from([0, 0, 0, 0, 10]));
      const rstCode = await new Promise<number>((resolve) => stream.once("close", () => resolve(stream.rstCode)));
      expect(rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
      // With nothing left open, the idle session is told to go away.
      await new Promise<void>((resolve) => session.once("goaway", () => resolve()));
    } finally {
      await closeH2c(session);
    }
  });
});
