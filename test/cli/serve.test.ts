import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import { Wallet } from "ethers";
import { RELGRAPH_CLI, signAuthorization } from "../support/keynodes.js";
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
      const served = await serve([], { REDIS_URL: redis.url, API_KEYS: "", DEV_KEY_NETWORK: "1" });
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

  it("on Redis with no KEY_NETWORK_FILE, refuses to start and says why, unless DEV_KEY_NETWORK=1", async () => {
    const redis = await startRedisServer();
    try {
      const refused = spawn(process.execPath, [RELGRAPH_CLI, "serve"], {
        env: { ...process.env, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn", REDIS_URL: redis.url, API_KEYS: "k", KEY_NETWORK_FILE: "", DEV_KEY_NETWORK: "" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let said = "";
      refused.stdout!.on("data", (chunk: Buffer) => (said += chunk.toString()));
      refused.stderr!.on("data", (chunk: Buffer) => (said += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => refused.once("exit", resolve));
      expect(code).toBe(2);
      expect(said).toMatch(/no KEY_NETWORK_FILE.*KEY_NETWORK_FILE.*DEV_KEY_NETWORK=1/s);
      expect(said).not.toMatch(/listening/);

      const served = await serve([], { REDIS_URL: redis.url, API_KEYS: "k", KEY_NETWORK_FILE: "", DEV_KEY_NETWORK: "1" });
      expect((await fetch(`${served.url}/healthz`)).status).toBe(200);
      served.child.kill("SIGTERM");
      expect(await served.exited).toBe(0);
      expect(served.output.join("\n")).toMatch(/WARNING encryption: DEVELOPMENT 2-of-3 key network running in-process on a real store/);
    } finally {
      await redis.stop();
    }
  });

  it("prints no credential of ETH_RPC_URL or REDIS_URL, in the configuration or in an error", async () => {
    // An RPC endpoint that fails every call: ethers quotes the URL it called in its error.
    const rpc = createServer((_req, res) => res.writeHead(500).end("down"));
    await new Promise<void>((resolve) => rpc.listen(0, "127.0.0.1", resolve));
    const rpcPort = (rpc.address() as AddressInfo).port;
    const rpcUrl = `http://rpcuser:rpc-s3cret@127.0.0.1:${rpcPort}/v3/INFURAKEY0123456789abcdef?key=query-s3cret`;
    const served = await serve([], { LOG_LEVEL: "info", ETH_RPC_URL: rpcUrl });
    try {
      // Signed by another wallet than the message's address: the server asks ETH_RPC_URL (EIP-1271), which is down.
      const { message } = await signAuthorization(Wallet.createRandom());
      const sig = await Wallet.createRandom().signMessage(message);
      const address = /0x[0-9a-fA-F]{40}/.exec(message)![0];
      const query = new URLSearchParams({ address, sig, message });
      const response = await fetch(`${served.url}/api/v1/profile?${query}`, { headers: { ApiKey: "relgraph-dev-key" } });
      expect(await response.json()).toMatchObject({ code: "50300" });
    } finally {
      served.child.kill("SIGTERM");
      rpc.close();
    }
    await served.exited;
    const output = served.output.join("\n");
    expect(output).toContain(`127.0.0.1:${rpcPort}`);
    expect(output).not.toMatch(/s3cret|INFURAKEY/);

    const failed = spawn(process.execPath, [RELGRAPH_CLI, "serve"], {
      env: { ...process.env, PORT: "0", LOG_LEVEL: "info", REDIS_URL: "redis://default:redis-s3cret@127.0.0.1:9/0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let printed = "";
    failed.stdout!.on("data", (chunk: Buffer) => (printed += chunk.toString()));
    failed.stderr!.on("data", (chunk: Buffer) => (printed += chunk.toString()));
    expect(await new Promise((resolve) => failed.once("exit", resolve))).not.toBe(0);
    expect(printed).not.toMatch(/s3cret/);
  });
});
