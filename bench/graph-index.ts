/** An undirected graph in compressed sparse rows, each row sorted and free of repeats. */
export interface Csr {
  size: number;
  neighbors(u: number): Uint32Array;
  degree(u: number): number;
}

/** Builds the symmetric adjacency of an edge list (from[i]–to[i]). */
export function buildCsr(n: number, from: Uint32Array, to: Uint32Array): Csr {
  const start = new Uint32Array(n + 1);
  for (let e = 0; e < from.length; e++) {
    start[from[e]! + 1]!++;
    start[to[e]! + 1]!++;
  }
  for (let u = 1; u <= n; u++) start[u]! += start[u - 1]!;
  const cells = new Uint32Array(start[n]!);
  const fill = start.slice(0, n);
  for (let e = 0; e < from.length; e++) {
    cells[fill[from[e]!]!++] = to[e]!;
    cells[fill[to[e]!]!++] = from[e]!;
  }
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

/** Size of the intersection of two sorted rows. */
export function commonCount(x: Uint32Array, y: Uint32Array): number {
  let i = 0;
  let j = 0;
  let count = 0;
  while (i < x.length && j < y.length) {
    if (x[i]! < y[j]!) i++;
    else if (x[i]! > y[j]!) j++;
    else {
      count++;
      i++;
      j++;
    }
  }
  return count;
}
