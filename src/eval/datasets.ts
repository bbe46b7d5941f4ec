import { gunzipSync } from "node:zlib";

/** A graph read from a public dataset: nodes 0..nodes-1 and its edges as (source, target) pairs. */
export interface EdgeList {
  nodes: number;
  directed: boolean;
  /** sources[i] → targets[i]; an undirected edge is listed once. */
  sources: Uint32Array;
  targets: Uint32Array;
}

/** Thrown when a dataset file is not in the format it claims, or is cut short. */
export class DatasetFormatError extends Error {
  override name = "DatasetFormatError";
}

/** The graph-tool magic string "⛾ gt" in UTF-8. */
const GT_MAGIC = Buffer.from([0xe2, 0x9b, 0xbe, 0x20, 0x67, 0x74]);

/** Whether `bytes` (gunzipped or not) hold a graph-tool .gt file. */
export function isGraphTool(bytes: Uint8Array): boolean {
  return Buffer.from(maybeGunzip(bytes).subarray(0, GT_MAGIC.length)).equals(GT_MAGIC);
}

/**
 * Reads the topology of a graph-tool binary file (.gt, or .gt.gz), as documented at
 * https://graph-tool.skewed.de/static/doc/gt_format.html: header, comment, directedness, the node
 * count, then each node's out-neighbours in the narrowest unsigned width that holds a node index.
 * Property maps follow and are not needed here, so they are not read.
 */
export function readGraphTool(file: Uint8Array): EdgeList {
  const bytes = maybeGunzip(file);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (!Buffer.from(bytes.subarray(0, GT_MAGIC.length)).equals(GT_MAGIC)) throw new DatasetFormatError("not a graph-tool .gt file");
  let at = GT_MAGIC.length + 1; // the version byte
  const little = bytes[at++] === 0;
  const need = (n: number) => {
    if (at + n > bytes.length) throw new DatasetFormatError("the .gt file is cut short");
  };
  const u64 = (): number => {
    need(8);
    const value = view.getBigUint64(at, little);
    at += 8;
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new DatasetFormatError("the .gt file holds an impossible count");
    return Number(value);
  };
  const commentLength = u64();
  at += commentLength; // the comment, which says nothing the graph needs
  need(1);
  const directed = bytes[at++] !== 0;
  const nodes = u64();
  const width = nodes <= 2 ** 8 ? 1 : nodes <= 2 ** 16 ? 2 : nodes <= 2 ** 32 ? 4 : 8;
  const readIndex = (): number => {
    need(width);
    const value = width === 1 ? view.getUint8(at) : width === 2 ? view.getUint16(at, little) : width === 4 ? view.getUint32(at, little) : Number(view.getBigUint64(at, little));
    at += width;
    return value;
  };
  const sources: number[] = [];
  const targets: number[] = [];
  for (let node = 0; node < nodes; node++) {
    const degree = u64();
    for (let i = 0; i < degree; i++) {
      const target = readIndex();
      if (target >= nodes) throw new DatasetFormatError(`node ${node} has a neighbour ${target} beyond the ${nodes} nodes`);
      sources.push(node);
      targets.push(target);
    }
  }
  return { nodes, directed, sources: Uint32Array.from(sources), targets: Uint32Array.from(targets) };
}

/**
 * Reads the follow lists of a nostr-social-graph binary snapshot (data/socialGraph.bin of the npm
 * package, format version 2): every integer is an unsigned LEB128 varint; a table of (32-byte
 * public key, id), then per owner (owner id, list timestamp, count, followed ids), then mute lists
 * in the same layout, which are not social ties and are skipped. Nodes are renumbered densely in
 * the order of the key table.
 */
export function readNostrSocialGraph(bytes: Uint8Array): EdgeList {
  let at = 0;
  const varint = (): number => {
    let value = 0;
    for (let scale = 1; ; scale *= 128) {
      if (at >= bytes.length) throw new DatasetFormatError("the social graph file is cut short");
      const byte = bytes[at++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
    }
  };
  const version = varint();
  if (version !== 2) throw new DatasetFormatError(`social graph format version ${version} is not supported (2 is)`);
  const ids = varint();
  const dense = new Map<number, number>();
  for (let i = 0; i < ids; i++) {
    at += 32; // the public key
    dense.set(varint(), i);
  }
  const node = (id: number): number => {
    const index = dense.get(id);
    if (index === undefined) throw new DatasetFormatError(`the social graph refers to id ${id}, which is not in its key table`);
    return index;
  };
  const sources: number[] = [];
  const targets: number[] = [];
  const owners = varint();
  for (let i = 0; i < owners; i++) {
    const owner = node(varint());
    varint(); // when the follow list was published
    const count = varint();
    for (let j = 0; j < count; j++) {
      sources.push(owner);
      targets.push(node(varint()));
    }
  }
  return { nodes: ids, directed: true, sources: Uint32Array.from(sources), targets: Uint32Array.from(targets) };
}

function maybeGunzip(bytes: Uint8Array): Uint8Array {
  return bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes;
}

/**
 * relgraph JSON Lines for a dataset: one user per node that has an edge (relationId `n<index>`, an
 * address derived from the index so that every user can be queried), then either one friend record
 * per unordered pair (directions and duplicates merged, self-loops dropped) or one follow record per
 * distinct directed pair.
 */
export function* toJsonLines(graph: EdgeList, as: "friends" | "follows", name: string): Generator<string> {
  const used = new Uint8Array(graph.nodes);
  for (let i = 0; i < graph.sources.length; i++) {
    if (graph.sources[i] === graph.targets[i]) continue;
    used[graph.sources[i]!] = 1;
    used[graph.targets[i]!] = 1;
  }
  for (let node = 0; node < graph.nodes; node++) {
    if (used[node]) {
      yield JSON.stringify({ type: "user", relationId: `n${node}`, name: `${name} ${node}`, avatar: "", addresses: [datasetAddress(node)] });
    }
  }
  const seen = new Set<number>();
  for (let i = 0; i < graph.sources.length; i++) {
    let a = graph.sources[i]!;
    let b = graph.targets[i]!;
    if (a === b) continue;
    if (as === "friends" && a > b) [a, b] = [b, a];
    const key = a * graph.nodes + b;
    if (seen.has(key)) continue;
    seen.add(key);
    yield as === "friends"
      ? JSON.stringify({ type: "friend", a: `n${a}`, b: `n${b}`, description: name })
      : JSON.stringify({ type: "follow", from: `n${a}`, to: `n${b}` });
  }
}

/** The address the converter gives node `index`: 0x and the index in 40 hex digits. */
export function datasetAddress(index: number): string {
  return `0x${index.toString(16).padStart(40, "0")}`;
}
