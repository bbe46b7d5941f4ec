import net from "node:net";

/*
 * A minimal HTTP/1.1 keep-alive client for the paced open loop. node:http costs the load generator
 * tens of microseconds per request, which at the peer's rates would make the client the bottleneck
 * and its queueing the measured latency. This one writes prebuilt request bytes and reads only the
 * status line and Content-Length (or the end of a chunked body): a few microseconds per request.
 * Requests are encoded once and reused, bodies included (Connect unary POSTs).
 * One request per connection at a time; requests beyond the pool wait in a FIFO.
 */

/** One HTTP request of a measurement: a REST GET, or a POST such as a Connect unary call. */
export interface HttpRequest {
  method: "GET" | "POST";
  path: string;
  body?: Buffer;
}

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
const READ_BUFFER_BYTES = 64 * 1024;
/** Room for most answers; a longer one grows its connection's buffer once. */
const ANSWER_BUFFER_BYTES = 16 * 1024;

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
    private current: Pending | null = null;
    /** The answer read so far: answer.subarray(0, filled). Reused for every answer on this connection. */
    private answer: Buffer = Buffer.allocUnsafe(ANSWER_BUFFER_BYTES);
    private filled = 0;
    // Socket reads land in one buffer reused for every read (`onread`). With a fresh Buffer per read
    // (and a concatenation per partial answer), V8 ran a full mark-compact in this process about every
    // 0.8 s at part load (--trace-gc), none for the peer's short answers: pauses of 4–12 ms that the
    // latency of every request in flight then showed. Reading this way, one a window remains.
    private readonly readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    readonly socket = net.connect({
      host: hostname,
      port: Number(port),
      noDelay: true,
      onread: { buffer: this.readBuffer, callback: (bytes) => this.onRead(bytes) },
    });

    constructor() {
      this.socket.on("error", (error) => this.fail(error));
      this.socket.on("close", () => this.fail(new Error("connection closed")));
    }

    send(pending: Pending): void {
      this.current = pending;
      this.socket.write(pending.request);
    }

    /** Takes in `bytes` new bytes of readBuffer; true: keep reading. */
    private onRead(bytes: number): boolean {
      if (this.filled + bytes > this.answer.length) {
        const grown = Buffer.allocUnsafe(Math.max(this.answer.length * 2, this.filled + bytes));
        this.answer.copy(grown, 0, 0, this.filled);
        this.answer = grown;
      }
      this.readBuffer.copy(this.answer, this.filled, 0, bytes);
      this.filled += bytes;
      const received = this.answer.subarray(0, this.filled);
      const end = received.indexOf(HEADER_END);
      if (end < 0 || !this.current) return true;
      const header = received.toString("latin1", 0, end);
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(header);
      const complete = length
        ? received.length >= end + 4 + Number(length[1])
        : received.subarray(received.length - CHUNKED_END.length).equals(CHUNKED_END);
      if (!complete) return true;
      const status = Number(header.slice(9, 12));
      const done = this.current;
      this.current = null;
      this.filled = 0;
      if (status === 200) done.resolve();
      else done.reject(new Error(`HTTP ${status}`));
      idle.push(this);
      dispatch();
      return true;
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
