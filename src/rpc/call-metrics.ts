import { Code } from "@connectrpc/connect";
import { createAsyncIterable, readAllBytes, type UniversalHandler, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeFromString } from "@connectrpc/connect/protocol-connect";
import { trailerFlag, trailerParse } from "@connectrpc/connect/protocol-grpc-web";

/** Counts one finished call: the RPC's path, its protocol, and its status code as a number (0 is OK). */
export type ObserveCall = (operation: string, protocol: string, code: string, seconds: number) => void;

/**
 * The handler, counting each call by the status code it answers, as the fast paths count theirs
 * (unary/unary-call.ts). Fastify sees only the HTTP status, which for gRPC and gRPC-Web is 200
 * whatever the call's outcome: the code is read from the answer itself, in each protocol's form.
 * Replies here are unary and at most tens of KB, so a body read whole to find its code costs little.
 */
export function withCallMetrics(handler: UniversalHandler, observe: ObserveCall): UniversalHandler {
  const wrapped = async (request: Parameters<UniversalHandler>[0]): Promise<UniversalServerResponse> => {
    const started = performance.now();
    const protocol = protocolOfContentType(request.header.get("content-type") ?? "");
    let code: StatusCode = Code.Internal;
    try {
      // connect-es answers failures as responses; a throw is a fault of the server's, left to Fastify.
      const outcome = await outcomeOf(await handler(request), protocol);
      // A client that hung up mid-request leaves connect-es an unreadable body, which it answers
      // INTERNAL to nobody: the call ended CANCELLED, as the fast paths count it (unary/unary-call.ts).
      code = request.signal.aborted ? Code.Canceled : outcome.code;
      return outcome.answer;
    } finally {
      observe(handler.requestPath, protocol, String(code), (performance.now() - started) / 1000);
    }
  };
  return Object.assign(wrapped, handler);
}

/** The protocol label of an RPC, by its content type, as the fast paths name them. */
export function protocolOfContentType(contentType: string): "grpc-web" | "grpc" | "connect" {
  if (contentType.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType.startsWith("application/grpc")) return "grpc";
  return "connect";
}

/** A call's status code: connect-es's Code has no member for OK, which is 0 on the wire. */
type StatusCode = Code | 0;

async function outcomeOf(response: UniversalServerResponse, protocol: string): Promise<{ answer: UniversalServerResponse; code: StatusCode }> {
  if (protocol === "grpc") {
    // connect-es has filled a unary call's trailers by the time its handler resolves.
    return { answer: response, code: Number(response.trailer?.get("grpc-status") ?? Code.Unknown) };
  }
  if (protocol === "connect" && response.status === 200) return { answer: response, code: 0 };
  if (!response.body) return { answer: response, code: Code.Unknown };
  const body = await readAllBytes(response.body, Number.MAX_SAFE_INTEGER);
  const answer = { ...response, body: createAsyncIterable([body]) };
  return { answer, code: protocol === "grpc-web" ? grpcWebStatus(body) : connectErrorCode(body) };
}

/** The grpc-status of a gRPC-Web body's trailer envelope, which follows any message envelope. */
function grpcWebStatus(body: Uint8Array): StatusCode {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  for (let at = 0; at + 5 <= body.length; ) {
    const length = view.getUint32(at + 1);
    if ((body[at]! & trailerFlag) === trailerFlag) {
      return Number(trailerParse(body.subarray(at + 5, at + 5 + length)).get("grpc-status") ?? Code.Unknown);
    }
    at += 5 + length;
  }
  return Code.Unknown;
}

/** The code of a Connect error body (`{"code":"invalid_argument",...}`). */
function connectErrorCode(body: Uint8Array): Code {
  try {
    const parsed = JSON.parse(new TextDecoder().decode(body)) as { code?: unknown };
    return (typeof parsed.code === "string" && codeFromString(parsed.code)) || Code.Unknown;
  } catch {
    return Code.Unknown;
  }
}
