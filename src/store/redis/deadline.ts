/** A Redis that did not answer in time: one that accepts connections and never replies (hung, paused, swapping). */
export class NoReplyError extends Error {}

/** Rejects with NoReplyError when `work` has not settled within `ms`. */
export async function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoReplyError(`no reply from Redis within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
