/*
 * Lines read on another thread (read-worker.ts), handed to the validator as tokens.
 *
 * A load's records are checked in load order on one thread (validate/records.ts), but most of that
 * thread's time went to finding where the parts of each compact line are (compact-records.ts) and
 * numbering its names. A worker does that for the second part of a large file while the validator
 * reads the first: each compact line becomes a few numbers, names numbered in the worker's own order
 * of first appearance, and every other line stays text. The validator then takes the tokens in line
 * order and does with them exactly what it does with the lines: the same records, in the same order,
 * numbering every name when it first meets it, so that the load reads as it does on one thread.
 */
import { TextIndex } from "../store/text-index.js";
import { CompactEdge, CompactRelease, spellSame } from "./compact-records.js";

/** What a token says; each is followed by its line (1-based, within the part read) and then its numbers. */
export const TOKEN = {
  /** A friend upsert or delete: line, flags (REMOVE), a, b, description. */
  friend: 0,
  /** A follow upsert or delete: line, flags (REMOVE), from, to. */
  follow: 1,
  /** A release: line, flags (REMOVE, ALL), relationId, the number of peers, then each peer. */
  release: 2,
  /** Any other line: line; its text is the next of the batch's `lines`. */
  line: 3,
} as const;

/** Token flags. */
export const REMOVE = 1;
export const ALL = 2;

/** A run of tokens, in line order, and the names and descriptions first numbered in it. */
export interface TokenBatch {
  tokens: Int32Array<ArrayBuffer>;
  /** Names numbered in this batch, continuing the numbers of the batches before it. */
  names: string[];
  descriptions: string[];
  /** The text of each TOKEN.line, in order. */
  lines: string[];
}

/** Tokens gathered before a batch is handed over: enough that handing over costs little per line. */
const TOKENS_PER_BATCH = 1 << 16;

/** Turns lines into tokens (on the worker's side); take() hands over what it has. */
export class LineTokenizer {
  private readonly names = new TextIndex();
  private readonly descriptions = new TextIndex();
  private namesSent = 0;
  private descriptionsSent = 0;
  private tokens = new Int32Array(TOKENS_PER_BATCH + 64);
  private length = 0;
  private lines: string[] = [];
  private readonly edge = new CompactEdge();
  private readonly release = new CompactRelease();

  /** Whether enough is gathered to hand over. */
  get full(): boolean {
    return this.length >= TOKENS_PER_BATCH;
  }

  /** Adds bytes[start, end), line `line` of the part read; what RecordReader.addLineBytes reads from a compact line, it reads too. */
  add(bytes: Buffer, start: number, end: number, line: number): void {
    const { edge, release } = this;
    if (edge.read(bytes, start, end)) {
      if (!spellSame(bytes, edge.firstStart, edge.firstEnd, edge.secondStart, edge.secondEnd)) {
        const first = this.names.indexOfBytes(bytes, edge.firstStart, edge.firstEnd);
        const second = this.names.indexOfBytes(bytes, edge.secondStart, edge.secondEnd);
        const flags = edge.remove ? REMOVE : 0;
        if (edge.kind === "follow") return this.push5(TOKEN.follow, line, flags, first, second);
        const description = edge.descriptionAscii
          ? this.descriptions.indexOfBytes(bytes, edge.descriptionStart, edge.descriptionEnd)
          : this.descriptions.indexOf(bytes.toString("utf8", edge.descriptionStart, edge.descriptionEnd));
        this.push5(TOKEN.friend, line, flags, first, second);
        this.room(1);
        this.tokens[this.length++] = description;
        return;
      }
    } else if (release.read(bytes, start, end) && !namesItself(bytes, release)) {
      const releaser = this.names.indexOfBytes(bytes, release.relationIdStart, release.relationIdEnd);
      this.push5(TOKEN.release, line, (release.remove ? REMOVE : 0) | (release.all ? ALL : 0), releaser, release.peers);
      this.room(release.peers);
      for (let k = 0; k < release.peers; k++) this.tokens[this.length++] = this.names.indexOfBytes(bytes, release.peerStarts[k]!, release.peerEnds[k]!);
      return;
    }
    this.room(2);
    this.tokens[this.length++] = TOKEN.line;
    this.tokens[this.length++] = line;
    this.lines.push(bytes.toString("utf8", start, end));
  }

  /** Hands over the tokens gathered since the last call. */
  take(): TokenBatch {
    const batch: TokenBatch = {
      tokens: this.tokens.slice(0, this.length),
      names: this.names.texts.slice(this.namesSent),
      descriptions: this.descriptions.texts.slice(this.descriptionsSent),
      lines: this.lines,
    };
    this.namesSent = this.names.texts.length;
    this.descriptionsSent = this.descriptions.texts.length;
    this.length = 0;
    this.lines = [];
    return batch;
  }

  private push5(kind: number, line: number, flags: number, first: number, second: number): void {
    this.room(5);
    const { tokens } = this;
    tokens[this.length] = kind;
    tokens[this.length + 1] = line;
    tokens[this.length + 2] = flags;
    tokens[this.length + 3] = first;
    tokens[this.length + 4] = second;
    this.length += 5;
  }

  private room(more: number): void {
    if (this.length + more <= this.tokens.length) return;
    const grown = new Int32Array(Math.max(2 * this.tokens.length, this.length + more));
    grown.set(this.tokens.subarray(0, this.length));
    this.tokens = grown;
  }
}

/** Whether a compact release lists the releasing user: left to the general path to report, as RecordReader does. */
function namesItself(bytes: Buffer, release: CompactRelease): boolean {
  for (let k = 0; k < release.peers; k++) {
    if (spellSame(bytes, release.peerStarts[k]!, release.peerEnds[k]!, release.relationIdStart, release.relationIdEnd)) return true;
  }
  return false;
}

/**
 * The validator's side: the worker's numbers of names and descriptions, as the load's own. A name is
 * numbered in the load when a token first names it, as it would be when its line is read.
 */
export class TokenNames {
  private readonly names: string[] = [];
  private readonly descriptions: string[] = [];
  private nameOf: Int32Array<ArrayBuffer> = new Int32Array(1024).fill(-1);
  private descriptionOf: Int32Array<ArrayBuffer> = new Int32Array(64).fill(-1);

  constructor(
    private readonly loadNames: TextIndex,
    private readonly loadDescriptions: TextIndex,
  ) {}

  /** Takes the names and descriptions a batch numbers first. */
  learn(batch: TokenBatch): void {
    for (const name of batch.names) this.names.push(name);
    for (const description of batch.descriptions) this.descriptions.push(description);
    if (this.names.length > this.nameOf.length) this.nameOf = grownFilled(this.nameOf, this.names.length);
    if (this.descriptions.length > this.descriptionOf.length) this.descriptionOf = grownFilled(this.descriptionOf, this.descriptions.length);
  }

  /** The load's number of the worker's name `local`. */
  name(local: number): number {
    let index = this.nameOf[local]!;
    if (index === -1) this.nameOf[local] = index = this.loadNames.indexOf(this.names[local]!);
    return index;
  }

  /** The load's number of the worker's description `local`. */
  description(local: number): number {
    let index = this.descriptionOf[local]!;
    if (index === -1) this.descriptionOf[local] = index = this.loadDescriptions.indexOf(this.descriptions[local]!);
    return index;
  }
}

function grownFilled(column: Int32Array<ArrayBuffer>, least: number): Int32Array<ArrayBuffer> {
  const grown = new Int32Array(Math.max(least, 2 * column.length)).fill(-1);
  grown.set(column);
  return grown;
}
