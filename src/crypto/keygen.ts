import { access, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bytesToHex } from "@noble/hashes/utils.js";
import { G1_BASE, encodeScalar } from "./bls.js";
import { KeyNetworkError, type KeyShare, type PublicKeyNetwork } from "./key-network.js";
import { dealSecret } from "./shamir.js";

/** Options of dealKeyNetwork. */
export interface DealKeyNetworkOptions {
  /** Shares needed to decrypt (t). */
  threshold: number;
  /** Number of nodes (n). */
  nodes: number;
  /** Base URL of node i (1-based). */
  url: (index: number) => string;
}

/** A freshly dealt network: its public description and one share per node. */
export interface DealtKeyNetwork {
  network: PublicKeyNetwork;
  shares: KeyShare[];
}

/** Name of the public network file keygen writes. */
export const NETWORK_FILE = "key-network.json";

/** Name of node i's share file. */
export function shareFileName(index: number): string {
  return `node-${index}.share.json`;
}

/**
 * Deals a t-of-n network: a random secret s, node i gets sᵢ = f(i) and publishes PKᵢ = sᵢ·g1, and
 * PK = s·g1. The dealer's secret leaves this function only as PK; nothing else keeps it.
 */
export function dealKeyNetwork(options: DealKeyNetworkOptions): DealtKeyNetwork {
  const { secret, shares } = dealSecret(options.threshold, options.nodes);
  const network: PublicKeyNetwork = {
    threshold: options.threshold,
    publicKey: G1_BASE.multiply(secret).toHex(true),
    nodes: shares.map((share) => ({
      index: share.index,
      url: options.url(share.index),
      publicShare: G1_BASE.multiply(share.value).toHex(true),
    })),
  };
  return {
    network,
    shares: shares.map((share) => ({ index: share.index, secretShare: bytesToHex(encodeScalar(share.value)), network })),
  };
}

/**
 * Writes key-network.json and one node-<i>.share.json per node into `dir` (created with mode 0700).
 * Share files get mode 0600. Nothing is overwritten: an existing file of the same name aborts the
 * write before any file is created, because replacing a live network's shares would lock its data away.
 * Returns the paths written.
 */
export async function writeKeyNetwork(dir: string, dealt: DealtKeyNetwork): Promise<string[]> {
  const files = [
    { path: join(dir, NETWORK_FILE), body: dealt.network, mode: 0o644 },
    ...dealt.shares.map((share) => ({ path: join(dir, shareFileName(share.index)), body: share, mode: 0o600 })),
  ];
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (const file of files) {
    const exists = await access(file.path).then(
      () => true,
      () => false,
    );
    if (exists) throw new KeyNetworkError(`${file.path} already exists; choose an empty --out directory`);
  }
  for (const file of files) {
    await writeFile(file.path, `${JSON.stringify(file.body, null, 2)}\n`, { mode: file.mode, flag: "wx" });
  }
  return files.map((file) => file.path);
}
