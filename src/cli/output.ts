import type { CommandIo } from "./io.js";

/** Reports a usage problem of `relgraph COMMAND` on stderr; returns the usage exit status, 2. */
export function usage(io: CommandIo, command: string, problem: string): number {
  io.stderr.write(`relgraph ${command}: ${problem}\nRun "relgraph ${command} --help" for usage.\n`);
  return 2;
}

/** An error's message, with its cause's: an operator needs to see why the store refused. */
export function describe(error: unknown): string {
  const { message, cause } = error as Error;
  return cause instanceof Error && cause.message && cause.message !== message ? `${message} (${cause.message})` : String(message);
}

/** A count as an operator reads it: 1,000,000. */
export function count(n: number): string {
  return n.toLocaleString("en-US");
}
