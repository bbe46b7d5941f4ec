import type { KeyShare, PublicKeyNetwork } from "./key-network.js";
import { dealKeyNetwork } from "./keygen.js";

/**
 * FOR DEVELOPMENT ONLY. A 2-of-3 key network dealt in memory when `relgraph serve` has no key
 * configuration, with its three nodes mounted inside the server itself. All three shares live in one
 * process, so whoever controls that process can decrypt everything: it demonstrates the protocol end
 * to end, and protects nothing. Production runs `relgraph keygen` and separate `relgraph keynode`s.
 */

/** Node i's mount point inside the server; also its (relative) URL in the published network. */
export function devKeyNodePrefix(index: number): string {
  return `/dev-key-nodes/${index}`;
}

/** The in-process development network. */
export interface DevKeyNetwork {
  /** Publish at GET /key-network. Node URLs are relative, resolved by clients against the server URL. */
  network: PublicKeyNetwork;
  /** Mount each with `app.register(keyNodeRoutes, { prefix, share, verifier })`. */
  nodes: { prefix: string; share: KeyShare }[];
}

/** Deals a fresh 2-of-3 development network; nothing is written to disk. */
export function createDevKeyNetwork(): DevKeyNetwork {
  const { network, shares } = dealKeyNetwork({ threshold: 2, nodes: 3, url: devKeyNodePrefix });
  return { network, nodes: shares.map((share) => ({ prefix: devKeyNodePrefix(share.index), share })) };
}
