import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { createSiweVerifier } from "../../auth/siwe.js";
import { loadConfig } from "../../config/config.js";
import { redactUrl } from "../../config/redact.js";
import { createPayloadKeyCache, decryptResult, fetchKeyNetwork } from "../../client/decrypt.js";
import type { EncryptedPayload } from "../../crypto/encryptor.js";
import { readKeyShare } from "../../crypto/key-network-file.js";
import { startKeyNode } from "../../crypto/key-node.js";
import { NETWORK_FILE, dealKeyNetwork, shareFileName, writeKeyNetwork } from "../../crypto/keygen.js";
import type { CommandIo } from "../io.js";

/**
 * `relgraph keygen`, `relgraph keynode` and `relgraph decrypt`. Each returns the process exit code:
 * 0 on success, 1 when the work failed, 2 for a usage error.
 */

const PROCESS_IO: CommandIo = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };

/** Thrown for a bad command line; reported with the usage text and exit code 2. */
class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

const KEYGEN_HELP = `Usage: relgraph keygen --threshold T --nodes N --out DIR [--base-port P | --url URL ...]

Deals a new T-of-N threshold key network. Writes into DIR (created with mode 0700):
  key-network.json      the public network: threshold, public key, and each node's URL and public share.
                        Point the server at it with KEY_NETWORK_FILE.
  node-<i>.share.json   node i's secret share (mode 0600). Give each node only its own file.
The dealer's secret is never written anywhere. Existing files are never overwritten.

Options:
  --threshold T    shares needed to decrypt (1..N)
  --nodes N        number of key nodes (1..255)
  --out DIR        output directory
  --base-port P    node i's URL is http://127.0.0.1:<P+i> (default 7400)
  --url URL        node URLs in index order, one --url per node (overrides --base-port)
  -h, --help       show this help
`;

