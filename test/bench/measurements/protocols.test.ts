import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRelgraph, TEST_API_KEY, type RunningRelgraph } from "../../support/relgraph-server.js";

/*
 * The protocol ratios under h2load (bench/measurements/protocols.ts), loaded from dist/ as
 * `npm run bench` runs it, since it starts dist/bench/processes/plain-server.js beside itself.
 * `.ci/run` installs h2load (nghttp2-client).
 */
type Protocols = typeof import("../../../bench/measurements/protocols.js");
let bench: Protocols;

const SAMPLE = `finished in 2.00s, 28497.00 req/s, 3.37MB/s
requests: 28497 total, 28497 started, 28497 done, 28490 succeeded, 7 failed, 0 errored, 0 timeout
status codes: 28480 2xx, 0 3xx, 10 4xx, 0 5xx
traffic: 3.37MB (3533628) total, 4.73MB (4957434) headers (space savings 0.00%), 111.29KB (113964) data
`;

const address = (n: number) => `0x${String(n).repeat(40)}`;
const RECORDS = [
  { type: "user", relationId: "u1", name: "A", avatar: "", addresses: [address(1)] },
  { type: "user", relationId: "u2", name: "B", avatar: "", addresses: [address(2)] },
  { type: "user", relationId: "u3", name: "C", avatar: "", addresses: [address(3)] },
  { type: "friend", a: "u1", b: "u3", description: "" },
  { type: "friend", a: "u2", b: "u3", description: "" },
];

function requireH2load(): void {
  if (!bench.h2loadInstalled()) throw new Error("h2load is not installed: apt-get install nghttp2-client (.ci/run does)");
}

beforeAll(async () => {
  bench = (await import(new URL("../../../dist/bench/measurements/protocols.js", import.meta.url).href)) as Protocols;
});

describe("parseH2load", () => {
  it("reads the rate, the successes, the failures and the answers that were not 2xx", () => {
    expect(bench.parseH2load(SAMPLE)).toEqual({ requestsPerSecond: 28_497, succeeded: 28_490, failed: 7, non2xx: 10 });
  });

  it("refuses output without a summary, saying what it got", () => {
    expect(() => bench.parseH2load("connect error: Connection refused\n")).toThrow(/no summary.*Connection refused/s);
  });
});

describe("measureProtocols against a real relgraph and plain Fastify", () => {
  let relgraph: RunningRelgraph;
  let work: string;
  beforeAll(async () => {
    relgraph = await startRelgraph({ records: RECORDS });
    work = await mkdtemp(path.join(tmpdir(), "relgraph-protocols-"));
  });
  afterAll(async () => {
    await relgraph?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("measures every protocol without a failure, and the four ratios", async () => {
    requireH2load();
    const lines: string[] = [];
    const result = await bench.measureProtocols({
      relgraph: { port: relgraph.port, apiKey: TEST_API_KEY },
      addresses: [address(1), address(2)],
      limit: 20,
      durationSeconds: 1,
      warmupSeconds: 1,
      work,
      log: (line) => lines.push(line),
    });
    expect(result.skipped).toBeUndefined();
    expect(result.runs.map((run) => run.name)).toEqual(["plain-h1", "rest-h1", "rest-h2c", "grpc", "connect"]);
    for (const run of result.runs) {
      expect(run.problem, run.name).toBeUndefined();
      expect(run.requestsPerSecond, run.name).toBeGreaterThan(0);
      expect(run.succeeded, run.name).toBeGreaterThan(0);
    }
    expect(result.ratios.map((ratio) => ratio.target)).toEqual([0.5, 0.9, 0.9, 0.9]);
    for (const ratio of result.ratios) expect(ratio.value, ratio.name).toBeGreaterThan(0);
    const report = bench.renderProtocols(result);
    expect(report).toMatch(/gRPC ÷ REST\s+\d+\.\d\d\s+target ≥ 0\.9\s+(PASS|FAIL)/);
    expect(lines).toHaveLength(5);
  }, 60_000);

  it("refuses to measure a request relgraph does not answer", async () => {
    requireH2load();
    await expect(
      bench.measureProtocols({
        relgraph: { port: relgraph.port, apiKey: "wrong-key" },
        addresses: [address(1), address(2)],
        limit: 20,
        durationSeconds: 1,
        warmupSeconds: 1,
        work,
        log: () => {},
      }),
    ).rejects.toThrow(/HTTP 401/);
  });
});
