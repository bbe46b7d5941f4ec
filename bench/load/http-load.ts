import autocannon from "autocannon";
import { createHttpPacerClient, type HttpRequest } from "./http-pacer.js";
import { openLoop, type LoadResult } from "./load.js";

export type { HttpRequest } from "./http-pacer.js";

/** What an HTTP measurement sends: requests, cycled, with the same headers. */
export interface HttpTarget {
  baseUrl: string;
  requests: readonly HttpRequest[];
  headers: Record<string, string>;
}

/** GET requests of the given paths. */
export function gets(paths: readonly string[]): HttpRequest[] {
  return paths.map((path) => ({ method: "GET", path }));
}

/**
 * Saturation with autocannon: `connections` keep-alive connections, each sending as soon as it has
 * its answer. The requests are dealt out over the connections (connection k sends every
 * connections-th request from the k-th), so together they cycle through all of them. Left to
 * itself autocannon starts every connection at the first request of one shared list, so that they
 * all ask the same question at the same moment (which flatters anything a server caches), and
 * builds the whole list for every connection before they all start.
 */
export async function httpSaturate(target: HttpTarget, connections: number, seconds: number): Promise<LoadResult> {
  const requests = target.requests.map(({ method, path, body }) => ({ method, path, body }));
  let connection = 0;
  const result = await autocannon({
    url: target.baseUrl,
    headers: target.headers,
    requests: requests.slice(0, 1),
    setupClient: (client) => {
      const k = connection++;
      client.setRequests(
        requests.length <= connections ? [requests[k % requests.length]!] : requests.filter((_, i) => i % connections === k % connections),
      );
    },
    timeout: 30,
    connections,
    duration: seconds,
  });
  const ok = result["2xx"];
  const errors = result.errors + result.timeouts + result.non2xx;
  return {
    requests: ok,
    errors,
    seconds: result.duration,
    rps: ok / result.duration,
    // autocannon's histogram records whole milliseconds.
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    firstError: errors > 0 ? `${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts` : undefined,
  };
}

/**
 * Part load at a fixed offered rate, with the same paced open loop as the RPC paths, over at most
 * `connections` keep-alive connections (http-pacer.ts). Not autocannon's overallRate: autocannon
 * lets each connection send its whole per-second quota back to back when each second starts, then
 * idle (lib/httpClient.js), so its "half load" is saturation for part of every second.
 */
export async function httpAtRate(target: HttpTarget, connections: number, seconds: number, rate: number): Promise<LoadResult> {
  const client = createHttpPacerClient(target.baseUrl, target.headers, connections);
  try {
    return await openLoop((i) => client.send(target.requests[i % target.requests.length]!), rate, seconds);
  } finally {
    client.close();
  }
}
