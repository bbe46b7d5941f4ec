import type { GenerateOptions } from "./generate.js";
import { ingestRecords, type IngestOptions, type IngestResult, type IngestTarget } from "../ingest/ingest.js";

/**
 * The bundled demo dataset: `relgraph generate` with no options writes the same records. Its demo
 * users are u1 … u10 (Alice … Judy); u1 is social username "alice", game id "76561198000000001",
 * first address demoWallet(1).address.
 */
export const DEMO_DATASET: Readonly<GenerateOptions> = Object.freeze({ users: 3000, seed: "relgraph-demo", meanDegree: 12 });

/**
 * Loads the demo dataset into a store, generating it in memory (no JSON round trip); used by
 * `relgraph serve` when the embedded store gets no --data files.
 */
export async function loadDemoDataset(store: IngestTarget, options: IngestOptions = {}): Promise<IngestResult> {
  // The generator loads ethers (the demo wallets' addresses): only the commands that generate pay
  // for it, not `relgraph ingest`, which reads DEMO_DATASET for its help text.
  const { generateRecords } = await import("./generate.js");
  return ingestRecords(store, generateRecords(DEMO_DATASET), { ...options, source: "demo dataset" });
}
