/** An undirected graph in compressed sparse rows: each row sorted ascending and free of repeats. */
export interface Adjacency {
  /** Number of vertices. */
  size: number;
  neighbors(u: number): Uint32Array;
  degree(u: number): number;
}

/**
 * Builds the symmetric adjacency of the edge list from[i]–to[i] over vertices 0..n−1, dropping
 * repeated edges. Typed arrays throughout: the benchmark's graphs have millions of edges.
 */
export function buildAdjacency(n: number, from: Uint32Array, to: Uint32Array): Adjacency {
  const start = new Uint32Array(n + 1);
  for (let e = 0; e < from.length; e++) {
    start[from[e]! + 1]!++;
    start[to[e]! + 1]!++;
  }
  for (let u = 1; u <= n; u++) start[u]! += start[u - 1]!;
  const cells = new Uint32Array(start[n]!);
  const fill = start.slice(0, n);
  for (let e = 0; e < from.length; e++) {
    const a = from[e]!;
    const b = to[e]!;
    cells[fill[a]!++] = b;
    cells[fill[b]!++] = a;
  }
  // Sort each row and compact it in place, dropping repeats; writes never pass reads.
  const offsets = new Uint32Array(n + 1);
  let write = 0;
  for (let u = 0; u < n; u++) {
    offsets[u] = write;
    let previous = -1;
    for (const v of cells.subarray(start[u]!, start[u + 1]!).sort()) {
      if (v !== previous) cells[write++] = v;
      previous = v;
    }
  }
  offsets[n] = write;
  return {
    size: n,
    neighbors: (u) => cells.subarray(offsets[u]!, offsets[u + 1]!),
    degree: (u) => offsets[u + 1]! - offsets[u]!,
  };
}
