import { createClient } from "redis";

/** A key no test writes: reading it marks the end of what `work` sent. */
const END_MARK = "relgraph-test:end-of-work";

/**
 * The commands Redis at `url` ran while `work` ran, as MONITOR prints them (`<time> [<db> <client>]
 * "CMD" "arg" …`), every connection's. Resolves once MONITOR has shown a read issued after `work`:
 * everything `work` sent came before it.
 */
export async function commandsDuring(url: string, work: () => Promise<unknown>): Promise<string[]> {
  const monitor = createClient({ url });
  const reader = createClient({ url });
  await Promise.all([monitor.connect(), reader.connect()]);
  const seen: string[] = [];
  try {
    await monitor.monitor((line) => seen.push(line));
    await work();
    await reader.get(END_MARK);
    for (let waited = 0; !seen.some((line) => line.includes(`"${END_MARK}"`)); waited += 10) {
      if (waited > 5_000) throw new Error("the monitor never showed the end of the work");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    await Promise.all([monitor.close(), reader.close()]);
  }
  return seen;
}
