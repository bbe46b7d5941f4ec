import net from "node:net";
import type { HttpRequest } from "./http-load.js";

/*
 * A minimal HTTP/1.1 keep-alive client for the paced open loop. node:http costs the load generator
 * tens of microseconds per request, which at the peer's rates would make the client the bottleneck
 * and its queueing the measured latency. This one writes prebuilt request bytes and reads only the
 * status line and Content-Length (or the end of a chunked body): a few microseconds per request.
 * Requests are encoded once and reused, bodies included (Connect unary POSTs).
 * One request per connection at a time; requests beyond the pool wait in a FIFO.
 */

/** Requests over a bounded pool of keep-alive connections. */
export interface HttpPacerClient {
  /** Resolves on a 200 answer, rejects on any other status or a connection failure. */
  send(request: HttpRequest): Promise<void>;
  close(): void;
}

interface Pending {
  request: Buffer;
  resolve: () => void;
  reject: (error: Error) => void;
}

const HEADER_END = Buffer.from("\r\n\r\n");
const CHUNKED_END = Buffer.from("\r\n0\r\n\r\n");

/** Creates the client; connections open lazily, at most `connections` of them. */
export function createHttpPacerClient(baseUrl: string, headers: Record<string, string>, connections: number): HttpPacerClient {
  const { hostname, port } = new URL(baseUrl);
  const head = Object.entries({ Host: `${hostname}:${port}`, ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  const encoded = new WeakMap<HttpRequest, Buffer>();
  const encode = ({ method, path, body }: HttpRequest) =>
    Buffer.concat([Buffer.from(`${method} ${path} HTTP/1.1\r\n${head}${body ? `Content-Length: ${body.length}\r\n` : ""}\r\n`, "latin1"), body ?? Buffer.alloc(0)]);
  const idle: Connection[] = [];
  const queue: Pending[] = [];
  const all = new Set<Connection>();
  let closed = false;

  const dispatch = () => {
    while (queue.length > 0) {
      let connection = idle.pop();
      if (!connection) {
        if (all.size >= connections) return;
        connection = open();
      }
      connection.send(queue.shift()!);
    }
  };

  class Connection {
    readonly socket = net.connect({ host: hostname, port: Number(port), noDelay: true });
    private current: Pending | null = null;
    private buffer: Buffer = Buffer.alloc(0);

    constructor() {
      this.socket.on("data", (chunk: Buffer) => this.onData(chunk));
      this.socket.on("error", (error) => this.fail(error));
      this.socket.on("close", () => this.fail(new Error("connection closed")));
    }

    send(pending: Pending): void {
      this.current = pending;
      this.socket.write(pending.request);
    }

    private onData(chunk: Buffer): void {
      this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
      const end = this.buffer.indexOf(HEADER_END);
      if (end < 0 || !this.current) return;
      const header = this.buffer.subarray(0, end).toString("latin1");
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(header);
      const complete = length
        ? this.buffer.length >= end + 4 + Number(length[1])
        : this.buffer.subarray(this.buffer.length - CHUNKED_END.length).equals(CHUNKED_END);
      if (!complete) return;
      const status = Number(header.slice(9, 12));
      const done = this.current;
      this.current = null;
      this.buffer = Buffer.alloc(0);
      if (status === 200) done.resolve();
      else done.reject(new Error(`HTTP ${status}`));
      idle.push(this);
      dispatch();
    }

    private fail(error: Error): void {
      all.delete(this);
      const index = idle.indexOf(this);
      if (index >= 0) idle.splice(index, 1);
      this.current?.reject(error);
      this.current = null;
      this.socket.destroy();
      if (!closed) dispatch();
    }
  }

  const open = () => {
    const connection = new Connection();
    all.add(connection);
    return connection;
  };

  return {
    send(request) {
      let bytes = encoded.get(request);
      if (!bytes) {
        bytes = encode(request);
        encoded.set(request, bytes);
      }
      const message = bytes;
      return new Promise<void>((resolve, reject) => {
        queue.push({ request: message, resolve, reject });
        dispatch();
      });
    },
    close() {
      closed = true;
      for (const pending of queue.splice(0)) pending.reject(new Error("client closed"));
      for (const connection of all) connection.socket.destroy();
    },
  };
}
