/*
 * Friend and follow records, upserts and deletes, are most of a load and of a change feed (the bench's
 * dataset and change mix), and releases most of the rest.
 * Reading each line as a string and then as JSON, and each of its relationIds as a string of its own,
 * was most of the writer's parsing time. Lines in the compact form JSON.stringify writes (no spaces,
 * the fields in the contract's order), whose relationIds match the relationId pattern and whose
 * description holds no quote, backslash or control character, are read here in their bytes
 * (CompactEdge, CompactRelease); every other line, valid or not, is read as JSON text.
 *
 * In a matched line every string's JSON value is its raw text, so a matched line means exactly what
 * JSON.parse would read from it: validation sees no difference (test/ingest/compact-records.test.ts
 * checks that against the general path on random lines).
 */

/** The four compact forms of edges, by what they say, and the parts of all forms. */
const FRIEND_UPSERT = bytesOf('{"type":"friend","a":"');
const FRIEND_DELETE = bytesOf('{"op":"delete","type":"friend","a":"');
const FOLLOW_UPSERT = bytesOf('{"type":"follow","from":"');
const FOLLOW_DELETE = bytesOf('{"op":"delete","type":"follow","from":"');
const FRIEND_B = bytesOf('","b":"');
const FOLLOW_TO = bytesOf('","to":"');
const DESCRIPTION = bytesOf('","description":"');
const RELEASE_UPSERT = bytesOf('{"type":"release","relationId":"');
const RELEASE_DELETE = bytesOf('{"op":"delete","type":"release","relationId":"');
const PEERS_ALL = bytesOf('","peers":"*"}');
const PEERS_LIST = bytesOf('","peers":[');
const COMMA = 0x2c;
const CLOSE_LIST = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const CLOSE = 0x7d;
/** The longest relationId (RELATION_ID_PATTERN in domain/identity.ts: 1 to 64 of A-Z a-z 0-9 _ -). */
const RELATION_ID_MAX = 64;

/**
 * Where the parts of a compact friend or follow line are in its bytes. One is reused for every line,
 * so that reading a line allocates nothing.
 */
export class CompactEdge {
  kind: "friend" | "follow" = "friend";
  remove = false;
  /** The first end (a, from) and the second (b, to): ASCII bytes. */
  firstStart = 0;
  firstEnd = 0;
  secondStart = 0;
  secondEnd = 0;
  /** A friend upsert's description, which may hold any character but a quote, backslash or control; empty otherwise. */
  descriptionStart = 0;
  descriptionEnd = 0;
  /** Whether the description is ASCII (then a byte is a character). */
  descriptionAscii = true;

  /** Reads bytes[start, end) (one line, without its line break); false when it is not in a compact form. */
  read(bytes: Buffer, start: number, end: number): boolean {
    if (bytes[start + 2] === 0x74 /* {"t */) {
      if (startsWith(bytes, start, end, FRIEND_UPSERT)) return this.#friend(bytes, start + FRIEND_UPSERT.length, end, false);
      if (startsWith(bytes, start, end, FOLLOW_UPSERT)) return this.#follow(bytes, start + FOLLOW_UPSERT.length, end, false);
    } else if (bytes[start + 2] === 0x6f /* {"o */) {
      if (startsWith(bytes, start, end, FRIEND_DELETE)) return this.#friend(bytes, start + FRIEND_DELETE.length, end, true);
      if (startsWith(bytes, start, end, FOLLOW_DELETE)) return this.#follow(bytes, start + FOLLOW_DELETE.length, end, true);
    }
    return false;
  }

  #friend(bytes: Buffer, at: number, end: number, remove: boolean): boolean {
    this.kind = "friend";
    this.remove = remove;
    if (!this.#ends(bytes, at, end, FRIEND_B)) return false;
    if (remove) {
      this.descriptionStart = this.descriptionEnd = 0;
      this.descriptionAscii = true;
      return closes(bytes, this.secondEnd, end);
    }
    if (!startsWith(bytes, this.secondEnd, end, DESCRIPTION)) return false;
    const from = this.secondEnd + DESCRIPTION.length;
    let ascii = true;
    let i = from;
    for (; i < end; i++) {
      const byte = bytes[i]!;
      if (byte === QUOTE || byte === BACKSLASH || byte < 0x20) break;
      if (byte >= 0x80) ascii = false;
    }
    this.descriptionStart = from;
    this.descriptionEnd = i;
    this.descriptionAscii = ascii;
    return closes(bytes, i, end);
  }

