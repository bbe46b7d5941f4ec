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
