/*
 * Load drivers for clients that are plain async calls (gRPC, Connect): a closed loop with bounded
 * concurrency for the saturation figure, and an open loop at a fixed offered rate for latency at
 * part load. Latency in the open loop counts from when a request was due, not from when it was
 * sent, so a stalled client or server cannot hide its queueing (coordinated omission).
 */

/** One request: `i` is its sequence number, for cycling over sampled queries. Rejects on failure. */
export type Call = (i: number) => Promise<unknown>;

/** The outcome of one measurement. */
export interface LoadResult {
  /** Successful requests. */
  requests: number;
  errors: number;
  seconds: number;
  /** Successful requests per second. */
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** The fixed rate asked for, on part-load runs. */
  offeredRps?: number;
  /**
   * On part-load runs, the 99th percentile of how late the pacer sent requests after they were
   * due: when it is close to p99Ms, the load generator, not the server, made the tail.
   */
  sendLagP99Ms?: number;
  firstError?: string;
}

/** Most requests in flight in the open loop; beyond that, due requests wait for a free slot. */
const OPEN_LOOP_MAX_IN_FLIGHT = 1_000;

/** Runs `concurrency` callers back to back for `seconds`. */
export async function closedLoop(call: Call, concurrency: number, seconds: number): Promise<LoadResult> {
  const latencies = new Latencies();
  let errors = 0;
  let firstError: string | undefined;
  let next = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const worker = async () => {
    while (performance.now() < deadline) {
      const sent = performance.now();
      try {
        await call(next++);
        latencies.add(performance.now() - sent);
      } catch (error) {
        errors++;
        firstError ??= describe(error);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return result(latencies, errors, (performance.now() - started) / 1000, firstError);
}

/** Offers `rate` requests per second for `seconds`, whatever the answers' speed. */
export async function openLoop(call: Call, rate: number, seconds: number): Promise<LoadResult> {
  const latencies = new Latencies();
  const lags = new Latencies();
  const total = Math.max(1, Math.round(rate * seconds));
  let errors = 0;
  let firstError: string | undefined;
  let issued = 0;
  let inFlight = 0;
  const started = performance.now();
  await new Promise<void>((resolve) => {
    let done = 0;
    const dueCount = () => Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate) + 1);
    const finish = () => {
      inFlight--;
      if (++done === total) resolve();
      else if (issued < total) issue();
    };
    const issue = () => {
      const due = dueCount();
      while (issued < due && inFlight < OPEN_LOOP_MAX_IN_FLIGHT) {
        const dueAt = started + (issued / rate) * 1000;
        lags.add(performance.now() - dueAt);
        inFlight++;
        call(issued++).then(
          () => {
            latencies.add(performance.now() - dueAt);
            finish();
          },
          (error: unknown) => {
            errors++;
            firstError ??= describe(error);
            finish();
          },
        );
      }
    };
    // One timer paces the loop; timers fire no sooner than 1 ms, and the due count catches up.
    const tick = () => {
      issue();
      if (issued < total) setTimeout(tick, Math.max(1, (issued / rate) * 1000 + started - performance.now()));
    };
    tick();
  });
  return {
    ...result(latencies, errors, (performance.now() - started) / 1000, firstError),
    offeredRps: rate,
    sendLagP99Ms: lags.percentile(99),
  };
}

function result(latencies: Latencies, errors: number, seconds: number, firstError: string | undefined): LoadResult {
  return {
    requests: latencies.count,
    errors,
    seconds,
    rps: latencies.count / seconds,
    p50Ms: latencies.percentile(50),
    p99Ms: latencies.percentile(99),
    firstError,
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message.slice(0, 300) : String(error);
}

/** Latency samples in milliseconds. */
class Latencies {
  private values = new Float64Array(1 << 16);
  count = 0;
  add(ms: number): void {
    if (this.count === this.values.length) {
      const next = new Float64Array(this.values.length * 2);
      next.set(this.values);
      this.values = next;
    }
    this.values[this.count++] = ms;
  }
  percentile(p: number): number {
    if (this.count === 0) return Number.NaN;
    const sorted = this.values.slice(0, this.count).sort();
    return sorted[Math.min(this.count - 1, Math.ceil((p / 100) * this.count) - 1)]!;
  }
}
