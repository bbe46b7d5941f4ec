import { execFile } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRelgraphProcess, startServeProcess } from "../support/relgraph-process.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";

/*
 * Prometheus's own lint, `promtool check metrics` (Debian's prometheus package; .ci/run installs it),
 * run on what the real `relgraph serve` and `relgraph follow --metrics-port` expose, after traffic,
 * so every family (requests, store calls, caches, process) has series to check.
 */

function promtool(exposition: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile("promtool", ["check", "metrics"], (error, stdout, stderr) => {
      if (error && typeof error.code !== "number") reject(error);
      else resolve({ code: error ? (error.code as number) : 0, output: `${stdout}${stderr}` });
    });
    child.stdin!.end(exposition);
  });
}

let redis: TestRedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.stop();
});

describe("promtool check metrics", () => {
  it("passes on serve's /metrics, with the active handles, requests and resources as gauges", async () => {
    const served = await startServeProcess({ LOG_LEVEL: "warn" });
    try {
      for (const path of ["/api/v1/mutualFriend?socialUsername=alice,bob&limit=2", "/api/v1/nosuch", "/healthz"]) {
        await (await fetch(`${served.url}${path}`, { headers: { ApiKey: "relgraph-dev-key" } })).arrayBuffer();
      }
      const exposition = await (await fetch(`${served.url}/metrics`)).text();
      expect(exposition).toContain("relgraph_requests_total{");
      const { code, output } = await promtool(exposition);
      expect(output).toBe("");
      expect(code).toBe(0);
      // Renamed, not lost.
      expect(exposition).toMatch(/^relgraph_nodejs_active_handles_now [1-9]/m);
      expect(exposition).toMatch(/^# TYPE relgraph_nodejs_active_requests_now gauge$/m);
      expect(exposition).toMatch(/^relgraph_nodejs_active_resources_now [1-9]/m);
      expect(exposition).not.toMatch(/^(# TYPE )?relgraph_nodejs_active_\w+_total/m);
    } finally {
      await served.stop();
    }
  });

  it("passes on follow's --metrics-port", async () => {
    const follow = startRelgraphProcess(["follow", "--stream", "promtool:changes", "--metrics-port", "0"], {
      REDIS_URL: redis.url,
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
    });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        const poll = setInterval(() => {
          const line = follow.output.find((text) => text.includes('"serving metrics"'));
          if (line) {
            clearInterval(poll);
            resolve((JSON.parse(line) as { port: number }).port);
          }
        }, 20);
        void follow.exited.then((code) => {
          clearInterval(poll);
          reject(new Error(`follow exited with ${code}:\n${follow.output.join("\n")}`));
        });
      });
      const exposition = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(exposition).toContain("relgraph_change_feed_lag_seconds");
      const { code, output } = await promtool(exposition);
      expect(output).toBe("");
      expect(code).toBe(0);
      expect(exposition).toMatch(/^relgraph_follow_nodejs_active_handles_now [1-9]/m);
    } finally {
      await follow.stop();
    }
  });
});
