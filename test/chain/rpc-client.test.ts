import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRpcClient, retryAfterMs, RpcResponseError } from "../../src/chain/rpc-client.js";
import { startAnvil, type TestAnvil } from "./support/anvil.js";
import { startRpcProxy, type RpcProxy } from "./support/rpc-proxy.js";

let anvil: TestAnvil;
let proxy: RpcProxy;

beforeAll(async () => {
  anvil = await startAnvil();
  proxy = await startRpcProxy(anvil.url);
});
afterAll(async () => {
  await proxy?.close();
  await anvil?.stop();
});

/** A loopback URL where nothing listens: the port was free a moment ago and is closed again. */
async function deadUrl(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

function reset(): void {
  Object.assign(proxy.faults, { down: false, rateLimited: 0, retryAfter: "1", maxLogs: null, wrongBlocks: 0, noBatches: false });
}

describe("createRpcClient", () => {
  it("fails over to the next endpoint when one does not answer, and counts the error", async () => {
    reset();
    const events: { endpoint: string; error: string }[] = [];
    const dead = await deadUrl();
    const rpc = createRpcClient({ urls: [dead, proxy.url], baseBackoffMs: 10_000, onEndpointError: (event) => events.push(event) });
    expect(await rpc.call("eth_chainId", [])).toBe("0x7a69");
    expect(rpc.errors()).toBe(1);
    expect(events[0]!.endpoint).toBe(dead);
    // Set aside, the dead endpoint is not tried again at once: the next call goes straight to the proxy.
    expect(await rpc.call("eth_blockNumber", [])).toMatch(/^0x/);
    expect(rpc.errors()).toBe(1);
    rpc.close();
  });

  it("honours a 429's Retry-After, then gets its answer", async () => {
    reset();
    proxy.faults.rateLimited = 1;
    const waits: number[] = [];
    const rpc = createRpcClient({ urls: [proxy.url], baseBackoffMs: 20, random: () => 0, onEndpointError: ({ waitMs }) => waits.push(waitMs) });
    const before = proxy.counts["429"] ?? 0;
    expect(await rpc.call("eth_chainId", [])).toBe("0x7a69");
    expect((proxy.counts["429"] ?? 0) - before).toBe(1);
    expect(waits).toEqual([1000]);
    rpc.close();
  });

  it("backs off, with growing waits, while the only endpoint is down, and resumes once it is back", async () => {
    reset();
    proxy.faults.down = true;
    const waits: number[] = [];
    const rpc = createRpcClient({
      urls: [proxy.url],
      baseBackoffMs: 20,
      random: () => 1,
      onEndpointError: ({ waitMs }) => {
        waits.push(waitMs);
        if (waits.length === 4) proxy.faults.down = false;
      },
    });
    expect(await rpc.call("eth_chainId", [])).toBe("0x7a69");
    expect(waits).toEqual([20, 40, 80, 160]);
    rpc.close();
  });

  it("throws the node's JSON-RPC error as it is, without retrying it", async () => {
    reset();
    const rpc = createRpcClient({ urls: [proxy.url] });
    const before = proxy.counts.eth_noSuchMethod ?? 0;
    const error = await rpc.call("eth_noSuchMethod", []).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RpcResponseError);
    expect((error as RpcResponseError).code).toBe(-32601);
    expect((proxy.counts.eth_noSuchMethod ?? 0) - before).toBe(1);
    expect(rpc.errors()).toBe(0);
    rpc.close();
  });

  it("answers a batch in the order of its calls", async () => {
    reset();
    const rpc = createRpcClient({ urls: [proxy.url] });
    const [chainId, block] = await rpc.batch<string>([
      { method: "eth_chainId", params: [] },
      { method: "eth_blockNumber", params: [] },
    ]);
    expect(chainId).toBe("0x7a69");
    expect(block).toMatch(/^0x[0-9a-f]+$/);
    rpc.close();
  });

  it("sends the calls of a batch one by one to a provider that refuses batches", async () => {
    reset();
    proxy.faults.noBatches = true;
    const rpc = createRpcClient({ urls: [proxy.url] });
    expect(await rpc.batch([{ method: "eth_chainId", params: [] }, { method: "eth_chainId", params: [] }])).toEqual(["0x7a69", "0x7a69"]);
    expect(await rpc.batch([{ method: "eth_chainId", params: [] }])).toEqual(["0x7a69"]);
    expect(proxy.counts.batchRefused).toBe(1);
    expect(rpc.errors()).toBe(0);
    rpc.close();
  });

  it("stops a call that waits for an endpoint when closed", async () => {
    reset();
    proxy.faults.down = true;
    const rpc = createRpcClient({ urls: [proxy.url], baseBackoffMs: 60_000, maxBackoffMs: 60_000 });
    const pending = rpc.call("eth_chainId", []);
    await new Promise((resolve) => setTimeout(resolve, 100));
    rpc.close();
    await expect(pending).rejects.toThrow(/closed/);
    proxy.faults.down = false;
  });
});

describe("retryAfterMs", () => {
  it("reads seconds and HTTP dates", () => {
    expect(retryAfterMs("3")).toBe(3000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(retryAfterMs("soon")).toBeNull();
    expect(retryAfterMs(null)).toBeNull();
  });
});
