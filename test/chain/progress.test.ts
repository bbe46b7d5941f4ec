import { describe, expect, it } from "vitest";
import { progressMeter, statusLine } from "../../src/chain/progress.js";

describe("the progress line", () => {
  it("gives rates between readings and the lag to the head", () => {
    const meter = progressMeter();
    const stats = { head: 1000, indexed: 100, target: 1000, blocks: 100, records: 10, reorgs: 0, blocksUndone: 0, retries: 0 };
    meter(stats, 0);
    const progress = meter({ ...stats, indexed: 300, blocks: 300, records: 510 }, 2000);
    expect(progress).toMatchObject({ lag: 700, blocksPerSecond: 100, recordsPerSecond: 250 });
    expect(statusLine(progress)).toBe("block 300 of 1,000 · 100 blocks/s · 250 records/s · lag 700 blocks");
  });
});
