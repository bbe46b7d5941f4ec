import { spawn, type ChildProcess } from "node:child_process";
import { connect } from "node:net";
import { createInterface } from "node:readline";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RELGRAPH_CLI } from "../support/keynodes.js";

/**
 * A connection reset by its client before it has told its protocol (no byte yet, or part of the h2c
 * preface) is dropped, and the server goes on: such a socket belongs to neither the HTTP/1.1 nor the
 * HTTP/2 server yet (transport/one-port.ts), and its error once reached no listener and ended the
 * process. `relgraph serve` runs as a process, as operators run it, so that a crash shows as an exit.
 */

let child: ChildProcess;
let url: string;
let port: number;
let output: string[];
let exited: Promise<number | null>;

// A server of its own for each case: one that a case brought down says nothing of the next.
beforeEach(async () => {
  output = [];
  child = spawn(process.execPath, [RELGRAPH_CLI, "serve"], {
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  createInterface({ input: child.stderr! }).on("line", (line) => output.push(line));
  url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      output.push(line);
      const match = /^relgraph listening on (\S+) /.exec(line);
      if (match) resolve(match[1]!);
    });
    void exited.then((code) => reject(new Error(`serve exited with ${code}:\n${output.join("\n")}`)));
  });
  port = Number(new URL(url).port);
});

afterEach(async () => {
  if (child.exitCode === null) child.kill("SIGTERM");
  await exited;
});

/**
 * Opens a connection, sends `bytes` (maybe none), then resets it (RST, not FIN) once the server has
 * read them. Settles either way: a server that is gone refuses the connection, and the check after says so.
 */
function resetAfter(bytes: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1", () => {
      if (bytes !== "") socket.write(bytes);
      setTimeout(() => {
        socket.resetAndDestroy();
        resolve();
      }, 100);
    });
    socket.once("error", () => resolve());
  });
}

describe("a connection reset before it names its protocol", () => {
  it.each([
    ["before its first byte", ""],
    ["in the middle of the h2c preface", "PRI * HTTP/2.0\r\n"],
  ])("is dropped %s, and the server keeps answering", async (_when, bytes) => {
    for (let i = 0; i < 3; i++) await resetAfter(bytes);
    // Let the server read the resets before it is asked anything.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const health = await fetch(`${url}/healthz`).then(
      (response) => response.status,
      (error: Error) => `${error.message}; the server said:\n${output.join("\n")}`,
    );
    expect({ health, exitCode: child.exitCode }).toEqual({ health: 200, exitCode: null });
  });
});
