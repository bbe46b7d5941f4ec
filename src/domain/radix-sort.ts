/**
 * Working arrays of radixSort, kept by their owner from call to call and grown (to a power of two)
 * when a sort is longer than any before: allocated per call, typed arrays outside the heap cost a
 * recommendation more than the sorting itself.
 */
export class RadixScratch {
  /** Positions to sort, and the key of each: fill the first `length` of both, then call radixSort. */
  order = new Int32Array(0);
  keys = new Uint32Array(0);
  /** Where a pass moves them to. */
  orderSwap = new Int32Array(0);
  keysSwap = new Uint32Array(0);
  readonly digits = new Int32Array(RADIX);

  /** Makes room for `length` entries; what order and keys held is lost when they grow. */
  reserve(length: number): void {
    if (this.order.length >= length) return;
    const size = 2 ** Math.max(10, Math.ceil(Math.log2(length)));
    this.order = new Int32Array(size);
    this.keys = new Uint32Array(size);
    this.orderSwap = new Int32Array(size);
    this.keysSwap = new Uint32Array(size);
  }
}

/** Buckets of one pass: a byte. */
const RADIX = 256;

/** Sorts of up to this many entries are insertion sorts. */
const SHORT = 48;

/**
 * Sorts the first `length` of `scratch.order` by ascending `scratch.keys` (32-bit), stably: a
 * least-significant-byte radix sort, which neither compares nor calls out, and skips a pass whose
 * byte is the same in every key (small keys take one or two passes); a short sort is an insertion sort. The result is in
 * `scratch.order` and `scratch.keys` (which it may swap with their second arrays).
 */
export function radixSort(scratch: RadixScratch, length: number): void {
  let { order, keys, orderSwap, keysSwap } = scratch;
  if (length <= SHORT) {
    // A few entries: an insertion sort (stable too) costs less than one pass's buckets.
    for (let i = 1; i < length; i++) {
      const key = keys[i]!;
      const at = order[i]!;
      let j = i - 1;
      for (; j >= 0 && keys[j]! > key; j--) {
        keys[j + 1] = keys[j]!;
        order[j + 1] = order[j]!;
      }
      keys[j + 1] = key;
      order[j + 1] = at;
    }
    return;
  }
  const digits = scratch.digits;
  for (let shift = 0; shift < 32; shift += 8) {
    digits.fill(0);
    for (let i = 0; i < length; i++) digits[(keys[i]! >>> shift) & (RADIX - 1)]!++;
    if (digits[(keys[0]! >>> shift) & (RADIX - 1)] === length) continue;
    for (let digit = 0, total = 0; digit < RADIX; digit++) {
      const count = digits[digit]!;
      digits[digit] = total;
      total += count;
    }
    for (let i = 0; i < length; i++) {
      const key = keys[i]!;
      const to = digits[(key >>> shift) & (RADIX - 1)]!++;
      keysSwap[to] = key;
      orderSwap[to] = order[i]!;
    }
    [order, orderSwap] = [orderSwap, order];
    [keys, keysSwap] = [keysSwap, keys];
  }
  scratch.order = order;
  scratch.keys = keys;
  scratch.orderSwap = orderSwap;
  scratch.keysSwap = keysSwap;
}
