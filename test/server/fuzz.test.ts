import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runFuzz, startFuzzTarget } from "../../bench/tools/fuzz.js";
import { SERVING_WAYS } from "../support/relgraph-server.js";

/*
 * The short version of `npm run fuzz` (bench/fuzz.ts): fast-check requests from a fixed seed over
 * REST parameters and the RPC bodies of Connect (JSON and binary), gRPC and gRPC-Web, on real
 * sockets. No answer may be a server failure, and every one must carry a contract code in its
 * protocol's envelope, gRPC-Web's refusals by connect-es included. Both ways of serving (FAST_PATHS).
 */
describe.each(SERVING_WAYS)("fuzzed requests, $name", ({ fastPaths }) => {
  let target: Awaited<ReturnType<typeof startFuzzTarget>>;
  beforeAll(async () => {
    target = await startFuzzTarget({ fastPaths });
  });
  afterAll(() => target?.close());

  it("get no 5xx and a contract code in the envelope, on every protocol", async () => {
    const report = await runFuzz({ baseUrl: target.baseUrl, targets: target.targets, runs: 2_000, seed: 20261125, concurrency: 8 });
    expect(report.requests).toBe(2_000);
    const summary = report.problems.slice(0, 5).map(({ problem, request }) => `${problem}\n  ${request.protocol} ${request.path}`).join("\n");
    expect(report.serverErrors, summary).toBe(0);
    expect(report.problemCount, summary).toBe(0);
    // The run reached every protocol, and got past validation often enough to exercise the queries.
    for (const protocol of ["rest", "connect-json", "connect-proto", "grpc", "grpc-web"]) {
      const counts = report.byProtocol[protocol] ?? {};
      expect(Object.values(counts).reduce((sum, n) => sum + n, 0), protocol).toBeGreaterThan(100);
    }
    expect(report.byProtocol.rest?.["0"]).toBeGreaterThan(20);
    const rpcSuccesses = ["connect-json", "connect-proto", "grpc", "grpc-web"].reduce((sum, p) => sum + (report.byProtocol[p]?.["0"] ?? 0), 0);
    expect(rpcSuccesses).toBeGreaterThan(5);
  });
});
