import type { Http2ServerRequest } from "node:http2";
import type { Readable } from "node:stream";
import type { DescMethod, DescService, MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { RequestGate } from "../../auth/request-gate.js";
import type { Caller } from "../../domain/caller.js";
import { tooLarge, toConnectError, type ErrorLogger } from "../../transport/errors.js";
import { unreadable } from "../../transport/malformed-request.js";
import { DeadlineExceeded, withDeadline } from "../../transport/deadline.js";

/*
 * relgraph's fast paths for unary calls (grpc-handler.ts, connect-handler.ts; FAST_PATHS) serve the common case of
 * gRPC and Connect without connect-es's per-call machinery. connect-es runs every call, unary ones
 * too, through a pipeline of async iterables with an abort controller per call: profiles
 * (`npm run bench -- --cpu-prof`) put that at 0.3 to 0.9 ms of CPU per call, several times what
 * the call itself costs. What the protocols share lives here: the same ApiKey gate and
 * implementation the connect-es routes use (app.ts), the client's deadline, and one translation of
 * every failure into the ConnectError the client sees, so codes and ErrorDetails are the same
 * whichever path serves a call (test/server/protocols.test.ts holds every protocol to it).
 */

/** Options of createUnaryCaller. */
export interface UnaryCallerOptions {
  service: DescService;
  /** The same implementation connect-es serves: one async method per RPC, by its local name, taking the request and its Caller. */
  impl: object;
  gate: RequestGate;
  log: ErrorLogger & { info(obj: object, msg?: string): void; child?(bindings: object): ErrorLogger };
  /** Largest request body accepted (MAX_REQUEST_BYTES). */
  maxRequestBytes: number;
  /** Told of every finished call: its method, "grpc" or "connect", its code, and its time in seconds. */
  observe?: (operation: string, protocol: string, code: string, seconds: number) => void;
}

/** One unary call as a protocol hands it over. */
export interface UnaryInvocation {
  method: DescMethod;
  /** The request path, for the log. */
  path: string;
  /** "grpc" or "connect", for metrics. */
  protocol: string;
  /** X-Request-Id, accepted or generated (transport/request-id.ts): echoed, and in the log line. */
  requestId: string;
  apiKey: string | undefined;
  /** The request's content-length header, when it has one: an oversized body is refused before it is read. */
  contentLength?: string | undefined;
  /** The protocol's deadline header as connect-es parses it, and the header's name for errors. */
  timeout: { timeoutMs?: number; error?: ConnectError };
  timeoutHeader: string;
  /** Reads and decodes the request message; throws transport/malformed-request.ts's errors when it is malformed. */
  readRequest(): Promise<unknown>;
}

/** Runs unary calls of one service. */
export interface UnaryCaller {
  /** Largest request body accepted; the protocols read bodies with readBody(stream, maxRequestBytes). */
  readonly maxRequestBytes: number;
  /** The unary method served at `path` ("/package.Service/Method"), if any. */
  methodAt(path: string | undefined): DescMethod | undefined;
  /**
   * The response, encoded by `encode`; rejects only with the ConnectError the client is to be sent,
   * whatever failed: reading, the gate, the implementation, or encoding the reply.
   */
  call<T>(invocation: UnaryInvocation, encode: (reply: MessageInitShape<DescMethod["output"]>) => T): Promise<T>;
}

/** Creates the unary caller of `service`. */
export function createUnaryCaller({ service, impl, gate, log, maxRequestBytes, observe }: UnaryCallerOptions): UnaryCaller {
  const methods = new Map<string, DescMethod>();
  for (const method of service.methods) {
    if (method.methodKind === "unary") methods.set(`/${service.typeName}/${method.name}`, method);
  }
  const implementation = impl as Record<string, (request: unknown, caller: Caller) => Promise<MessageInitShape<DescMethod["output"]>>>;

  async function run<T>({ method, apiKey, contentLength, timeout, timeoutHeader, readRequest }: UnaryInvocation, encode: (reply: MessageInitShape<DescMethod["output"]>) => T) {
    // The key is checked before the body is read, so a caller without one cannot make relgraph read
    // anything; and before anything else, as rpc/admission.ts checks it for connect-es: a caller
    // without one is told so, whatever else is wrong with the request.
    const { caller } = await gate.admit(apiKey);
    if (timeout.error) throw unreadable.malformedTimeout(timeoutHeader);
    if (contentLength !== undefined && Number(contentLength) > maxRequestBytes) throw tooLarge(maxRequestBytes);
    const request = await readRequest();
    return encode(await implementation[method.localName]!(request, caller));
  }

  return {
    maxRequestBytes,
    methodAt: (path) => (path === undefined ? undefined : methods.get(path)),
    async call(invocation, encode) {
      const started = performance.now();
      let code: Code | 0 = 0;
      try {
        // A malformed deadline has no timeoutMs: run() refuses it once the key is admitted.
        return await withDeadline(run(invocation, encode), invocation.timeout.timeoutMs);
      } catch (err) {
        // A deadline the client set, and a client that left, are the client's doing: CANCELLED is
        // what the call ended with, not a failure of relgraph's to log as one. Every other failure
        // speaks the contract's codes.
        const failure =
          err instanceof DeadlineExceeded || err instanceof ClientClosedRequest ? err.error : toConnectError(err, log.child?.({ reqId: invocation.requestId }) ?? log);
        code = failure.code;
        throw failure;
      } finally {
        const elapsed = performance.now() - started;
        log.info({ reqId: invocation.requestId, rpc: invocation.path, code, responseTime: elapsed }, "request completed");
        observe?.(invocation.path, invocation.protocol, String(code), elapsed / 1000);
      }
    },
  };
}

/**
 * Thrown when the client closes or resets its request before sending all of it: no one is left to
 * answer, so the call ends CANCELLED (in the log line and the metrics), not as an internal error
 * logged with its stack, which any client could cause at will by hanging up mid-upload.
 */
export class ClientClosedRequest extends Error {
  readonly error = new ConnectError("the client closed the stream before sending its request", Code.Canceled);
  constructor() {
    super("the client closed the stream before sending its request");
  }
}

/**
 * The whole body of a request stream; rejects when it closes first (ClientClosedRequest) or grows past `maxBytes`. An
 * oversized body stops being read at once: the caller answers, and the transport drops the rest.
 */
export function readBody(stream: Readable | Http2ServerRequest, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // An empty body can have ended already, while the ApiKey was being checked.
    if (stream.readableEnded) return resolve(Buffer.alloc(0));
    // So can the client's stream (reset, or its connection lost): its close was then emitted before
    // anyone listened, and would never come again, leaving the call pending for good.
    if (isClosed(stream)) return reject(new ClientClosedRequest());
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        stream.off("data", onData);
        stream.pause();
        chunks.length = 0;
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    // Every stream closes, after its answer too: the listeners go once the body is read, or each
    // call would build (and throw away) an Error with its stack, a visible share of a gRPC call's CPU.
    const onEnd = () => {
      stream.off("close", onClose);
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onClose = () => {
      stream.off("end", onEnd);
      reject(new ClientClosedRequest());
    };
    stream.on("data", onData);
    stream.once("end", onEnd);
    stream.once("close", onClose);
  });
}

/** Whether the request can deliver no more of its body: it, or the HTTP/2 stream under a compatibility request, is destroyed. */
function isClosed(stream: Readable | Http2ServerRequest): boolean {
  return stream.destroyed || (stream as Partial<Http2ServerRequest>).stream?.destroyed === true;
}
