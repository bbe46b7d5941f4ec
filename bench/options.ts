import { parseArgs } from "node:util";

/** The measured operations: mutual friend by degree band, then one each of the others. */
export const OPS = ["mf-mm", "mf-pp", "mf-mh", "mf-hh", "mci", "rec", "rec-again", "rec-hub", "profile", "rgraph"] as const;
/** One measured operation. */
export type OpId = (typeof OPS)[number];

/**
 * The living-graph measurements (issue 14), run after the read-only operations: change throughput
 * through `relgraph ingest` and through the feed, mutual friend and recommendations while changes
 * flow, and withdrawal latency on a second server instance.
 */
export const LIVING = ["ingest-changes", "feed-changes", "mf-mm-live", "rec-live", "withdraw"] as const;
/** The --only name of issue 16's protocol ratios under h2load (measurements/protocols.ts). */
export const PROTOCOLS = "protocols";
/** The --only name of issue 35's encrypted-answer measurements (measurements/private.ts). */
export const PRIVATE = "private";
/**
 * The --only name of issue 37's chain measurements (measurements/chain-backfill.ts and
 * chain-freshness.ts): `relgraph index` backfilling a generated history on anvil against `relgraph
 * ingest` of the same records, and a new block's time until a REST answer shows it.
 */
export const CHAIN = "chain";
/** One living-graph measurement. */
export type LivingId = (typeof LIVING)[number];

/**
 * How an operation is reached: the physical limit, the simplest peer, then relgraph's protocols.
 * `connect` is the Connect protocol's unary POST (binary, HTTP/1.1) sent by autocannon, the same load
 * generator as `rest`, so that e/c compares what relgraph spends; `connect-node` is the same call
 * through @connectrpc/connect-node's client over HTTP/2, whose own CPU shows in the bench column.
 */
export const VIAS = ["redis", "peer", "rest", "grpc", "connect", "connect-node"] as const;
/** One way of reaching an operation. */
export type Via = (typeof VIAS)[number];

/** Dataset sizes: small for CI, large for the figures. */
export const SIZES = {
  small: { users: 10_000, durationSeconds: 2, changeRecords: 100_000, chainTransactions: 100_000, freshnessSamples: 50 },
  large: { users: 200_000, durationSeconds: 5, changeRecords: 1_000_000, chainTransactions: 100_000, freshnessSamples: 150 },
} as const;

/** The bench's options, from argv. */
export interface BenchOptions {
  size: keyof typeof SIZES;
  users: number;
  seed: string;
  /** Seconds of each measurement (saturation, then part load). */
  durationSeconds: number;
  /** Unmeasured load before each saturation run, so JIT and connections are warm. */
  warmupSeconds: number;
  only: readonly OpId[];
  /** The living-graph measurements selected by --only (every one by default). */
  living: readonly LivingId[];
  /** Whether --only selects the protocol ratios under h2load (PROTOCOLS; by default yes). */
  protocols: boolean;
  /** Whether --only selects the encrypted-answer measurements (PRIVATE; by default yes). */
  private: boolean;
  /** Whether --only selects the chain measurements (CHAIN; by default yes). */
  chain: boolean;
  /** Transactions of the chain history the backfill indexes. */
  chainTransactions: number;
  /** Blocks timed for the chain's freshness. */
  freshnessSamples: number;
  /** Whether the private measurements include the first decryption in Chromium (--chromium). */
  chromium: boolean;
  /** Change records for the ingest and feed throughput figures. */
  changeRecords: number;
  /** Withdrawal latency trials. */
  trials: number;
  via: readonly Via[];
  /** HTTP connections and RPC calls in flight at saturation. */
  connections: number;
  /** Run relgraph under `node --cpu-prof` and write its profiles here. */
  cpuProfDir: string | null;
  resultsDir: string;
}

