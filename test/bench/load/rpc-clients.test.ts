import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGrpcClient, GRPC_CHANNELS } from "../../../bench/load/rpc-clients.js";
import { addr, fixtureRecords } from "../../support/fixtures.js";
import { startRelgraph, TEST_API_KEY, type RunningRelgraph } from "../../support/relgraph-server.js";

/*
 * The bench's gRPC load must reach relgraph over several connections, as REST's does: grpc-js
 * shares one connection among clients of the same target unless told otherwise. A TCP relay in
 * front of a real relgraph counts the connections the client opens.
 */

interface CountingRelay {
  port: number;
  /** Connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

async function countingRelay(targetPort: number): Promise<CountingRelay> {
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const server = net.createServer((client) => {
    accepted++;
    const upstream = net.connect(targetPort, "127.0.0.1");
    track(client);
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => accepted,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe("the bench's gRPC client", () => {
  let relgraph: RunningRelgraph;
  let relay: CountingRelay;
  beforeAll(async () => {
    relgraph = await startRelgraph({ records: fixtureRecords() });
    relay = await countingRelay(relgraph.port);
  });
  afterAll(async () => {
    await relay?.close();
    await relgraph?.close();
  });

  it(`deals concurrent calls over ${GRPC_CHANNELS} connections, each answered`, async () => {
    const request = { address: [addr("alice"), addr("bob")], limit: 20 };
    const rest = await fetch(`${relgraph.url}/api/v1/mutualFriend?address=${request.address.join(",")}&limit=20`, {
      headers: { apikey: TEST_API_KEY },
    });
    const expected = ((await rest.json()) as { data: unknown[] }).data.length;
    expect(expected).toBeGreaterThan(0);

    const grpc = createGrpcClient(relay.port, TEST_API_KEY);
    try {
      const call = grpc.caller("mutualFriend", [request]);
      const answers = (await Promise.all(Array.from({ length: GRPC_CHANNELS * 3 }, (_, i) => call(i)))) as Buffer[];
      expect(relay.connections()).toBe(GRPC_CHANNELS);
      // The same question over every connection: the same answer, which decodes to REST's.
      expect(await grpc.probe("mutualFriend", request)).toBe(expected);
      for (const answer of answers) expect(answer.equals(answers[0]!)).toBe(true);
      expect(answers[0]!.length).toBeGreaterThan(0);
    } finally {
      grpc.close();
    }
  });
});
