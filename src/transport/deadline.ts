import { Code, ConnectError } from "@connectrpc/connect";

/**
 * The longest timer Node keeps: a longer one fires after 1 ms instead. A deadline beyond it (24.8
 * days; grpc-timeout allows 99999999 hours) is clamped to it, which a unary call never reaches.
 * connect-es's own deadline signal is not clamped, which is why relgraph keeps its own timer.
 */
export const MAX_DEADLINE_MS = 2 ** 31 - 1;

/** Thrown when the client's deadline passes first; carries the error the client is sent. */
export class DeadlineExceeded extends Error {
  readonly error = new ConnectError("the operation timed out", Code.DeadlineExceeded);
}

/** Races `work` against the client's deadline; no deadline, no timer. */
export async function withDeadline<T>(work: Promise<T>, timeoutMs: number | undefined): Promise<T> {
  if (timeoutMs === undefined) return work;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceeded()), Math.min(timeoutMs, MAX_DEADLINE_MS));
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
