/**
 * Distinct strings numbered in order of first appearance, findable by the string or by its bytes.
 *
 * A load's millions of relation records name a few hundred thousand relationIds, each many times.
 * Looked up in a Map, every occurrence first had to become a string of its own (sliced out of its
 * line, hashed, then garbage): a seventh of a large load's time. This table is open-addressed over
 * typed arrays and hashes the characters where they are, so a name already numbered is found in the
 * bytes of its line (indexOfBytes) without any string being made; only a new name becomes one.
 *
 * A lookup by bytes compares them with a copy of each ASCII text's bytes kept in one pool, next to
 * the slot's number and hash in one array: the texts themselves are objects scattered over the heap,
 * and fetching one per lookup cost as much as the rest of the lookup (bench/README.md).
 *
 * The hash is seeded per table from a random number, so that names crafted to collide (a change
 * feed takes records from other services) cannot be prepared in advance.
 */
export class TextIndex {
  readonly texts: string[] = [];
  // Per slot, two numbers side by side: the index of the text there plus one (0: empty), and its hash.
  #slots = new Int32Array(2 * INITIAL_SLOTS);
  // The bytes of every ASCII text, one after the other; per text, where its bytes start and end
  // (start -1 for a text with other characters, which no ASCII bytes spell).
  #pool = new Uint8Array(INITIAL_POOL);
  #pooled = 0;
  #starts = new Int32Array(INITIAL_SLOTS);
  #ends = new Int32Array(INITIAL_SLOTS);
  readonly #seed = randomSeed();

  /** The index of `text`, which is numbered now if it is new. */
  indexOf(text: string): number {
    const hash = this.#hashText(text);
    const slot = this.#slotOfText(text, hash);
    const found = this.#slots[2 * slot]!;
    return found !== 0 ? found - 1 : this.#add(text, hash, slot);
  }

  /**
   * The index of the text spelled by bytes[start, end), numbered now if it is new. The bytes must
   * be ASCII (below 0x80), where a byte and a character code are the same number: what a
   * relationId's pattern allows. Throws a RangeError on any other byte.
   */
  indexOfBytes(bytes: Buffer, start: number, end: number): number {
    const hash = this.#hashBytes(bytes, start, end);
    const slot = this.#slotOfBytes(bytes, start, end, hash);
    const found = this.#slots[2 * slot]!;
    return found !== 0 ? found - 1 : this.#add(bytes.toString("latin1", start, end), hash, slot);
  }

  /** The index of `text`, or undefined when it was never numbered. */
  find(text: string): number | undefined {
    const found = this.#slots[2 * this.#slotOfText(text, this.#hashText(text))]!;
    return found !== 0 ? found - 1 : undefined;
  }

  #add(text: string, hash: number, slot: number): number {
    const index = this.texts.length;
    this.texts.push(text);
    this.#slots[2 * slot] = index + 1;
    this.#slots[2 * slot + 1] = hash;
    this.#keepBytes(index, text);
    // At most half full: probes stay short.
    if (4 * this.texts.length > this.#slots.length) this.#grow();
    return index;
  }

  /** Copies an ASCII text's bytes into the pool (a character code is its byte); marks any other text. */
  #keepBytes(index: number, text: string): void {
    if (index === this.#starts.length) {
      this.#starts = grown(this.#starts, index);
      this.#ends = grown(this.#ends, index);
    }
    if (this.#pooled + text.length > this.#pool.length) {
      const pool = new Uint8Array(Math.max(2 * this.#pool.length, this.#pooled + text.length));
      pool.set(this.#pool.subarray(0, this.#pooled));
      this.#pool = pool;
    }
    const from = this.#pooled;
    for (let k = 0; k < text.length; k++) {
      const code = text.charCodeAt(k);
      if (code >= 0x80) {
        this.#starts[index] = -1;
        return;
      }
      this.#pool[from + k] = code;
    }
    this.#starts[index] = from;
    this.#ends[index] = from + text.length;
    this.#pooled += text.length;
  }

  /** The slot holding `text`, or the empty slot where it would go. */
  #slotOfText(text: string, hash: number): number {
    const slots = this.#slots;
    const mask = slots.length / 2 - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const found = slots[2 * slot]!;
      if (found === 0 || (slots[2 * slot + 1] === hash && this.texts[found - 1] === text)) return slot;
    }
  }

  /** The slot holding the text of the bytes, or the empty slot where it would go. */
  #slotOfBytes(bytes: Buffer, start: number, end: number, hash: number): number {
    const slots = this.#slots;
    const mask = slots.length / 2 - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const found = slots[2 * slot]!;
      if (found === 0 || (slots[2 * slot + 1] === hash && this.#spells(found - 1, bytes, start, end))) return slot;
    }
  }

  /** Whether texts[index] is spelled by the ASCII bytes[start, end), read from the pool. */
  #spells(index: number, bytes: Buffer, start: number, end: number): boolean {
    const from = this.#starts[index]!;
    if (from < 0 || this.#ends[index]! - from !== end - start) return false;
    const pool = this.#pool;
    for (let k = 0; k < end - start; k++) if (pool[from + k] !== bytes[start + k]) return false;
    return true;
  }

  #grow(): void {
    const old = this.#slots;
    const slots = new Int32Array(old.length * 2);
    const mask = slots.length / 2 - 1;
    for (let at = 0; at < old.length; at += 2) {
      if (old[at] === 0) continue;
      let slot = old[at + 1]! & mask;
      while (slots[2 * slot] !== 0) slot = (slot + 1) & mask;
      slots[2 * slot] = old[at]!;
      slots[2 * slot + 1] = old[at + 1]!;
    }
    this.#slots = slots;
  }

  // FNV-1a over the character codes, from a random basis, then a finalizer that spreads the high
  // bits into the low ones the mask keeps. The two functions agree wherever bytes and codes do.
  #hashText(text: string): number {
    let hash = this.#seed;
    for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), FNV_PRIME);
    return finalize(hash);
  }

  #hashBytes(bytes: Buffer, start: number, end: number): number {
    let hash = this.#seed;
    let seen = 0;
    for (let i = start; i < end; i++) {
      const byte = bytes[i]!;
      seen |= byte;
      hash = Math.imul(hash ^ byte, FNV_PRIME);
    }
    if (seen >= 0x80) throw new RangeError("TextIndex.indexOfBytes takes ASCII bytes only");
    return finalize(hash);
  }
}

const INITIAL_SLOTS = 16;
const INITIAL_POOL = 256;
const FNV_PRIME = 0x01000193;

function finalize(hash: number): number {
  let h = hash ^ (hash >>> 16);
  h = Math.imul(h, 0x85ebca6b);
  return h ^ (h >>> 13);
}

function randomSeed(): number {
  return crypto.getRandomValues(new Int32Array(1))[0]!;
}

/** A copy of `array` with room for twice `used` entries. */
function grown(array: Int32Array, used: number): Int32Array<ArrayBuffer> {
  const bigger = new Int32Array(2 * Math.max(used, 8));
  bigger.set(array.subarray(0, used));
  return bigger;
}
