import http2 from "node:http2";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { startServeProcess } from "../support/relgraph-process.js";
import { SERVING_WAYS } from "../support/relgraph-server.js";

const PATH = `/${RelationService.typeName}/${RelationService.method.mutualFriend.name}`;
const ABORTS = 10;
const RESETS = 100;

/** Starts a request that promises a 1000-byte body, sends ten bytes of it, and hangs up. */
async function abortMidBody(port: number, contentType: string): Promise<void> {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise((resolve) => socket.once("connect", resolve));
  socket.on("error", () => {});
  const head = `POST ${PATH} HTTP/1.1\r\nhost: relgraph\r\napikey: relgraph-dev-key\r\ncontent-type: ${contentType}\r\ncontent-length: 1000\r\n\r\n`;
  await new Promise((resolve) => socket.write(`${head}0123456789`, resolve));
  socket.destroy();
}

/** Starts a gRPC call over HTTP/2 whose envelope promises 1000 bytes, sends a few, and resets the stream a moment later. */
async function resetMidBody(session: http2.ClientHttp2Session): Promise<void> {
  const stream = session.request({ ":method": "POST", ":path": PATH, "content-type": "application/grpc", te: "trailers", apikey: "relgraph-dev-key" });
  stream.on("error", () => {});
  stream.write(Buffer.from([0, 0, 0, 0x03, 0xe8, 1, 2, 3]));
  await new Promise((resolve) => setTimeout(resolve, 2));
  await new Promise<void>((resolve) => stream.close(http2.constants.NGHTTP2_CANCEL, resolve));
}

/**
 * A client that hangs up in the middle of its upload is the client's doing: the server neither
 * fails nor logs an error of its own (any client could fill the log with stacks, and set off alerts
 * on internal errors, by hanging up). On the fast path the call ends CANCELLED, and is counted so.
 */
describe.each(SERVING_WAYS)("clients that hang up mid-upload ($name)", ({ env }) => {
  it("leave no error in the log, and the server serves on", { timeout: 30_000 }, async () => {
    const served = await startServeProcess({ ...env, LOG_LEVEL: "info" });
    const { url, output: lines } = served;
    try {
      const port = Number(new URL(url).port);
      const session = http2.connect(url);
      for (let i = 0; i < ABORTS; i++) {
        await abortMidBody(port, "application/proto");
        await abortMidBody(port, "application/grpc-web+proto");
      }
      for (let i = 0; i < RESETS; i++) await resetMidBody(session);
      session.close();
      // Every aborted call has arrived: Fastify logs it as it comes in, the fast path once it is over
      // (Fastify logs no completion of a request whose client is gone). Then the server still answers.
      const arrived = () => lines.filter((line) => line.includes(`"url":"${PATH}"`) || line.includes(`"rpc":"${PATH}"`)).length;
      while (arrived() < 2 * ABORTS + RESETS) await new Promise((resolve) => setTimeout(resolve, 50));
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toContain(`relgraph_requests_total{operation="${PATH}",protocol="connect",code="1"} ${ABORTS}`);
      expect(metrics).not.toMatch(/relgraph_requests_total\{[^}]*code="(13|500)"\}/);
    } finally {
      await served.stop();
    }
    const errors = lines.filter((line) => /"level":(50|60)/.test(line));
    expect(errors, errors.join("\n")).toEqual([]);
  });
});
