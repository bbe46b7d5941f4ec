import type { DescMethod } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { InvalidArgumentError, type RelgraphError } from "../domain/errors.js";
import { tooLarge } from "./errors.js";

/*
 * What relgraph tells a client whose RPC request it cannot read: the envelope, the message or a
 * protocol header is malformed. Two readers meet such requests, the fast paths (rpc/unary/) and
 * connect-es (FAST_PATHS=off, and every request the fast paths leave to it), and the client is
 * told the same thing, in the contract's code 11600, whichever read it.
 */

/** The contract's words for each way a request cannot be read. */
export const unreadable = {
  noMessage: () => new InvalidArgumentError("the request carries no message"),
  notOneMessage: () => new InvalidArgumentError("a unary request must carry exactly one message"),
  compressedWithoutEncoding: () => new InvalidArgumentError("the request message is flagged compressed, but no grpc-encoding was given"),
  malformedMessage: (method: DescMethod) => new InvalidArgumentError(`the request is not a valid ${method.input.typeName} message`),
  malformedTimeout: (header: string) => new InvalidArgumentError(`${header} is malformed`),
};

/** Where connect-es refused a request, for translateConnectEsRefusal. */
export interface RefusalContext {
  method: DescMethod;
  /** The deadline header of the request's protocol: grpc-timeout or connect-timeout-ms. */
  timeoutHeader: string;
  maxRequestBytes: number;
}

/**
 * The contract's error for a refusal connect-es wrote itself, before relgraph's interceptors ran
 * (reading, decompressing or parsing the request), known by its code and message: connect-es says
 * "parse binary: premature EOF" as INTERNAL, for example, where the contract says 11600. Returns
 * null for what is no refusal of the request (a deadline, a cancelled call), which stays as it is.
 * Anything unrecognised is the client's mistake too (11600), in connect-es's words, except INTERNAL,
 * which stays an internal error (50000). Pinned to connect-es 2.1.2's messages; the differential
 * test (test/server/differential.test.ts) notices when they change.
 */
export function translateConnectEsRefusal(code: Code, message: string, context: RefusalContext): RelgraphError | Error | null {
  if (code === Code.DeadlineExceeded || code === Code.Canceled || code === Code.Aborted) return null;
  if (code === Code.ResourceExhausted) return tooLarge(context.maxRequestBytes);
  if (message.startsWith("parse binary:")) return unreadable.malformedMessage(context.method);
  if (message.startsWith("protocol error: missing input message")) return unreadable.noMessage();
  if (
    message === "protocol error: incomplete envelope" ||
    message.startsWith("protocol error: received extra input message") ||
    message.startsWith("protocol error: promised ")
  ) {
    return unreadable.notOneMessage();
  }
  if (message.startsWith("received compressed envelope, but do not know how to decompress")) return unreadable.compressedWithoutEncoding();
  if (/^protocol error: invalid (grpc|connect) timeout value|^timeout \d+ms must be <=/.test(message)) return unreadable.malformedTimeout(context.timeoutHeader);
  if (code === Code.Internal) return new Error(`connect-es failed a call: ${message}`);
  // Left: JSON that is no request message (protobuf-es's or JSON.parse's words), and protocol
  // mistakes such as an unknown compression, which connect-es words well.
  if (code === Code.InvalidArgument && !/^(missing required|connect-protocol-version|unexpected end flag)/.test(message)) {
    return unreadable.malformedMessage(context.method);
  }
  return new InvalidArgumentError(message);
}
