/**
 * An append-only column of numbers in a typed array. Ingestion keeps one entry per record for
 * millions of records; a plain array of numbers would cost twice to four times as much.
 */
export class NumberColumn<Data extends Float64Array | Uint32Array | Int32Array | Uint8Array = Float64Array | Uint32Array | Int32Array | Uint8Array> {
  private data: Data;
  length = 0;

  constructor(private readonly make: (size: number) => Data) {
    this.data = make(1024);
  }

  push(value: number): void {
    if (this.length === this.data.length) this.grow(this.length * 2);
    this.data[this.length++] = value;
  }

  get(index: number): number {
    return this.data[index] ?? 0;
  }

  set(index: number, value: number): void {
    if (index >= this.data.length) this.grow(Math.max(index + 1, this.data.length * 2));
    if (index >= this.length) this.length = index + 1;
    this.data[index] = value;
  }

  /** The filled part, without copying. */
  view(): Data {
    return this.data.subarray(0, this.length) as Data;
  }

  private grow(size: number): void {
    const next = this.make(size);
    next.set(this.data);
    this.data = next;
  }
}

/** A column of 32-bit unsigned integers. */
export function uint32Column(): NumberColumn<Uint32Array> {
  return new NumberColumn((size) => new Uint32Array(size));
}

/** A column of bytes. */
export function uint8Column(): NumberColumn<Uint8Array> {
  return new NumberColumn((size) => new Uint8Array(size));
}

/** A column of 32-bit signed integers. */
export function int32Column(): NumberColumn<Int32Array> {
  return new NumberColumn((size) => new Int32Array(size));
}

/** A column of doubles: integers up to 2^53. */
export function float64Column(): NumberColumn<Float64Array> {
  return new NumberColumn((size) => new Float64Array(size));
}
