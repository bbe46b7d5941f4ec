import { open } from "node:fs/promises";

/** What readLines reads: a file's path, or a stream such as stdin. */
export type LineSource = string | NodeJS.ReadableStream;

/**
 * Called with one line: its bytes are bytes[start, end), without the line break. The buffer is only
 * valid during the call (it is the read chunk, or a line joined across chunks).
 */
export type ByteLineHandler = (bytes: Buffer, start: number, end: number, line: number) => void;

const LF = 0x0a;
const CR = 0x0d;
const BYTE_ORDER_MARK = [0xef, 0xbb, 0xbf];

/**
 * Streams a file (or stream) line by line as bytes, calling onLine with each line and its 1-based
 * number, and resolves with the number of lines. The file is never held whole: a line that spans two
 * reads is the only one copied. Lines end at LF, CR LF or a lone CR, as Node's readline reads them; a
 * byte-order mark at the start is dropped. Reading bytes rather than text lets the common compact
 * records be read without making a string of each line (compact-records.ts).
 */
export async function readByteLines(source: LineSource, onLine: ByteLineHandler): Promise<number> {
  const lines = new LineSplitter(onLine);
  if (typeof source === "string") {
    for await (const chunk of fileChunks(source)) lines.push(chunk);
  } else {
    await streamChunks(source, (chunk) => lines.push(chunk));
  }
  return lines.end();
}

/**
 * A file's bytes in chunks, the next one read while the caller handles the one it has: a read is a
 * copy on another thread (libuv's pool), which a stream starts only once its reader is done with the
 * chunk before. Each chunk is valid until the next is asked for.
 */
async function* fileChunks(path: string): AsyncGenerator<Buffer> {
  const file = await open(path, "r");
  const buffers = [Buffer.allocUnsafe(FILE_CHUNK_BYTES), Buffer.allocUnsafe(FILE_CHUNK_BYTES)];
  let next = file.read(buffers[0]!, 0, FILE_CHUNK_BYTES, null);
  try {
    for (let k = 1; ; k++) {
      const { bytesRead, buffer } = await next;
      if (bytesRead === 0) return;
      next = file.read(buffers[k % 2]!, 0, FILE_CHUNK_BYTES, null);
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    // A read still under way writes into our buffer: let it end before the file is closed.
    await next.catch(() => {});
    await file.close();
  }
}

/** The size of a file read: the size a file stream reads too, small enough to stay in the cache while lines are split. */
const FILE_CHUNK_BYTES = 64 * 1024;

/** Calls onChunk with each chunk of a stream; resolves at its end, rejects with its error or onChunk's. */
function streamChunks(input: NodeJS.ReadableStream, onChunk: (chunk: Buffer) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let failed = false;
    const fail = (error: unknown): void => {
      failed = true;
      (input as { destroy?: () => void }).destroy?.();
      reject(error);
    };
    input.once("error", fail);
    input.on("data", (data: Buffer | string) => {
      if (failed) return;
      try {
        onChunk(typeof data === "string" ? Buffer.from(data) : data);
      } catch (error) {
        fail(error);
      }
    });
    input.once("end", () => {
      if (!failed) resolve();
    });
  });
}

/** Splits chunks into lines for readByteLines. */
class LineSplitter {
  private line = 0;
  // The start of a line that the previous reads did not end, in pieces joined once the line ends (a
  // line of many reads is copied once, not once per read), and whether they ended on a CR (whose LF,
  // if the next read begins with one, belongs to the same line break).
  private partial: Buffer[] = [];
  private afterCr = false;

  constructor(private readonly onLine: ByteLineHandler) {}

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    let start = this.afterCr && chunk[0] === LF ? 1 : 0;
    this.afterCr = false;
    let cr = chunk.indexOf(CR, start);
    for (;;) {
      const lf = chunk.indexOf(LF, start);
      if (cr !== -1 && cr < start) cr = chunk.indexOf(CR, start);
      const lineEnd = cr !== -1 && (lf === -1 || cr < lf) ? cr : lf;
      if (lineEnd === -1) break;
      if (this.partial.length > 0) {
        this.partial.push(chunk.subarray(start, lineEnd));
        const joined = Buffer.concat(this.partial);
        this.partial = [];
        this.emit(joined, 0, joined.length);
      } else {
        this.emit(chunk, start, lineEnd);
      }
      start = lineEnd + 1;
      if (lineEnd === cr) {
        // A CR LF is one line break; a CR that ends the read waits for the next read's first byte.
        if (start === chunk.length) this.afterCr = true;
        else if (chunk[start] === LF) start++;
      }
    }
    // Copied: the chunk's memory is read into again (a file's) or may be reused (a stream's).
    if (start < chunk.length) this.partial.push(Buffer.from(chunk.subarray(start)));
  }

  /** Emits the last line, if it has no line break; returns the number of lines. */
  end(): number {
    if (this.partial.length > 0) {
      const joined = Buffer.concat(this.partial);
      this.partial = [];
      this.emit(joined, 0, joined.length);
    }
    return this.line;
  }

  private emit(bytes: Buffer, start: number, end: number): void {
    this.line++;
    if (this.line === 1) start += byteOrderMarkLength(bytes, start, end);
    this.onLine(bytes, start, end, this.line);
  }
}

/**
 * Streams a text file (or stream) line by line, calling onLine with each line as text and its 1-based
 * number; lines are those readByteLines reads, decoded from UTF-8 (a malformed sequence reads as
 * U+FFFD, as in a stream decoded whole: no line break falls inside a character).
 */
export function readLines(source: LineSource, onLine: (text: string, line: number) => void): Promise<number> {
  return readByteLines(source, (bytes, start, end, line) => onLine(bytes.toString("utf8", start, end), line));
}

/**
 * The length of the UTF-8 byte-order mark that bytes[start, end) begins with: 3, or 0 when there is
 * none. The ingestion format drops one at the start of a file, and of a feed entry.
 */
export function byteOrderMarkLength(bytes: Buffer, start: number, end: number): number {
  const marked = end - start >= 3 && bytes[start] === BYTE_ORDER_MARK[0] && bytes[start + 1] === BYTE_ORDER_MARK[1] && bytes[start + 2] === BYTE_ORDER_MARK[2];
  return marked ? BYTE_ORDER_MARK.length : 0;
}
