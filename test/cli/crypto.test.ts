import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDecrypt, runKeygen, runKeynode } from "../../src/cli/commands/crypto.js";
import type { CommandIo } from "../../src/cli/io.js";
import { readKeyShare, readPublicKeyNetwork } from "../../src/crypto/key-network-file.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "relgraph-cli-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function io(stdin = "") {
  const out = { stdout: "", stderr: "" };
  const sink = (key: "stdout" | "stderr") =>
    new Writable({
      write(chunk, _encoding, done) {
        out[key] += chunk.toString();
        done();
      },
    });
  const input = new PassThrough();
  input.end(stdin);
  const streams: CommandIo = { stdin: input, stdout: sink("stdout"), stderr: sink("stderr") };
  return { streams, out };
}

describe("relgraph keygen", () => {
  it("writes the public network and one 0600 share per node, with default or given URLs", async () => {
    const out = join(dir, "net");
    const { streams, out: text } = io();
    expect(await runKeygen(["--threshold", "3", "--nodes", "5", "--out", out, "--base-port", "9000"], streams)).toBe(0);
    expect(text.stdout).toMatch(/3-of-5/);
    const network = await readPublicKeyNetwork(join(out, "key-network.json"));
    expect(network.threshold).toBe(3);
    expect(network.nodes.map((n) => n.url)).toEqual([1, 2, 3, 4, 5].map((i) => `http://127.0.0.1:${9000 + i}`));
    for (const i of [1, 2, 3, 4, 5]) {
      const file = join(out, `node-${i}.share.json`);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      const share = await readKeyShare(file);
      expect(share.index).toBe(i);
      expect(share.network).toEqual(network);
    }
    // Only the shares are secret: the public file holds no scalar.
    expect(await readFile(join(out, "key-network.json"), "utf8")).not.toMatch(/secret/i);

    const urls = join(dir, "urls");
    const given = ["https://k1.example", "https://k2.example"];
    expect(await runKeygen(["--threshold", "2", "--nodes", "2", "--out", urls, "--url", given[0]!, "--url", given[1]!], io().streams)).toBe(0);
    expect((await readPublicKeyNetwork(join(urls, "key-network.json"))).nodes.map((n) => n.url)).toEqual(given);
  });

  it("never overwrites an existing network", async () => {
    const out = join(dir, "twice");
    expect(await runKeygen(["--threshold", "1", "--nodes", "1", "--out", out], io().streams)).toBe(0);
    const before = await readFile(join(out, "node-1.share.json"), "utf8");
    const { streams, out: text } = io();
    expect(await runKeygen(["--threshold", "1", "--nodes", "1", "--out", out], streams)).toBe(1);
    expect(text.stderr).toMatch(/already exists/);
    expect(await readFile(join(out, "node-1.share.json"), "utf8")).toBe(before);
  });

  it("reports usage errors with exit code 2", async () => {
    for (const argv of [
      ["--threshold", "2", "--nodes", "3"],
      ["--threshold", "4", "--nodes", "3", "--out", dir],
      ["--threshold", "1", "--nodes", "2", "--out", dir, "--url", "https://only.one"],
      ["--threshold", "x", "--nodes", "3", "--out", dir],
      ["--bogus"],
    ]) {
      const { streams, out } = io();
      expect(await runKeygen(argv, streams), argv.join(" ")).toBe(2);
      expect(out.stderr).toMatch(/Usage: relgraph keygen/);
    }
  });
});

describe("help and argument errors", () => {
  it("prints help for each command", async () => {
    for (const [run, usage] of [
      [runKeygen, /relgraph keygen/],
      [runKeynode, /relgraph keynode --share FILE/],
      [runDecrypt, /relgraph decrypt --server URL --sig SIG --message-file FILE/],
    ] as const) {
      const { streams, out } = io();
      expect(await run(["--help"], streams)).toBe(0);
      expect(out.stdout).toMatch(usage);
    }
  });

  it("keynode needs a readable, valid share file", async () => {
    expect(await runKeynode([], io().streams)).toBe(2);
    const { streams, out } = io();
    expect(await runKeynode(["--share", join(dir, "missing.json")], streams)).toBe(1);
    expect(out.stderr).toMatch(/cannot read/);
  });

  it("decrypt needs its flags, and JSON holding EncryptedData on stdin", async () => {
    expect(await runDecrypt(["--server", "http://127.0.0.1:1", "--sig", "0x00"], io().streams)).toBe(2);
    const messageFile = join(dir, "message.txt");
    await writeFile(messageFile, "message\n");
    const flags = ["--server", "http://127.0.0.1:1", "--sig", "0x00", "--message-file", messageFile];
    for (const [stdin, reason] of [
      ["not json", /stdin is not JSON/],
      ['{"code":"11602","desc":"user not found","data":null}', /11602 user not found/],
      ['{"code":"0","desc":"success","data":[]}', /no EncryptedData/],
    ] as const) {
      const { streams, out } = io(stdin);
      expect(await runDecrypt(flags, streams)).toBe(1);
      expect(out.stderr).toMatch(reason);
    }
  });
});
