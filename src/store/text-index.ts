/**
 * Distinct strings numbered in order of first appearance, findable by the string or by its bytes.
 *
 * A load's millions of relation records name a few hundred thousand relationIds, each many times.
 * Looked up in a Map, every occurrence first had to become a string of its own (sliced out of its
 * line, hashed, then garbage): a seventh of a large load's time. This table is open-addressed over
 * typed arrays and hashes the characters where they are, so a name already numbered is found in the
 * bytes of its line (indexOfBytes) without any string being made; only a new name becomes one.
 *
 * The hash is seeded per table from a random number, so that names crafted to collide (a change
 * feed takes records from other services) cannot be prepared in advance.
 */
export class TextIndex {
  readonly texts: string[] = [];
  // Per slot: the index of the text there plus one (0: empty), and its hash.
  #slots = new Int32Array(INITIAL_SLOTS);
  #hashes = new Int32Array(INITIAL_SLOTS);
  readonly #seed = randomSeed();

  /** The index of `text`, which is numbered now if it is new. */
  indexOf(text: string): number {
    const hash = this.#hashText(text);
    const slot = this.#slotOfText(text, hash);
    const found = this.#slots[slot]!;
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
    const found = this.#slots[slot]!;
    return found !== 0 ? found - 1 : this.#add(bytes.toString("latin1", start, end), hash, slot);
  }

  /** The index of `text`, or undefined when it was never numbered. */
  find(text: string): number | undefined {
    const found = this.#slots[this.#slotOfText(text, this.#hashText(text))]!;
    return found !== 0 ? found - 1 : undefined;
  }

  #add(text: string, hash: number, slot: number): number {
    const index = this.texts.length;
    this.texts.push(text);
    this.#slots[slot] = index + 1;
    this.#hashes[slot] = hash;
    // At most half full: probes stay short.
    if (2 * this.texts.length > this.#slots.length) this.#grow();
    return index;
  }

  /** The slot holding `text`, or the empty slot where it would go. */
  #slotOfText(text: string, hash: number): number {
    const mask = this.#slots.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const found = this.#slots[slot]!;
      if (found === 0 || (this.#hashes[slot] === hash && this.texts[found - 1] === text)) return slot;
    }
  }

  /** The slot holding the text of the bytes, or the empty slot where it would go. */
  #slotOfBytes(bytes: Buffer, start: number, end: number, hash: number): number {
    const mask = this.#slots.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const found = this.#slots[slot]!;
      if (found === 0 || (this.#hashes[slot] === hash && spells(this.texts[found - 1]!, bytes, start, end))) return slot;
    }
  }

  #grow(): void {
    const slots = this.#slots;
    const hashes = this.#hashes;
    this.#slots = new Int32Array(slots.length * 2);
    this.#hashes = new Int32Array(slots.length * 2);
    const mask = this.#slots.length - 1;
    for (let old = 0; old < slots.length; old++) {
      if (slots[old] === 0) continue;
      let slot = hashes[old]! & mask;
      while (this.#slots[slot] !== 0) slot = (slot + 1) & mask;
      this.#slots[slot] = slots[old]!;
      this.#hashes[slot] = hashes[old]!;
    }
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
const FNV_PRIME = 0x01000193;

function finalize(hash: number): number {
  let h = hash ^ (hash >>> 16);
  h = Math.imul(h, 0x85ebca6b);
  return h ^ (h >>> 13);
}

function randomSeed(): number {
  return crypto.getRandomValues(new Int32Array(1))[0]!;
}

/** Whether `text` is spelled by the ASCII bytes[start, end). */
function spells(text: string, bytes: Buffer, start: number, end: number): boolean {
  if (text.length !== end - start) return false;
  for (let k = 0; k < text.length; k++) if (text.charCodeAt(k) !== bytes[start + k]) return false;
  return true;
}
