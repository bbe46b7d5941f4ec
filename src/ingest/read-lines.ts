import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";

/** What readLines reads: a file's path, or a stream such as stdin. */
export type LineSource = string | NodeJS.ReadableStream;

/**
 * Streams a text file (or stream) line by line, calling onLine with each line and its 1-based number, and
 * resolves with the number of lines. The file is never held whole: a million-line load costs one
 * line at a time here. A byte-order mark at the start and CRLF line ends are tolerated.
 */
export function readLines(source: LineSource, onLine: (text: string, line: number) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const input: NodeJS.ReadableStream = typeof source === "string" ? createReadStream(source, { encoding: "utf8" }) : source;
    if (typeof source !== "string") source.setEncoding("utf8");
    const lines = createInterface({ input, crlfDelay: Infinity });
    let line = 0;
    let failed = false;
    const fail = (error: unknown): void => {
      failed = true;
      lines.close();
      (input as { destroy?: () => void }).destroy?.();
      reject(error);
    };
    input.once("error", fail);
    lines.on("line", (text) => {
      if (failed) return;
      line++;
      try {
        onLine(line === 1 && text.charCodeAt(0) === 0xfeff ? text.slice(1) : text, line);
      } catch (error) {
        fail(error);
      }
    });
    lines.once("close", () => {
      if (!failed) resolve(line);
    });
  });
}
