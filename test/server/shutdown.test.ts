import net from "node:net";
import { create } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import { MutualContractInteractionRequestSchema, RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { EXPECTED, addr, fixtureRecords } from "../support/fixtures.js";
import { TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { createRelationGrpcClient, type RelationGrpcClient } from "./grpc-client.js";
import { closeH2c, connectH2c, h2cGet, restGet } from "./http.js";

/*
 * close() must not wait on clients. The bounds below are hang guards, not performance checks: an
 * idle connection must not hold close() at all, and a stalled request at most for the server's
 * grace period (5 s by default) before its connection is destroyed.
 */
const IDLE_GUARD_MS = 5_000;
const STALLED_GUARD_MS = 15_000;

const CONTRACTS_QUESTION = create(MutualContractInteractionRequestSchema, { address: [addr("bob"), addr("carol")] });

/** Resolves when nothing accepts connections on the port any more. */
function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });
}

async function timed(action: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

describe("shutdown over real sockets", () => {
  let server: RunningRelgraph | undefined;
  let grpcJs: RelationGrpcClient | undefined;
  const cleanups: (() => void)[] = [];
  afterEach(async () => {
    grpcJs?.close();
    for (const cleanup of cleanups.splice(0)) cleanup();
    await server?.close();
  });

  it("closes promptly with an open grpc-js channel, an idle h2c session and an idle HTTP/1.1 keep-alive", async () => {
    server = await startRelgraph({ records: fixtureRecords() });
    grpcJs = createRelationGrpcClient(`127.0.0.1:${server.port}`);
    const answer = await grpcJs.call(RelationService.method.mutualContractInteraction, CONTRACTS_QUESTION);
    expect(answer.data).toEqual(EXPECTED.mutualContracts.bobCarol);
    expect(grpcJs.client.getChannel().getConnectivityState(false)).toBe(grpc.connectivityState.READY);

    const h2 = await connectH2c(server.url);
    cleanups.push(() => h2.destroy());
    expect((await h2cGet(h2, "/healthz")).status).toBe(200);
    const h2Gone = new Promise<void>((resolve) => h2.once("close", () => resolve()));
    // fetch keeps its HTTP/1.1 connection alive after this answer.
    expect((await restGet(server.url, "/readyz", {}, { apiKey: null })).status).toBe(200);

    const elapsed = await timed(() => server!.close());
    expect(elapsed).toBeLessThan(IDLE_GUARD_MS);
    await h2Gone;
    expect(await refusesConnections(server.port)).toBe(true);
    await expect(grpcJs.call(RelationService.method.mutualContractInteraction, CONTRACTS_QUESTION)).rejects.toMatchObject({
      code: grpc.status.UNAVAILABLE,
    });
  });

  it("does not wait forever on a stalled HTTP/1.1 upload or a stalled HTTP/2 stream", async () => {
    server = await startRelgraph({ records: fixtureRecords() });
    const path = `/${RelationService.typeName}/${RelationService.method.mutualContractInteraction.name}`;

    // HTTP/1.1: headers promise 100 bytes, 3 arrive, then nothing. Both requests carry a valid
    // ApiKey: without one they are refused before their body is read, and stall nothing.
    const h1 = net.connect(server.port, "127.0.0.1");
    cleanups.push(() => h1.destroy());
    await new Promise((resolve) => h1.once("connect", resolve));
    const h1Gone = new Promise<void>((resolve) => h1.once("close", () => resolve()));
    h1.write(`POST ${path} HTTP/1.1\r\nHost: relgraph\r\nContent-Type: application/json\r\nApiKey: ${TEST_API_KEY}\r\nContent-Length: 100\r\n\r\n{"a`);

    // HTTP/1.1 without an ApiKey: answered at once with `Connection: close`, to a client that never reads it.
    const refused = net.connect(server.port, "127.0.0.1");
    cleanups.push(() => refused.destroy());
    await new Promise((resolve) => refused.once("connect", resolve));
    refused.write(`POST ${path} HTTP/1.1\r\nHost: relgraph\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a`);

    // HTTP/2: a stream whose request body never ends.
    const h2 = await connectH2c(server.url);
    cleanups.push(() => h2.destroy());
    h2.on("error", () => {});
    const stream = h2.request({ ":method": "POST", ":path": path, "content-type": "application/json", apikey: TEST_API_KEY });
    stream.on("error", () => {});
    stream.write('{"a');
    const streamGone = new Promise<void>((resolve) => stream.once("close", () => resolve()));
    // Let both requests reach their handlers before closing.
    await new Promise((resolve) => setTimeout(resolve, 200));

    const elapsed = await timed(() => server!.close());
    expect(elapsed).toBeLessThan(STALLED_GUARD_MS);
    await Promise.all([h1Gone, streamGone]);
    expect(await refusesConnections(server.port)).toBe(true);
    await closeH2c(h2);
  });

  it("is idempotent", async () => {
    server = await startRelgraph({ records: fixtureRecords() });
    await Promise.all([server.close(), server.close()]);
    await server.close();
  });
});
