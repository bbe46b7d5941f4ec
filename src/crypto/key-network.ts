import { bytesToHex } from "@noble/hashes/utils.js";
import { EncodingError, G1_BASE, decodeG1, decodeScalar, encodeScalar } from "./bls.js";
import { MAX_NODES, interpolatePoints } from "./shamir.js";

/**
 * The public description of a key network, and a node's secret share file. The public part is what
 * `relgraph keygen` writes to key-network.json, what the server publishes at GET /key-network, and
 * what clients check every share against. JSON shape:
 *
 *   { "threshold": 2,
 *     "publicKey": "<96 hex: compressed G1 PK = s·g1>",
 *     "nodes": [ { "index": 1, "url": "http://127.0.0.1:7401", "publicShare": "<96 hex: sᵢ·g1>" }, … ] }
 *
 * A node `url` may be relative (the development network's "/dev-key-nodes/1"); clients resolve it
 * against the server URL they fetched the network from.
 */

/** One key node as the public sees it. */
export interface KeyNodeInfo {
  /** The node's share index i, from 1 to 255. */
  index: number;
  /** Base URL of the node; its share endpoint is `<url>/v1/decryption-share`. May be relative. */
  url: string;
  /** Hex compressed G1 point PKᵢ = sᵢ·g1. */
  publicShare: string;
}

/** A key network's public parameters. */
export interface PublicKeyNetwork {
  /** How many valid shares decrypt (t). */
  threshold: number;
  /** Hex compressed G1 network key PK = s·g1. */
  publicKey: string;
  /** The nodes, ascending by index. */
  nodes: KeyNodeInfo[];
}

/** A node's share, as in `node-<i>.share.json` (a bearer secret: file mode 0600, never logged). */
export interface KeyShare {
  index: number;
  /** Hex 32-byte big-endian scalar sᵢ. */
  secretShare: string;
  /** The public network the share belongs to. */
  network: PublicKeyNetwork;
}

/** Thrown when a key network or share does not parse, or its parts are inconsistent. */
export class KeyNetworkError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "KeyNetworkError";
  }
}

/**
 * Validates a public key network: well-formed points, distinct indices, and every public share on one
 * polynomial of degree t−1 whose value at 0 is PK. That last check means a share that verifies
 * against its PKᵢ can never combine into a key that does not match PK.
 */
export function parsePublicKeyNetwork(value: unknown): PublicKeyNetwork {
  const fail = (why: string) => new KeyNetworkError(`invalid key network: ${why}`);
  if (!isObject(value)) throw fail("expected a JSON object");
  const { threshold, publicKey, nodes } = value;
  if (!Array.isArray(nodes) || nodes.length < 1 || nodes.length > MAX_NODES) {
    throw fail(`nodes must be a list of 1 to ${MAX_NODES} nodes`);
  }
  if (typeof threshold !== "number" || !Number.isInteger(threshold) || threshold < 1 || threshold > nodes.length) {
    throw fail("threshold must be an integer from 1 to the number of nodes");
  }
  const pk = point(publicKey, "publicKey", fail);
  const parsed = nodes.map((node: unknown, k) => {
    if (!isObject(node)) throw fail(`nodes[${k}] must be an object`);
    const { index, url, publicShare } = node;
    if (typeof index !== "number" || !Number.isInteger(index) || index < 1 || index > MAX_NODES) {
      throw fail(`nodes[${k}].index must be an integer from 1 to ${MAX_NODES}`);
    }
    if (typeof url !== "string" || url.trim() === "") throw fail(`nodes[${k}].url must be a non-empty string`);
    return { index, url, publicShare: point(publicShare, `nodes[${k}].publicShare`, fail) };
  });
  parsed.sort((a, b) => a.index - b.index);
  if (new Set(parsed.map((n) => n.index)).size !== parsed.length) throw fail("node indices must be distinct");

  const basis = parsed.slice(0, threshold).map((n) => ({ index: n.index, point: n.publicShare }));
  if (!interpolatePoints(basis, 0).equals(pk)) throw fail("the public shares do not interpolate to publicKey");
  for (const node of parsed.slice(threshold)) {
    if (!interpolatePoints(basis, node.index).equals(node.publicShare)) {
      throw fail(`node ${node.index}'s public share is not on the other shares' polynomial`);
    }
  }
  return {
    threshold,
    publicKey: pk.toHex(true),
    nodes: parsed.map((n) => ({ index: n.index, url: n.url, publicShare: n.publicShare.toHex(true) })),
  };
}

/** Validates a share file: a valid network, and sᵢ·g1 equal to the network's PKᵢ for that index. */
export function parseKeyShare(value: unknown): KeyShare {
  if (!isObject(value)) throw new KeyNetworkError("invalid key share: expected a JSON object");
  const network = parsePublicKeyNetwork(value.network);
  const node = network.nodes.find((n) => n.index === value.index);
  if (node === undefined) throw new KeyNetworkError("invalid key share: index is not a node of its network");
  let secret: bigint;
  try {
    if (typeof value.secretShare !== "string") throw new EncodingError("secretShare must be a hex string");
    secret = decodeScalar(value.secretShare, "secretShare");
  } catch (error) {
    // The message never includes the value: it is a secret.
    throw new KeyNetworkError(`invalid key share: ${(error as Error).message}`);
  }
  if (G1_BASE.multiply(secret).toHex(true) !== node.publicShare) {
    throw new KeyNetworkError(`invalid key share: secretShare does not match node ${node.index}'s public share`);
  }
  return { index: node.index, secretShare: bytesToHex(encodeScalar(secret)), network };
}

/** A node's absolute base URL; relative node URLs are resolved against the server's URL. */
export function resolveNodeUrl(node: KeyNodeInfo, serverUrl?: string): string {
  try {
    return new URL(node.url, serverUrl).toString();
  } catch {
    throw new KeyNetworkError(
      `key node ${node.index}'s url "${node.url}" is not absolute and there is no server URL to resolve it against`,
    );
  }
}

function point(value: unknown, what: string, fail: (why: string) => KeyNetworkError) {
  if (typeof value !== "string") throw fail(`${what} must be a hex string`);
  try {
    return decodeG1(value, what);
  } catch (error) {
    throw fail((error as Error).message);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