  #follow(bytes: Buffer, at: number, end: number, remove: boolean): boolean {
    this.kind = "follow";
    this.remove = remove;
    this.descriptionStart = this.descriptionEnd = 0;
    this.descriptionAscii = true;
    return this.#ends(bytes, at, end, FOLLOW_TO) && closes(bytes, this.secondEnd, end);
  }

  /** Reads `first","second-name":"second` from `at`; the second ends where the next quote is. */
  #ends(bytes: Buffer, at: number, end: number, between: Uint8Array): boolean {
    this.firstStart = at;
    this.firstEnd = relationIdEnd(bytes, at, end);
    if (this.firstEnd < 0 || !startsWith(bytes, this.firstEnd, end, between)) return false;
    this.secondStart = this.firstEnd + between.length;
    this.secondEnd = relationIdEnd(bytes, this.secondStart, end);
    return this.secondEnd >= 0;
  }
}

/**
 * Where the parts of a compact release line are in its bytes: `{"type":"release","relationId":"…",
 * "peers":…}` with "*" or a list of relationIds, or the delete `{"op":"delete","type":"release",
 * "relationId":"…"}`. One is reused for every line.
 */
export class CompactRelease {
  remove = false;
  /** Whether the peers are "*". */
  all = false;
  relationIdStart = 0;
  relationIdEnd = 0;
  /** How many peers the list names (0 for "*" and deletes), and where each is: ASCII bytes. */
  peers = 0;
  peerStarts = new Uint32Array(16);
  peerEnds = new Uint32Array(16);

  /** Reads bytes[start, end) (one line, without its line break); false when it is not in a compact form. */
  read(bytes: Buffer, start: number, end: number): boolean {
    this.all = false;
    this.peers = 0;
    if (startsWith(bytes, start, end, RELEASE_DELETE)) {
      this.remove = true;
      if (!this.#relationId(bytes, start + RELEASE_DELETE.length, end)) return false;
      return closes(bytes, this.relationIdEnd, end);
    }
    if (!startsWith(bytes, start, end, RELEASE_UPSERT)) return false;
    this.remove = false;
    if (!this.#relationId(bytes, start + RELEASE_UPSERT.length, end)) return false;
    const at = this.relationIdEnd;
    if (startsWith(bytes, at, end, PEERS_ALL)) {
      this.all = true;
      return at + PEERS_ALL.length === end;
    }
    if (!startsWith(bytes, at, end, PEERS_LIST)) return false;
    return this.#peerList(bytes, at + PEERS_LIST.length, end);
  }

  #relationId(bytes: Buffer, at: number, end: number): boolean {
    this.relationIdStart = at;
    this.relationIdEnd = relationIdEnd(bytes, at, end);
    return this.relationIdEnd >= 0;
  }

  /** Reads `"a","b"]}` (or `]}`) from `at` to the end of the line. */
  #peerList(bytes: Buffer, at: number, end: number): boolean {
    // Every byte read is checked to be before `end`: the buffer may go on past the line.
    let i = at;
    if (i < end && bytes[i] !== CLOSE_LIST) {
      for (;;) {
        if (i >= end || bytes[i] !== QUOTE) return false;
        const peerEnd = relationIdEnd(bytes, i + 1, end);
        if (peerEnd < 0 || peerEnd >= end || bytes[peerEnd] !== QUOTE) return false;
        this.#addPeer(i + 1, peerEnd);
        i = peerEnd + 1;
        if (i >= end || bytes[i] !== COMMA) break;
        i++;
      }
    }
    return i + 2 === end && bytes[i] === CLOSE_LIST && bytes[i + 1] === CLOSE;
  }

  #addPeer(start: number, end: number): void {
    if (this.peers === this.peerStarts.length) {
      const starts = new Uint32Array(2 * this.peers);
      const ends = new Uint32Array(2 * this.peers);
      starts.set(this.peerStarts);
      ends.set(this.peerEnds);
      this.peerStarts = starts;
      this.peerEnds = ends;
    }
    this.peerStarts[this.peers] = start;
    this.peerEnds[this.peers++] = end;
  }
}

/** Where a relationId starting at `at` ends (at a byte the pattern does not allow), or -1 when its length is outside 1 to 64. */
function relationIdEnd(bytes: Buffer, at: number, end: number): number {
  let i = at;
  while (i < end && i - at <= RELATION_ID_MAX) {
    const byte = bytes[i]!;
    const allowed =
      (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || byte === 0x5f || byte === 0x2d;
    if (!allowed) break;
    i++;
  }
  return i > at && i - at <= RELATION_ID_MAX ? i : -1;
}

/** Whether the line ends at `at` with the closing `"}`. */
function closes(bytes: Buffer, at: number, end: number): boolean {
  return at + 2 === end && bytes[at] === QUOTE && bytes[at + 1] === CLOSE;
}

function startsWith(bytes: Buffer, at: number, end: number, prefix: Uint8Array): boolean {
  if (end - at < prefix.length) return false;
  for (let k = 0; k < prefix.length; k++) if (bytes[at + k] !== prefix[k]) return false;
  return true;
}

function bytesOf(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}
