import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/*
 * An RPC proxy for tests, in front of a real node: it forwards JSON-RPC requests as they are, and
 * can be told to misbehave as providers do: answer 429 with Retry-After, fail outright, cap
 * eth_getLogs as a provider caps it, hand back a wrong block, or lag behind the chain.
 */

/** How the proxy misbehaves now; change the fields at any time. */
export interface ProxyFaults {
  /** Every request fails: the connection is dropped without an answer. */
  down: boolean;
  /** The next N requests are answered 429 with `retryAfter`. */
  rateLimited: number;
  /** The Retry-After header of a 429 (seconds or an HTTP date); null sends none. */
  retryAfter: string | null;
  /** eth_getLogs answers holding more logs than this are replaced by error -32005; null: no cap. */
  maxLogs: number | null;
  /** The next N answers to eth_getBlockByNumber with full transactions name another block number. */
  wrongBlocks: number;
  /** Batches are refused with one JSON-RPC error, as some providers do. */
  noBatches: boolean;
  /** Every answer is held back this long, as a distant provider's would be. */
  latencyMs: number;
  /**
   * The node acts as one behind the chain whose head is this block (null: the chain's own head):
   * eth_blockNumber and "latest" give it, and blocks above it are not there (null).
   */
  headAt: number | null;
}

/** A running proxy. */
export interface RpcProxy {
  url: string;
  faults: ProxyFaults;
  /** Requests seen, by method (a batch counts each call), and answers of each misbehaviour given. */
  counts: Record<string, number>;
  close(): Promise<void>;
}

/** Starts a proxy on a free loopback port in front of `upstream`. */
export async function startRpcProxy(upstream: string): Promise<RpcProxy> {
  const faults: ProxyFaults = { down: false, rateLimited: 0, retryAfter: "1", maxLogs: null, wrongBlocks: 0, noBatches: false, latencyMs: 0, headAt: null };
  const counts: Record<string, number> = {};
  const count = (key: string) => (counts[key] = (counts[key] ?? 0) + 1);
  const server: Server = createServer((request, response) => {
    void (async () => {
      const body = await readBody(request);
      let calls: { method?: string; params?: unknown[]; id?: unknown }[];
      let isBatch: boolean;
      try {
        const parsed = JSON.parse(body) as unknown;
        isBatch = Array.isArray(parsed);
        calls = Array.isArray(parsed) ? parsed : [parsed as never];
      } catch {
        response.writeHead(400).end();
        return;
      }
      for (const call of calls) count(String(call.method));
      if (faults.noBatches && isBatch) {
        count("batchRefused");
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "batch requests are not supported" } }));
        return;
      }
      if (faults.down) {
        count("dropped");
        request.socket.destroy();
        return;
      }
      if (faults.rateLimited > 0) {
        faults.rateLimited--;
        count("429");
        response.writeHead(429, faults.retryAfter === null ? {} : { "retry-after": faults.retryAfter }).end("rate limited");
        return;
      }
      if (faults.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, faults.latencyMs));
      let sent = body;
      if (faults.headAt !== null) {
        for (const call of calls) if (call.method === "eth_getBlockByNumber" && call.params?.[0] === "latest") call.params[0] = hex(faults.headAt);
        sent = JSON.stringify(isBatch ? calls : calls[0]);
      }
      const forwarded = await fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body: sent });
      let answer = (await forwarded.json()) as unknown;
      answer = Array.isArray(answer) ? answer.map((item, i) => misbehave(calls[i]!, item)) : misbehave(calls[0]!, answer);
      response.writeHead(forwarded.status, { "content-type": "application/json" }).end(JSON.stringify(answer));
    })().catch(() => request.socket.destroy());
  });

  function misbehave(call: { method?: string; params?: unknown[] }, answer: unknown): unknown {
    const item = answer as { result?: unknown; id?: unknown; jsonrpc?: string };
    if (call.method === "eth_getLogs" && faults.maxLogs !== null && Array.isArray(item.result) && item.result.length > faults.maxLogs) {
      count("capped");
      return { jsonrpc: "2.0", id: item.id, error: { code: -32005, message: `query returned more than ${faults.maxLogs} results` } };
    }
    if (call.method === "eth_getBlockByNumber" && call.params?.[1] === true && faults.wrongBlocks > 0 && item.result) {
      faults.wrongBlocks--;
      count("wrongBlock");
      const block = item.result as { number: string };
      return { ...item, result: { ...block, number: hex(Number.parseInt(block.number, 16) + 1) } };
    }
    if (faults.headAt !== null && item.result !== null && item.result !== undefined) {
      if (call.method === "eth_blockNumber" && Number.parseInt(String(item.result), 16) > faults.headAt) {
        count("behind");
        return { ...item, result: hex(faults.headAt) };
      }
      const asked = call.params?.[0];
      if (call.method === "eth_getBlockByNumber" && typeof asked === "string" && asked.startsWith("0x") && Number.parseInt(asked, 16) > faults.headAt) {
        count("behind");
        return { ...item, result: null };
      }
    }
    return answer;
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    faults,
    counts,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

function hex(number: number): string {
  return `0x${number.toString(16)}`;
}
