import { Writable } from "node:stream";
import type { CommandIo } from "../../src/cli/io.js";

/** Streams for a CLI command under test that collect what it writes to stdout and stderr. */
export function captureIo(): CommandIo & { out(): string; err(): string } {
  const sink = () => {
    const chunks: Buffer[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(Buffer.from(chunk));
        done();
      },
    });
    return { stream, text: () => Buffer.concat(chunks).toString("utf8") };
  };
  const stdout = sink();
  const stderr = sink();
  return { stdout: stdout.stream, stderr: stderr.stream, out: stdout.text, err: stderr.text };
}
