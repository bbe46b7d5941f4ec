import { addressAssetsKey, userSetKey } from "../../src/store/redis/keys.js";
import type { Dataset, PairBand, UserPair } from "../workload/dataset.js";
import type { OpId, Via } from "../options.js";
import type { RpcName, RpcRequest } from "../load/rpc-clients.js";
import type { Authorization } from "../workload/siwe-auth.js";

/** The page size every paged query asks for ("20 users hydrated"). */
export const PAGE_SIZE = 20;
/** Users "rec-again" cycles through. */
const REPEATED_RECOMMEND_USERS = 50;
/** Calls in flight for Profile and Relationship graph: their encryption queue saturates long before 50. */
const ENCRYPTED_CONCURRENCY = 8;

/** One operation, ready to send over every path. */
export interface OpPlan {
  id: OpId;
  title: string;
  /** The paths this operation can be measured over. */
  vias: readonly Via[];
  /** REST paths (with query), one per sampled query. */
  paths: string[];
  rpc: { name: RpcName; requests: RpcRequest[] };
  /** The Redis command the query reduces to, per sampled query: for redis-benchmark and the peer. */
  redisCommands: string[][] | null;
  /** Items each answer should hold, when the bench knows it from the records. */
  expected: number[] | null;
  /** Calls in flight at saturation; null uses --connections. */
  concurrency: number | null;
  /**
   * Whether every path starts from empty relgraph caches: where what relgraph keeps decides the
   * figure, the path measured first would otherwise warm them for the paths after it.
   */
  coldStart: boolean;
  /** What was sampled, for the report. */
  sample: string;
}

/** What ops need beyond the dataset. */
export interface OpContext {
  dataset: Dataset;
  /** relationId → the UserId relgraph assigned at ingestion. */
  userIds: Map<string, number>;
  authorizations: { profile: Authorization[]; relationshipGraph: Authorization[] };
}

const MUTUAL_FRIEND_BANDS: Record<"mf-mm" | "mf-pp" | "mf-mh" | "mf-hh", { band: PairBand; title: string }> = {
  "mf-mm": { band: "median-median", title: "Mutual friend, median × median" },
  "mf-pp": { band: "p99-p99", title: "Mutual friend, p99 × p99" },
  "mf-mh": { band: "median-hub", title: "Mutual friend, median × hub" },
  "mf-hh": { band: "hub-hub", title: "Mutual friend, hub × hub" },
};

const ALL_VIAS: readonly Via[] = ["redis", "peer", "rest", "grpc", "connect", "connect-node"];
const RELGRAPH_VIAS: readonly Via[] = ["rest", "grpc", "connect", "connect-node"];

