/** Members per SMISMEMBER / HMGET / SADD command: big enough to amortize, small enough not to stall Redis. */
export const ARGS_PER_COMMAND = 1_000;

/** Splits a list into chunks of at most `size`. */
export function chunks<T>(items: readonly T[], size = ARGS_PER_COMMAND): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}
