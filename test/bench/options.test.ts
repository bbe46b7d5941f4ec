import { describe, expect, it } from "vitest";
import { LIVING, OPS, parseOptions, UsageError, type BenchOptions } from "../../bench/options.js";

/* --only selects read-only operations, living-graph measurements and the protocol ratios from one list. */

const parse = (argv: string[]) => parseOptions(argv) as BenchOptions;

describe("bench options", () => {
  it("selects everything by default, with the size's change count", () => {
    expect(parse([])).toMatchObject({ only: [...OPS], living: [...LIVING], protocols: true, chain: true, changeRecords: 100_000, trials: 30 });
    expect(parse(["--size", "large"])).toMatchObject({ changeRecords: 1_000_000, chainTransactions: 100_000, freshnessSamples: 150 });
  });

  it("splits --only into operations and living-graph measurements", () => {
    expect(parse(["--only", "mf-mm,withdraw,feed-changes"])).toMatchObject({ only: ["mf-mm"], living: ["withdraw", "feed-changes"] });
    expect(parse(["--only", "rec-live"])).toMatchObject({ only: [], living: ["rec-live"], protocols: false });
    expect(parse(["--only", "protocols,mf-hh"])).toMatchObject({ only: ["mf-hh"], living: [], protocols: true });
    expect(parse(["--only", "rec", "--changes", "5000", "--trials", "3"])).toMatchObject({ only: ["rec"], living: [], chain: false, changeRecords: 5_000, trials: 3 });
    expect(parse(["--only", "chain", "--transactions", "20000"])).toMatchObject({ only: [], living: [], protocols: false, private: false, chain: true, chainTransactions: 20_000 });
  });

  it("refuses unknown ids and unusable counts", () => {
    expect(() => parseOptions(["--only", "withdrawal"])).toThrow(UsageError);
    expect(() => parseOptions(["--trials", "0"])).toThrow(UsageError);
    expect(() => parseOptions(["--transactions", "-5"])).toThrow(UsageError);
  });
});