/** Thrown for unusable arguments; the message says which. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

export const HELP = `Usage: npm run bench -- [options]

Generates a seeded graph, loads it with \`relgraph ingest\` into a private redis-server, starts
relgraph (\`relgraph serve\`) and a minimal Fastify + node-redis peer as separate processes, and
measures every operation over redis-benchmark, the peer, REST (autocannon), gRPC (@grpc/grpc-js),
Connect (unary POSTs from autocannon) and Connect through @connectrpc/connect-node. Prints a table
and writes JSON to bench/results/<size>-<timestamp>.json. Stops every process it started.

Options:
  --size small|large   small: ${SIZES.small.users} users, ${SIZES.small.durationSeconds} s per measurement (CI);
                       large: ${SIZES.large.users} users, ${SIZES.large.durationSeconds} s (default small)
  --users N            override the number of generated users
  --seed S             dataset seed (default "bench")
  --duration S         seconds per measurement (saturation and part load each)
  --only a,b           operations: ${OPS.join(", ")};
                       living graph: ${LIVING.join(", ")};
                       ${PROTOCOLS}: issue 16's protocol ratios under h2load, when installed;
                       ${PRIVATE}: issue 35's encrypted answers beside mutualFriend, with a 2-of-3
                       key network of processes;
                       ${CHAIN}: issue 37's relgraph index, its backfill of a generated history on
                       anvil against relgraph ingest of the same records, and a new block's time
                       until a REST answer shows it (default all)
  --changes N          change records for ingest-changes and feed-changes
                       (default ${SIZES.small.changeRecords} small, ${SIZES.large.changeRecords} large)
  --trials N           withdrawal latency trials (default 30)
  --transactions N     transactions of the chain history for ${CHAIN}
                       (default ${SIZES.small.chainTransactions} small, ${SIZES.large.chainTransactions} large)
  --via a,b            paths: ${VIAS.join(", ")} (default all)
  --connections N      HTTP connections / RPC calls in flight at saturation (default 50)
  --chromium           with ${PRIVATE}: also time the first decryption in headless Chromium
                       through /demo (Debian's chromium; CHROMIUM_PATH)
  --cpu-prof DIR       run relgraph under node --cpu-prof, writing .cpuprofile files to DIR
  --results DIR        where the JSON goes (default bench/results)
  -h, --help           show this help
`;

/** Parses argv (the arguments after the script). Throws UsageError. */
export function parseOptions(argv: readonly string[]): BenchOptions | "help" {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        size: { type: "string", default: "small" },
        users: { type: "string" },
        seed: { type: "string", default: "bench" },
        duration: { type: "string" },
        only: { type: "string" },
        changes: { type: "string" },
        trials: { type: "string", default: "30" },
        transactions: { type: "string" },
        via: { type: "string" },
        connections: { type: "string", default: "50" },
        "cpu-prof": { type: "string" },
        chromium: { type: "boolean", default: false },
        results: { type: "string", default: "bench/results" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return "help";
  const size = values.size;
  if (size !== "small" && size !== "large") throw new UsageError(`--size must be small or large, got "${size}"`);
  const durationSeconds = values.duration === undefined ? SIZES[size].durationSeconds : positive("--duration", values.duration);
  return {
    size,
    users: values.users === undefined ? SIZES[size].users : Math.round(positive("--users", values.users)),
    seed: values.seed,
    durationSeconds,
    warmupSeconds: Math.min(2, durationSeconds / 4),
    ...selection(values.only),
    changeRecords: values.changes === undefined ? SIZES[size].changeRecords : Math.round(positive("--changes", values.changes)),
    trials: Math.round(positive("--trials", values.trials)),
    chainTransactions: values.transactions === undefined ? SIZES[size].chainTransactions : Math.round(positive("--transactions", values.transactions)),
    freshnessSamples: SIZES[size].freshnessSamples,
    via: list("--via", values.via, VIAS),
    connections: Math.round(positive("--connections", values.connections)),
    cpuProfDir: values["cpu-prof"] ?? null,
    chromium: values.chromium,
    resultsDir: values.results,
  };
}

/** --only names operations, living-graph measurements and the protocol ratios in one list; absent, it selects all. */
function selection(text: string | undefined): { only: OpId[]; living: LivingId[]; protocols: boolean; private: boolean; chain: boolean } {
  if (text === undefined) return { only: [...OPS], living: [...LIVING], protocols: true, private: true, chain: true };
  const items = list<OpId | LivingId | typeof PROTOCOLS | typeof PRIVATE | typeof CHAIN>("--only", text, [...OPS, ...LIVING, PROTOCOLS, PRIVATE, CHAIN]);
  return {
    only: items.filter((item): item is OpId => (OPS as readonly string[]).includes(item)),
    living: items.filter((item): item is LivingId => (LIVING as readonly string[]).includes(item)),
    protocols: items.includes(PROTOCOLS),
    private: items.includes(PRIVATE),
    chain: items.includes(CHAIN),
  };
}

function positive(name: string, text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new UsageError(`${name} must be a positive number, got "${text}"`);
  return value;
}

function list<T extends string>(name: string, text: string | undefined, allowed: readonly T[]): T[] {
  if (text === undefined) return [...allowed];
  const items = text.split(",").map((item) => item.trim());
  for (const item of items) {
    if (!allowed.includes(item as T)) throw new UsageError(`${name}: unknown "${item}"; choose from ${allowed.join(", ")}`);
  }
  return items as T[];
}
