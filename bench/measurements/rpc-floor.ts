import type { RpcCall, RpcClient } from "../../src/chain/rpc-client.js";

/*
 * The floor of a backfill on this machine: how long the node alone needs to serve the JSON-RPC
 * requests the indexer makes. An indexer run through recordingClient notes each request (its
 * JSON-RPC body) and when it was in flight; replayRequests sends the same bodies to the node again,
 * each one once every request that had finished before it started in the recording has finished
 * (so the same batches go with the same concurrency, and a request that waited on an answer,
 * as the code look-ups wait on their blocks, still waits), and reads every answer to its end
 * without parsing it. What the indexer adds above this (parsing, planning, writing) is its own.
 */

/** One request as the indexer made it. */
export interface RecordedRequest {
  body: string;
  started: number;
  ended: number;
}

/** An RpcClient that notes every request it sends, for replayRequests. */
export function recordingClient(client: RpcClient): { client: RpcClient; requests: RecordedRequest[] } {
  const requests: RecordedRequest[] = [];
  let nextId = 1;
  const noted = async <T>(payload: unknown, send: () => Promise<T>): Promise<T> => {
    const request: RecordedRequest = { body: JSON.stringify(payload), started: performance.now(), ended: Number.POSITIVE_INFINITY };
    requests.push(request);
    try {
      return await send();
    } finally {
      request.ended = performance.now();
    }
  };
  const recording: RpcClient = {
    call: <T>(method: string, params: unknown[]) => noted({ jsonrpc: "2.0", id: nextId++, method, params }, () => client.call<T>(method, params)),
    batch: <T>(calls: readonly RpcCall[]) =>
      noted(
        calls.map((call) => ({ jsonrpc: "2.0", id: nextId++, method: call.method, params: call.params })),
        () => client.batch<T>(calls),
      ),
    errors: () => client.errors(),
    close: () => client.close(),
  };
  return { client: recording, requests };
}

/** What a replay took. */
export interface ReplayResult {
  seconds: number;
  requests: number;
  answerBytes: number;
}

/** Sends the recorded requests to `url` again, in their recorded order and concurrency; answers are read whole, never parsed. */
export async function replayRequests(url: string, recorded: readonly RecordedRequest[]): Promise<ReplayResult> {
  let answerBytes = 0;
  const done: Promise<void>[] = [];
  const started = performance.now();
  for (const [i, request] of recorded.entries()) {
    // Only the requests this one waited for in the recording: those that had ended before it began.
    const before = recorded.slice(0, i).flatMap((other, j) => (other.ended <= request.started ? [done[j]!] : []));
    done.push(
      Promise.all(before).then(async () => {
        const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body: request.body });
        const answer = await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`the node answered a replayed request with HTTP ${response.status}`);
        answerBytes += answer.byteLength;
      }),
    );
  }
  await Promise.all(done);
  return { seconds: (performance.now() - started) / 1000, requests: recorded.length, answerBytes };
}
