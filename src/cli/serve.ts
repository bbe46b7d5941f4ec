import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { createApiKeyAuthenticator } from "../auth/api-keys.js";
import { createRateLimiter } from "../auth/rate-limit.js";
import { createRequestGate } from "../auth/request-gate.js";
import { createSiweVerifier } from "../auth/siwe.js";
import { ConfigError, loadConfig, redactConfig, type Config } from "../config/config.js";
import { createDevKeyNetwork } from "../crypto/dev-network.js";
import { createThresholdEncryptor, type ResultEncryptor } from "../crypto/encryptor.js";
import { readPublicKeyNetwork, type KeyShare, type PublicKeyNetwork } from "../crypto/key-network.js";
import { createLitEncryptor } from "../crypto/lit-encryptor.js";
import { createCursorCodec } from "../domain/cursor.js";
import { GraphQueries } from "../graph/queries.js";
import { loadDemoDataset } from "../ingest/demo.js";
import { ingestFiles } from "../ingest/ingest.js";
import { createRelationService } from "../rpc/relation-service.js";
import { closeOnSignals, createServer } from "../server.js";
import { createStore } from "../store/index.js";

/** The development ApiKey: only ever accepted with the embedded store and no API_KEYS configured. */
export const DEV_API_KEY = "relgraph-dev-key";

const HELP = `Usage: relgraph serve [--port P] [--data FILE.jsonl ...]

Runs relgraph: REST (/api/v1/...), Connect, gRPC (h2c), gRPC-Web and gRPC reflection on one port.
With the embedded store (no REDIS_URL / REDIS_CLUSTER_NODES), --data files are loaded at startup,
or the bundled demo dataset when none is given. Configuration: see README.md.

Options:
  --port P          listening port (overrides PORT; default 8080)
  --data FILE       JSON Lines file to load into the embedded store (repeatable)
  -h, --help        show this help
`;

/** The streams serve reports to. */
export interface ServeIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/**
 * `relgraph serve`: the composition root. Builds the store, authorization, encryption, queries and
 * service from the configuration, and serves until SIGINT/SIGTERM. Resolves with -1 while serving.
 */
export async function runServe(argv: string[], io: ServeIo): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        port: { type: "string" },
        data: { type: "string", multiple: true, default: [] },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (err) {
    io.stderr.write(`relgraph serve: ${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (values.help) {
    io.stdout.write(HELP);
    return 0;
  }
  let config: Readonly<Config>;
  try {
    config = loadConfig(values.port === undefined ? process.env : { ...process.env, PORT: values.port });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.stderr.write(`relgraph serve: ${err.message}\n`);
    return 2;
  }

  const store = await createStore(config);
  const say = (line: string) => io.stdout.write(`${line}\n`);
  const embedded = store.engine === "memory";
  if (!embedded && values.data.length > 0) {
    io.stderr.write("relgraph serve: --data loads the embedded store only; load Redis with `relgraph ingest`\n");
    await store.close();
    return 2;
  }
  if (embedded) {
    const loaded = values.data.length > 0 ? await ingestFiles(store, values.data) : await loadDemoDataset(store);
    say(`store: embedded, ${loaded.users} users from ${values.data.length > 0 ? values.data.join(", ") : "the bundled demo dataset"}`);
  } else {
    say(`store: ${store.engine}`);
  }

  const staticKeys = [...config.apiKeys];
  if (embedded && staticKeys.length === 0) {
    staticKeys.push(DEV_API_KEY);
    say(`development ApiKey: ${DEV_API_KEY}   (embedded store only; set API_KEYS to choose keys)`);
  }
  const gate = createRequestGate(
    createApiKeyAuthenticator({ store, staticKeys }),
    createRateLimiter({ perSecond: config.rateLimitPerSecond, burst: config.rateLimitBurst }),
  );
  const verifier = createSiweVerifier({
    domains: config.siweDomains,
    maxAgeSeconds: config.siweMaxAgeSeconds,
    ethRpcUrl: config.ethRpcUrl,
  });

  const encryption = await createEncryption(config, say);
  const cursorSecret = config.cursorSecret ?? randomBytes(32);
  const queries = new GraphQueries(store, createCursorCodec(cursorSecret));
  const service = createRelationService({ queries, authorizer: verifier, encryptor: encryption.encryptor });

  const server = await createServer(
    { service, gate, store, verifier, keyNetwork: encryption.network, keyNodes: encryption.keyNodes },
    { logLevel: config.logLevel },
  );
  server.log.info({ config: redactConfig(config) }, "configuration");
  const address = await server.listen({ port: config.port, host: config.host });
  say(`relgraph listening on ${address} (REST, Connect, gRPC, gRPC-Web, reflection)`);
  closeOnSignals(server, async () => {
    await encryption.encryptor.close();
    await store.close();
  });
  return -1;
}

/** The encryption backend chosen by configuration, and the key network the server publishes. */
async function createEncryption(config: Readonly<Config>, say: (line: string) => void) {
  let encryptor: ResultEncryptor;
  let network: PublicKeyNetwork | null = null;
  let keyNodes: { prefix: string; share: KeyShare }[] = [];
  if (config.encryptionBackend === "lit") {
    encryptor = await createLitEncryptor({ network: config.litNetwork });
    say(`encryption: Lit Protocol network ${config.litNetwork}`);
  } else if (config.keyNetworkFile) {
    network = await readPublicKeyNetwork(config.keyNetworkFile);
    encryptor = createThresholdEncryptor(network);
    say(`encryption: ${network.threshold}-of-${network.nodes.length} key network from ${config.keyNetworkFile}`);
  } else {
    const dev = createDevKeyNetwork();
    network = dev.network;
    keyNodes = dev.nodes;
    encryptor = createThresholdEncryptor(network);
    say("encryption: DEVELOPMENT 2-of-3 key network running in-process (set KEY_NETWORK_FILE for production)");
  }
  return { encryptor, network, keyNodes };
}
