import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";

/**
 * Streams a text file line by line, calling onLine with each line and its 1-based number, and
 * resolves with the number of lines. The file is never held whole: a million-line load costs one
 * line at a time here. A byte-order mark at the start and CRLF line ends are tolerated.
 */
export function readLines(path: string, onLine: (text: string, line: number) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const input = createReadStream(path, { encoding: "utf8" });
    const lines = createInterface({ input, crlfDelay: Infinity });
    let line = 0;
    let failed = false;
    const fail = (error: unknown): void => {
      failed = true;
      lines.close();
      input.destroy();
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
