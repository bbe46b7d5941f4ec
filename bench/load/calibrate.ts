import os from "node:os";
import { Worker } from "node:worker_threads";

/** How long each calibration thread spins. */
const SPIN_MS = 1_000;

/**
 * How many cores' worth of CPU time the machine really delivers: one busy thread per reported core
 * spins for a second, and the CPU time they got is divided by the wall time. A sandbox or a CPU
 * quota can deliver fewer than `os.cpus()` says, and every figure of the bench scales with it.
 */
export async function effectiveCores(): Promise<{ reported: number; effective: number }> {
  const reported = os.cpus().length;
  const source = `const end = Date.now() + ${SPIN_MS}; let x = 0; while (Date.now() < end) x++; require("node:worker_threads").parentPort.postMessage(x);`;
  const before = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: reported }, async () => {
      const worker = new Worker(source, { eval: true });
      await new Promise((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
      });
      await worker.terminate();
    }),
  );
  const used = process.cpuUsage(before);
  return { reported, effective: (used.user + used.system) / 1000 / (performance.now() - started) };
}
