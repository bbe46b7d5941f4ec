import { createReadStream } from "node:fs";

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
export function readByteLines(source: LineSource, onLine: ByteLineHandler): Promise<number> {
  return new Promise((resolve, reject) => {
    const input: NodeJS.ReadableStream = typeof source === "string" ? createReadStream(source) : source;
    let line = 0;
    let failed = false;
    // The start of a line that the previous reads did not end, in pieces joined once the line ends (a
    // line of many reads is copied once, not once per read), and whether they ended on a CR (whose LF,
    // if the next read begins with one, belongs to the same line break).
    let partial: Buffer[] = [];
    let afterCr = false;
    const emit = (bytes: Buffer, start: number, end: number) => {
      line++;
      if (line === 1) start += byteOrderMarkLength(bytes, start, end);
      onLine(bytes, start, end, line);
    };
    const fail = (error: unknown): void => {
      failed = true;
      (input as { destroy?: () => void }).destroy?.();
      reject(error);
    };
    input.once("error", fail);
    input.on("data", (data: Buffer | string) => {
      if (failed) return;
      const chunk = typeof data === "string" ? Buffer.from(data) : data;
      if (chunk.length === 0) return;
      try {
        let start = afterCr && chunk[0] === LF ? 1 : 0;
        afterCr = false;
        let cr = chunk.indexOf(CR, start);
        for (;;) {
          const lf = chunk.indexOf(LF, start);
          if (cr !== -1 && cr < start) cr = chunk.indexOf(CR, start);
          const lineEnd = cr !== -1 && (lf === -1 || cr < lf) ? cr : lf;
          if (lineEnd === -1) break;
          if (partial.length > 0) {
            partial.push(chunk.subarray(start, lineEnd));
            const joined = Buffer.concat(partial);
            partial = [];
            emit(joined, 0, joined.length);
          } else {
            emit(chunk, start, lineEnd);
          }
          start = lineEnd + 1;
          if (lineEnd === cr) {
            // A CR LF is one line break; a CR that ends the read waits for the next read's first byte.
            if (start === chunk.length) afterCr = true;
            else if (chunk[start] === LF) start++;
          }
        }
        // Copied: a stream may reuse the memory of a chunk it has handed over.
        if (start < chunk.length) partial.push(Buffer.from(chunk.subarray(start)));
      } catch (error) {
        fail(error);
      }
    });
    input.once("end", () => {
      if (failed) return;
      try {
        if (partial.length > 0) {
          const joined = Buffer.concat(partial);
          emit(joined, 0, joined.length);
        }
      } catch (error) {
        return fail(error);
      }
      resolve(line);
    });
  });
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