/** Builds the plan of one operation from the sampled dataset. */
export function planOp(id: OpId, { dataset, userIds, authorizations }: OpContext): OpPlan {
  const idOf = (relationId: string) => {
    const userId = userIds.get(relationId);
    if (userId === undefined) throw new Error(`relgraph has no UserId for ${relationId}: was the dataset ingested?`);
    return userId;
  };
  switch (id) {
    case "mf-mm":
    case "mf-pp":
    case "mf-mh":
    case "mf-hh": {
      const { band, title } = MUTUAL_FRIEND_BANDS[id];
      const pairs = dataset.pairs[band];
      return {
        id,
        title,
        vias: ALL_VIAS,
        paths: pairs.map((p) => `/api/v1/mutualFriend?address=${p.a.address},${p.b.address}&limit=${PAGE_SIZE}`),
        rpc: { name: "mutualFriend", requests: pairs.map((p) => ({ address: [p.a.address, p.b.address], limit: PAGE_SIZE })) },
        redisCommands: pairs.map((p) => ["SINTER", userSetKey("friends", idOf(p.a.relationId)), userSetKey("friends", idOf(p.b.relationId))]),
        expected: pairs.map((p) => Math.min(PAGE_SIZE, p.mutual)),
        concurrency: null,
        coldStart: false,
        sample: describePairs(pairs),
      };
    }
    case "mci": {
      const pairs = dataset.contractPairs;
      const mean = pairs.reduce((sum, p) => sum + p.common, 0) / Math.max(1, pairs.length);
      return {
        id,
        title: "Mutual contract interaction",
        vias: ALL_VIAS,
        paths: pairs.map((p) => `/api/v1/mutualContractInteraction?address=${p.a},${p.b}`),
        rpc: { name: "mutualContractInteraction", requests: pairs.map((p) => ({ address: [p.a, p.b] })) },
        redisCommands: pairs.map((p) => ["SINTER", addressAssetsKey("contracts", p.a), addressAssetsKey("contracts", p.b)]),
        expected: pairs.map((p) => p.common),
        concurrency: null,
        coldStart: false,
        sample: `${pairs.length} address pairs with ≥ 2 contracts each; mean ${mean.toFixed(1)} contracts in common`,
      };
    }
    case "rec":
    case "rec-again":
    case "rec-hub": {
      // "rec" asks as many different users as a run makes calls, as a service asked by many people is;
      // "rec-again" asks the same few again and again (pages re-read, feeds refreshed): what relgraph
      // keeps until the data changes then serves most of each call. "rec-hub" asks the best-connected
      // users, whose first hop RECOMMEND_FIRST_HOP_CAP bounds. Each starts every path from empty
      // caches (coldStart), then warms them for the warm-up's few seconds.
      const all = id === "rec-hub" ? dataset.hubUsers : dataset.recommendUsers;
      const users = id === "rec-again" ? all.slice(0, REPEATED_RECOMMEND_USERS) : all;
      const band = id === "rec-hub" ? dataset.bands.hub : dataset.bands.median;
      const titles = {
        rec: "Multi-dimensional recommendation, median user",
        "rec-again": "Multi-dimensional recommendation, the same median users again",
        "rec-hub": "Multi-dimensional recommendation, hub user",
      };
      return {
        id,
        title: titles[id],
        vias: RELGRAPH_VIAS,
        paths: users.map((u) => `/api/v1/multi-dimensional-recommendation?address=${u.address}&limit=${PAGE_SIZE}`),
        rpc: { name: "multiDimensionalRecommendation", requests: users.map((u) => ({ address: u.address, limit: PAGE_SIZE })) },
        redisCommands: null,
        expected: null,
        concurrency: null,
        coldStart: true,
        sample: `${users.length} ${id === "rec-hub" ? "hub" : "median"}-band users (degree ${band.minDegree}–${band.maxDegree}), first page${id === "rec-again" ? ", each asked again and again" : ""}`,
      };
    }
    case "profile":
    case "rgraph": {
      const operation = id === "profile" ? "profile" : "relationshipGraph";
      const auths = authorizations[operation];
      const wallets = dataset.wallets;
      const query = (i: number) => {
        const { sig, message } = auths[i]!;
        const limit = id === "rgraph" ? `&limit=${PAGE_SIZE}` : "";
        return `address=${wallets[i]!.address}&sig=${sig}&message=${encodeURIComponent(message)}${limit}`;
      };
      return {
        id,
        title: id === "profile" ? "Profile (SIWE + encryption)" : "Relationship graph (SIWE + encryption)",
        vias: RELGRAPH_VIAS,
        paths: wallets.map((_, i) => `/api/v1/${operation}?${query(i)}`),
        rpc: {
          name: operation,
          requests: wallets.map((w, i) => ({
            address: w.address,
            sig: auths[i]!.sig,
            message: auths[i]!.message,
            ...(id === "rgraph" ? { limit: PAGE_SIZE } : {}),
          })),
        },
        redisCommands: null,
        // Encrypted: one EncryptedData per answer.
        expected: wallets.map(() => 1),
        concurrency: ENCRYPTED_CONCURRENCY,
        coldStart: false,
        sample: `${wallets.length} bench-wallet users (${wallets[0]?.degree ?? 0} friends each), one SIWE authorization each, reused`,
      };
    }
  }
}

function describePairs(pairs: readonly UserPair[]): string {
  if (pairs.length === 0) return "no pairs";
  const degrees = pairs.flatMap((p) => [p.a.degree, p.b.degree]);
  const full = pairs.filter((p) => p.mutual >= PAGE_SIZE).length;
  const mean = pairs.reduce((sum, p) => sum + p.mutual, 0) / pairs.length;
  return (
    `${pairs.length} pairs, degrees ${Math.min(...degrees)}–${Math.max(...degrees)}; ` +
    `mutual friends mean ${mean.toFixed(1)}, max ${Math.max(...pairs.map((p) => p.mutual))}; ${full}/${pairs.length} pairs fill a page of ${PAGE_SIZE}`
  );
}
