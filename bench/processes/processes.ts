import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import net from "node:net";

/*
 * Every process the bench starts goes through here, so that every one of them is stopped however
 * the bench ends: normally, on an error, on SIGINT/SIGTERM, or on an uncaught exception.
 */

const children = new Set<ChildProcess>();
/** How long a stopped process may take to exit after SIGTERM before it is killed. */
const STOP_GRACE_MS = 15_000;
/** How long a server may take to print its ready line. */
const START_TIMEOUT_MS = 60_000;
/** Kernel clock ticks per second, the unit of utime/stime in /proc/PID/stat. */
const CLOCK_TICKS = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

/** A child process the bench started and will stop. */
export interface Managed {
  pid: number;
  /** The last few kilobytes of its stdout and stderr, for error messages. */
  output(): string;
  /** How it exited (code or signal), or null while it runs. */
  exited(): string | null;
  /** SIGTERM, then SIGKILL after a grace period; resolves once the process has exited. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Stops every process still running when the bench exits, whatever the reason, then runs
 * `removeFiles` (synchronous, so that it can run on "exit" too).
 */
export function installCleanup(removeFiles: () => void): void {
  process.once("exit", () => {
    for (const child of children) child.kill("SIGKILL");
    removeFiles();
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping the processes it started\n`);
      void stopAll().finally(() => process.exit(130));
    });
  }
}

/** Stops every process still running. */
export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child)));
}

/** A TCP port free on the loopback interface right now. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Options of start. */
export interface StartOptions {
  env?: Record<string, string>;
  /** Resolves start once a line of output matches. */
  ready: RegExp;
}

/** Starts a long-running process and waits for its ready line; rejects (and kills it) if it exits first. */
export async function start(command: string, args: readonly string[], options: StartOptions): Promise<Managed> {
  const child = spawn(command, args, {
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  let tail = "";
  let resolveReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (resolveReady = resolve));
  const onData = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-8_192);
    if (options.ready.test(tail)) resolveReady();
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const managed: Managed = {
    pid: child.pid ?? -1,
    output: () => tail,
    exited: () => (child.exitCode !== null ? `exit code ${child.exitCode}` : child.signalCode),
    stop: () => stopChild(child),
  };
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code, signal) =>
      reject(new Error(`${command} exited (${signal ?? code}) before it was ready:\n${tail}`)),
    ),
  );
  exited.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${command} was not ready after ${START_TIMEOUT_MS} ms:\n${tail}`)), START_TIMEOUT_MS);
  });
  try {
    await Promise.race([ready, exited, timeout]);
    return managed;
  } catch (error) {
    await managed.stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** The outcome of a process run to its end. */
export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  seconds: number;
}

/** Runs a process to its end, forwarding its stderr lines with a prefix (ingestion progress). */
export async function run(command: string, args: readonly string[], env: Record<string, string>, prefix: string): Promise<RunResult> {
  const started = performance.now();
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-65_536);
    for (const line of chunk.toString().split("\n")) if (line.trim()) process.stderr.write(`${prefix}${line}\n`);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (exitCode) => resolve(exitCode));
  });
  children.delete(child);
  return { code, stdout, stderr, seconds: (performance.now() - started) / 1000 };
}

/** CPU seconds (user + system, all threads) a live process has used so far, from /proc/PID/stat. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** CPU seconds the whole machine has spent busy (every process, every core), from /proc/stat. */
export async function machineBusySeconds(): Promise<number> {
  const line = (await readFile("/proc/stat", "utf8")).split("\n", 1)[0]!;
  // cpu user nice system idle iowait irq softirq steal …: everything but idle and iowait is busy.
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / CLOCK_TICKS;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    children.delete(child);
    return;
  }
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}
