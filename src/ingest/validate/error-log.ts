import { LINE_SPAN } from "./load-state.js";

// Errors kept for sorting; beyond this they are only counted.
const ERRORS_KEPT = 10_000;

/** The load's errors, each at a location (source and line packed as in LINE_SPAN), and the report made of them. */
export class ErrorLog {
  count = 0;
  private readonly kept: { at: number; reason: string }[] = [];

  /**
   * @param sources names of the sources (file paths) that locations cite, by index.
   * @param maxErrors how many errors a report lists before "… and N more errors".
   */
  constructor(
    private readonly sources: readonly string[],
    private readonly maxErrors: number,
  ) {}

  add(at: number, reason: string): void {
    this.count++;
    if (this.kept.length < ERRORS_KEPT) this.kept.push({ at, reason });
  }

  /** `file:line: reason` lines in file and line order, up to the limit, then "… and N more errors". */
  report(): string[] {
    const lines = [...this.kept]
      .sort((x, y) => x.at - y.at)
      .slice(0, this.maxErrors)
      .map(({ at, reason }) => `${this.where(at)}: ${reason}`);
    const more = this.count - lines.length;
    if (more > 0) lines.push(`… and ${more} more error${more === 1 ? "" : "s"}`);
    return lines;
  }

  /** A location as a report cites it: `file:line`, or the file alone for line 0. */
  where(at: number): string {
    const source = this.sources[Math.floor(at / LINE_SPAN)] ?? "?";
    const line = at % LINE_SPAN;
    return line === 0 ? source : `${source}:${line}`;
  }
}
