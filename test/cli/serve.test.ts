import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import { RELGRAPH_CLI } from "../support/keynodes.js";
import { startRedisServer } from "../support/redis-servers.js";

/** `relgraph serve` as a process, the way operators and the acceptance tests run it. */

interface Served {
  child: ChildProcess;
  url: string;
  output: string[];
  exited: Promise<number | null>;
}

/** Starts `relgraph serve` on a free port and resolves once it says where it listens. */
function serve(args: string[], env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [RELGRAPH_CLI, "serve", ...args], {
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  createInterface({ input: child.stderr! }).on("line", (line) => output.push(line));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      output.push(line);
      const match = /^relgraph listening on (\S+) /.exec(line);
      if (match) resolve({ child, url: match[1]!, output, exited });
    });
    void exited.then((code) => reject(new Error(`serve exited with ${code}:\n${output.join("\n")}`)));
  });
}

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe("relgraph serve", () => {
  it("starts on the demo data with a printed development key and key network, then stops on SIGTERM", async () => {
    const served = await serve([]);
    try {
      expect(served.output.join("\n")).toMatch(/development ApiKey: relgraph-dev-key/);
      expect(served.output.join("\n")).toMatch(/DEVELOPMENT 2-of-3 key network/);
      const response = await fetch(`${served.url}/api/v1/mutualFriend?socialUsername=alice,bob&limit=2`, {
        headers: { ApiKey: "relgraph-dev-key" },
      });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { code: string }).code).toBe("0");
      const network = (await (await fetch(`${served.url}/key-network`)).json()) as { threshold: number; nodes: unknown[] };
      expect(network).toMatchObject({ threshold: 2 });
      expect(network.nodes).toHaveLength(3);
      // The pages a person opens in a browser on a fresh serve.
      expect(served.output.join("\n")).toContain(`${served.url}/demo`);
      for (const page of ["/demo", "/docs", "/web/demo.js", "/openapi.json"]) {
        const answer = await fetch(`${served.url}${page}`);
        expect(`${page} ${answer.status}`).toBe(`${page} 200`);
        await answer.arrayBuffer();
      }
    } finally {
      // A keep-alive connection is still open (fetch's pool): shutdown must not wait on it.
      served.child.kill("SIGTERM");
    }
    expect(await served.exited).toBe(0);
  });

  it("refuses invalid --data with file:line reasons and exit code 1, loading nothing", async () => {
    const dir = await mkdtemp(join(tmpdir(), "relgraph-serve-"));
    dirs.push(dir);
    const file = join(dir, "bad.jsonl");
    await writeFile(file, '{"type":"user","relationId":"u1","addresses":[]}\n{"type":"friend","a":"u1","b":"nobody"}\n');
    const child = spawn(process.execPath, [RELGRAPH_CLI, "serve", "--data", file], {
      env: { ...process.env, PORT: "0", LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(1);
    expect(stderr).toContain(`${file}:2: `);
    expect(stderr).toMatch(/nobody/);
  });

  it("on Redis with no key configured anywhere, refuses every ApiKey with 10002", async () => {
    const redis = await startRedisServer();
    try {
      const served = await serve([], { REDIS_URL: redis.url, API_KEYS: "" });
      try {
        expect(served.output.join("\n")).not.toMatch(/development ApiKey/);
        const response = await fetch(`${served.url}/api/v1/mutualContractInteraction?address=0x${"1".repeat(40)},0x${"2".repeat(40)}`, {
          headers: { ApiKey: "relgraph-dev-key" },
        });
        expect(response.status).toBe(401);
        expect(await response.json()).toMatchObject({ code: "10002", data: null });
      } finally {
        served.child.kill("SIGTERM");
      }
      expect(await served.exited).toBe(0);
    } finally {
      await redis.stop();
    }
  });
});
