import { parseArgs } from "node:util";
import { ConfigError, loadConfig, redactConfig, type Config } from "../../config/config.js";
import { loadDemoDataset } from "../../synthetic/demo.js";
import { IngestValidationError, ingestFiles } from "../../ingest/ingest.js";
import { createRelgraph } from "../../relgraph.js";
import { closeOnSignals } from "../../create-server.js";
import { createStore } from "../../store/index.js";
import type { CommandIo } from "../io.js";

const HELP = `Usage: relgraph serve [--port P] [--data FILE.jsonl ...]

Runs relgraph: REST (/api/v1/...), Connect, gRPC (h2c), gRPC-Web and gRPC reflection on one port.
With the embedded store (no REDIS_URL / REDIS_CLUSTER_NODES), --data files are loaded at startup,
or the bundled demo dataset when none is given. Configuration: see README.md.

Options:
  --port P          listening port (overrides PORT; default 8080)
  --data FILE       JSON Lines file to load into the embedded store (repeatable)
  -h, --help        show this help
`;

/**
 * `relgraph serve`: opens the configured store, fills the embedded one, composes relgraph
 * (relgraph.ts) and serves until SIGINT/SIGTERM. Resolves with -1 while serving.
 */
export async function runServe(argv: string[], io: CommandIo): Promise<number> {
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
    try {
      const loaded = values.data.length > 0 ? await ingestFiles(store, values.data) : await loadDemoDataset(store);
      say(`store: embedded, ${loaded.users} users from ${values.data.length > 0 ? values.data.join(", ") : "the bundled demo dataset"}`);
    } catch (err) {
      if (!(err instanceof IngestValidationError)) throw err;
      io.stderr.write(`relgraph serve: --data is invalid; nothing was loaded\n${err.errors.join("\n")}\n`);
      return 1;
    }
  } else {
    say(`store: ${store.engine}`);
  }

  let relgraph;
  try {
    relgraph = await createRelgraph(config, store, { devApiKey: embedded && config.apiKeys.length === 0 });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    await store.close();
    io.stderr.write(`relgraph serve: ${err.message}\n`);
    return 2;
  }
  for (const line of relgraph.notices) say(line);
  const { server } = relgraph;
  server.log.info({ config: redactConfig(config) }, "configuration");
  const address = await server.listen({ port: config.port, host: config.host });
  say(`relgraph listening on ${address} (REST, Connect, gRPC, gRPC-Web, reflection)`);
  say(`in a browser: ${address}/demo (the demo dApp), ${address}/docs (the API docs)`);
  closeOnSignals(server, relgraph.closeResources);
  return -1;
}

