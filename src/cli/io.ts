/** The streams a command reads and writes: the process's own when run from the shell, a test's otherwise. */
export interface CommandIo {
  /** Read by the commands that take input on stdin (`ingest -`, `decrypt`); process.stdin when absent. */
  stdin?: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}
