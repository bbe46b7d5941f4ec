import http from "node:http";
import http2 from "node:http2";
import type { Socket } from "node:net";
import { specGrpcMessage } from "./grpc-message.js";

/** The client connection preface that starts every HTTP/2 prior-knowledge (h2c) connection. */
const H2C_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** Limits that keep slow or idle clients from holding connections (README, "Operate"). */
export interface SlowClientLimits {
  /** A connection must send its request's headers (or its h2c preface) within this. */
  headersTimeoutMs: number;
  /** An HTTP/1.1 request must arrive whole, and an HTTP/2 stream stay active, within this. */
  requestTimeoutMs: number;
  /** An idle HTTP/1.1 keep-alive connection or HTTP/2 session is closed after this. */
  idleTimeoutMs: number;
  /** Streams one HTTP/2 session may have open at once. */
  maxConcurrentStreams: number;
}

/** The defaults of SlowClientLimits, also those of the configuration. */
export const DEFAULT_SLOW_CLIENT_LIMITS: Readonly<SlowClientLimits> = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  // Longer than the usual load balancer's 60 s, so that the balancer closes idle connections first.
  idleTimeoutMs: 72_000,
  maxConcurrentStreams: 100,
};

/** Options of the one-port server. */
export interface OnePortServerOptions {
  /** Timeouts and stream limits; DEFAULT_SLOW_CLIENT_LIMITS by default. */
  limits?: Partial<SlowClientLimits>;
  /** How long in-flight HTTP/1.1 requests and HTTP/2 streams may finish on close before their connections are destroyed. */
  closeGraceMs?: number;
  /** Offered each new HTTP/2 stream before the handler; a stream it claims never reaches the handler. */
  claimStream?: Http2StreamClaim;
  /** Offered each HTTP/1.1 request and unclaimed HTTP/2 stream before the handler, likewise. */
  claimRequest?: RequestClaim;
}

/**
 * Offered every new HTTP/2 stream before the handler sees it: true means the stream is served by the
 * claimant, false leaves it untouched for the handler.
 */
export type Http2StreamClaim = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;

/** Offered every HTTP/1.1 request and unclaimed HTTP/2 request before the handler, likewise. */
export type RequestClaim = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => boolean;

/** A request handler that serves both HTTP/1.1 and HTTP/2 compatibility requests. */
export type OnePortHandler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

/**
 * Creates an HTTP/1.1 server that also speaks h2c on the same port, for Fastify's `serverFactory`.
 *
 * Fastify's `http2: true` serves h2c only, and `allowHTTP1` needs TLS, so the protocol is chosen per
 * connection instead: the first bytes are sniffed for the h2c preface, and the socket is handed to
 * an HTTP/2 server or to the HTTP/1.1 server's own connection handling. Fastify gets a real
 * http.Server (listen, address, close), and close() first ends open HTTP/2 sessions: the
 * http.Server counts their sockets too, so without that it waits forever on an idle gRPC channel.
 */
export function createOnePortServer(handler: OnePortHandler, options: OnePortServerOptions = {}): http.Server {
  const closeGraceMs = options.closeGraceMs ?? 2_000;
  const claimRequest = options.claimRequest ?? (() => false);
  const limits = { ...DEFAULT_SLOW_CLIENT_LIMITS, ...options.limits };
  const h1 = http.createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.idleTimeoutMs,
      // Node checks the two timeouts above only this often (30 s by default).
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, limits.headersTimeoutMs / 2)),
    },
    (req, res) => {
      if (!claimRequest(req, res)) handler(req, res);
    },
  );
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: limits.maxConcurrentStreams } }, (req, res) => {
    if (claimRequest(req, res)) return;
    specGrpcMessage(req, res);
    handler(req, res);
  });
  if (options.claimStream) {
    // The request handler is reached through Node's compatibility layer, which listens for
    // "stream"; a claimed stream must not also become a request, so the claim goes first.
    const claim = options.claimStream;
    const compatibility = h2.listeners("stream") as ((...args: unknown[]) => void)[];
    h2.removeAllListeners("stream");
    h2.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, ...rest: unknown[]) => {
      if (claim(stream, headers)) return;
      for (const listener of compatibility) listener.call(h2, stream, headers, ...rest);
    });
  }
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    // GOAWAY, not a reset: a client with calls in flight finishes them.
    session.setTimeout(limits.idleTimeoutMs, () => session.close());
  });
  // A stream is "active" while frames flow either way; one that stalls is cancelled, whoever stalled.
  h2.prependListener("stream", (stream: http2.ServerHttp2Stream) => {
    stream.setTimeout(limits.requestTimeoutMs, () => stream.close(http2.constants.NGHTTP2_CANCEL));
  });

  // Sockets whose protocol is not known yet belong to neither server, so close() must end them itself.
  const undecided = new Set<Socket>();
  const h1ConnectionListeners = h1.listeners("connection") as ((socket: Socket) => void)[];
  h1.removeAllListeners("connection");
  h1.on("connection", (socket: Socket) => {
    undecided.add(socket);
    socket.once("close", () => undecided.delete(socket));
    // Until its first bytes tell the protocol, no server's timeouts watch the socket: this one does.
    socket.setTimeout(limits.headersTimeoutMs, () => socket.destroy());
    // Nor does any server listen for its errors: a client that resets the connection before naming
    // its protocol would otherwise raise an unhandled 'error' and end the process.
    const dropOnError = () => socket.destroy();
    socket.on("error", dropOnError);
    sniff(socket, (isH2c) => {
      socket.setTimeout(0);
      socket.off("error", dropOnError);
      undecided.delete(socket);
      if (isH2c) {
        // Http2Session reads what is already buffered on the socket itself, on the next tick.
        h2.emit("connection", socket);
      } else {
        for (const listener of h1ConnectionListeners) listener.call(h1, socket);
        // The HTTP/1 parser reads the handle directly; resuming replays the sniffed bytes first.
        socket.resume();
      }
    });
  });

  const closeH1 = h1.close.bind(h1);
  h1.close = ((callback?: (err?: Error) => void) => {
    for (const socket of undecided) socket.destroy();
    for (const session of sessions) session.close();
    const force = setTimeout(() => {
      for (const session of sessions) session.destroy();
      // Node stops timing out HTTP/1.1 requests once its server closes, so a stalled upload would
      // otherwise hold close() forever.
      h1.closeAllConnections();
    }, closeGraceMs);
    force.unref();
    return closeH1((err?: Error) => {
      clearTimeout(force);
      callback?.(err);
    });
  }) as typeof h1.close;
  return h1;
}

/**
 * Reads just enough of the first bytes to tell h2c from HTTP/1.x, then puts them back. Any byte that
 * differs from the preface decides HTTP/1.x; a socket that closes first is simply dropped.
 */
function sniff(socket: Socket, decide: (isH2c: boolean) => void): void {
  let seen = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    seen = Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, H2C_PREFACE.length);
    const matches = seen.subarray(0, n).equals(H2C_PREFACE.subarray(0, n));
    if (matches && n < H2C_PREFACE.length) return; // need more bytes to be sure
    socket.off("data", onData);
    socket.off("close", onClose);
    socket.pause();
    socket.unshift(seen);
    decide(matches);
  };
  const onClose = () => socket.off("data", onData);
  socket.on("data", onData);
  socket.once("close", onClose);
}