/** `relgraph keygen --threshold T --nodes N --out DIR`. */
export async function runKeygen(argv: string[], io: CommandIo = PROCESS_IO): Promise<number> {
  return run("keygen", KEYGEN_HELP, io, async () => {
    const { values } = parse(argv, {
      threshold: { type: "string" },
      nodes: { type: "string" },
      out: { type: "string" },
      "base-port": { type: "string", default: "7400" },
      url: { type: "string", multiple: true },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) return help(io, KEYGEN_HELP);
    const nodes = integer(values.nodes, "--nodes", 1, 255);
    const threshold = integer(values.threshold, "--threshold", 1, nodes);
    const out = required(values.out, "--out");
    const basePort = integer(values["base-port"], "--base-port", 0, 65535 - nodes);
    const urls = values.url ?? [];
    if (urls.length > 0 && urls.length !== nodes) throw new UsageError(`give exactly ${nodes} --url options, one per node`);
    for (const [index, url] of urls.entries()) {
      // Not quoted: a mistyped URL may still carry a provider's key.
      if (!URL.canParse(url)) throw new UsageError(`--url number ${index + 1} is not an absolute URL`);
    }
    const dealt = dealKeyNetwork({
      threshold,
      nodes,
      url: (index) => urls[index - 1] ?? `http://127.0.0.1:${basePort + index}`,
    });
    await writeKeyNetwork(out, dealt);
    io.stdout.write(
      `Dealt a ${threshold}-of-${nodes} key network into ${out}:\n` +
        `  ${NETWORK_FILE} (public: set KEY_NETWORK_FILE to it on every relgraph server)\n` +
        dealt.network.nodes
          .map((node) => `  ${shareFileName(node.index)} (SECRET: for the node at ${redactUrl(node.url)} only)\n`)
          .join(""),
    );
    return 0;
  });
}

const KEYNODE_HELP = `Usage: relgraph keynode --share FILE [--port P] [--host H]

Runs one key node of a network dealt by 'relgraph keygen'. It answers POST /v1/decryption-share
with its decryption share for callers whose SIWE authorization matches the "only the signer"
condition, and GET /healthz.

Options:
  --share FILE   this node's node-<i>.share.json
  --port P       port to listen on (default: the port of this node's URL in the share file)
  --host H       interface to bind (default: HOST, else 0.0.0.0)
  -h, --help     show this help

Environment: CORS_ORIGINS, SIWE_DOMAINS, SIWE_MAX_AGE_SECONDS (default 86400), ETH_RPC_URL, LOG_LEVEL,
KEY_NODE_RATE_LIMIT_PER_SECOND (default 10) and KEY_NODE_RATE_LIMIT_BURST (default 20) per client
address, as for 'relgraph serve'.
`;

/** `relgraph keynode --share FILE [--port P]`: runs until SIGINT or SIGTERM. */
export async function runKeynode(argv: string[], io: CommandIo = PROCESS_IO): Promise<number> {
  return run("keynode", KEYNODE_HELP, io, async () => {
    const { values } = parse(argv, {
      share: { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) return help(io, KEYNODE_HELP);
    const share = await readKeyShare(required(values.share, "--share"));
    const config = loadConfig();
    const node = share.network.nodes.find((n) => n.index === share.index);
    const port = values.port === undefined ? portOf(node?.url) : integer(values.port, "--port", 0, 65535);
    const verifier = createSiweVerifier({
      domains: config.siweDomains,
      maxAgeSeconds: config.siweMaxAgeSeconds,
      ethRpcUrl: config.ethRpcUrl,
    });
    const running = await startKeyNode({
      share,
      verifier,
      port,
      host: values.host ?? config.host,
      corsOrigins: config.corsOrigins,
      rateLimit: { perSecond: config.keyNodeRatePerSecond, burst: config.keyNodeRateBurst },
      logger: { level: config.logLevel, stream: io.stderr },
    });
    io.stdout.write(
      `relgraph key node ${share.index} of ${share.network.nodes.length} ` +
        `(threshold ${share.network.threshold}) listening on ${running.url}\n`,
    );
    await new Promise<void>((resolve) => {
      const stop = () => {
        process.off("SIGINT", stop);
        process.off("SIGTERM", stop);
        resolve();
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
    await running.close();
    return 0;
  });
}

const DECRYPT_HELP = `Usage: relgraph decrypt --server URL --sig SIG --message-file FILE < response.json

Decrypts an encrypted Profile or Relationship-graph result. Reads from stdin one EncryptedData JSON
object, or a whole response ({"code","desc","data":{…}}); prints the decrypted JSON on stdout.
Several of them, one JSON document a line (the pages of one authorization, say), print one line each.
It fetches the key network from <URL>/key-network and asks its key nodes for decryption shares
with the same authorization (sig and message) that was sent with the query: once per payload key,
and the server uses one key for all the answers it gives under one authorization.

Options:
  --server URL         the relgraph server that produced the response
  --sig SIG            the 0x-hex signature sent as 'sig'
  --message-file FILE  file holding the exact signed EIP-4361 text sent as 'message'
                       (one trailing newline is ignored)
  --timeout-ms MS      how long to wait for each key node (default 10000)
  -h, --help           show this help
`;

/** `relgraph decrypt --server URL --sig SIG --message-file FILE`, EncryptedData (or a response) on stdin. */
export async function runDecrypt(argv: string[], io: CommandIo = PROCESS_IO): Promise<number> {
  return run("decrypt", DECRYPT_HELP, io, async () => {
    const { values } = parse(argv, {
      server: { type: "string" },
      sig: { type: "string" },
      "message-file": { type: "string" },
      "timeout-ms": { type: "string", default: "10000" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) return help(io, DECRYPT_HELP);
    const serverUrl = required(values.server, "--server");
    if (!URL.canParse(serverUrl)) throw new UsageError("--server must be an absolute URL");
    const sig = required(values.sig, "--sig");
    const messageFile = required(values["message-file"], "--message-file");
    const timeoutMs = integer(values["timeout-ms"], "--timeout-ms", 1, 600_000);
    const message = (await readFile(messageFile, "utf8")).replace(/\r?\n$/, "");
    const answers = jsonDocuments(await readStdin(io.stdin ?? process.stdin)).map(encryptedDataOf);
    const network = await fetchKeyNetwork(serverUrl, { timeoutMs });
    // In memory for this run only: the pages of one authorization need one threshold decryption.
    const keyCache = createPayloadKeyCache();
    for (const encrypted of answers) {
      const plaintext = await decryptResult(encrypted, { network, serverUrl, sig, message, timeoutMs, keyCache });
      io.stdout.write(`${new TextDecoder().decode(plaintext)}\n`);
    }
    return 0;
  });
}

/** What was piped in: one JSON document (of any layout), or several, one a line. */
function jsonDocuments(input: string): unknown[] {
  try {
    return [JSON.parse(input)];
  } catch {
    const lines = input.split("\n").filter((line) => line.trim() !== "");
    try {
      if (lines.length > 1) return lines.map((line) => JSON.parse(line) as unknown);
    } catch {
      // Reported below, as for a single document.
    }
    throw new Error("stdin is not JSON: pipe in an EncryptedData object or a whole response (or several, one a line)");
  }
}

/** Finds the EncryptedData in a piped document: the object itself, or a response's `data`. */
function encryptedDataOf(value: unknown): EncryptedPayload {
  if (isObject(value) && typeof value.code === "string" && value.code !== "0") {
    throw new Error(`stdin holds an error response, not encrypted data: ${value.code} ${String(value.desc ?? "")}`);
  }
  const data = isObject(value) && isObject(value.data) ? value.data : value;
  if (!isObject(data) || typeof data.encryptedString !== "string") {
    throw new Error("stdin holds no EncryptedData (an object with encryptedString, encryptedSymmetricKey, …)");
  }
  return data as unknown as EncryptedPayload;
}

async function run(name: string, usage: string, io: CommandIo, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`relgraph ${name}: ${error.message}\n\n${usage}`);
      return 2;
    }
    io.stderr.write(`relgraph ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

function parse<T extends NonNullable<Parameters<typeof parseArgs>[0]>["options"]>(argv: string[], options: T) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function help(io: CommandIo, text: string): number {
  io.stdout.write(text);
  return 0;
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === "") throw new UsageError(`${flag} is required`);
  return value;
}

function integer(value: string | undefined, flag: string, min: number, max: number): number {
  const text = required(value, flag);
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new UsageError(`${flag} must be an integer from ${min} to ${max}`);
  }
  return Number(text);
}

function portOf(url: string | undefined): number {
  const port = url !== undefined && URL.canParse(url) ? new URL(url).port : "";
  if (port === "") throw new UsageError("--port is required: this node's URL in the share file names no port");
  return Number(port);
}

async function readStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
