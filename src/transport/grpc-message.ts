import type { Http2ServerRequest, Http2ServerResponse, OutgoingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { ConnectError } from "@connectrpc/connect";
import { contentTypeProto, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { REQUEST_ID_HEADER } from "./request-id.js";
import { closeUnreadStream } from "./refused-upload.js";

/**
 * Re-encodes the `grpc-message` header of gRPC responses the way the gRPC spec says: only `%` and
 * bytes outside printable ASCII are percent-encoded. connect-es encodes it with encodeURIComponent,
 * and @grpc/grpc-js decodes it with decodeURI, which leaves `%2C`, `%3B`, `%3A`… in place, so grpc-js
 * clients would read "limit%2C cursor" instead of the error's desc. Both encodings decode the same
 * under a full percent-decoder, so every other client is unaffected.
 */
export function specGrpcMessage(req: Http2ServerRequest, res: Http2ServerResponse): void {
  const contentType = req.headers["content-type"] ?? "";
  if (!contentType.startsWith("application/grpc") || contentType.startsWith("application/grpc-web")) return;
  const writeHead = res.writeHead;
  // Trailers-only responses (an error before any message) carry grpc-message in the headers.
  res.writeHead = function (this: Http2ServerResponse, status: number, ...rest: unknown[]) {
    for (const arg of rest) if (typeof arg === "object" && arg !== null) reencode(arg as OutgoingHttpHeaders);
    return (writeHead as (...args: unknown[]) => Http2ServerResponse).call(this, status, ...rest);
  } as typeof res.writeHead;
  const addTrailers = res.addTrailers;
  res.addTrailers = function (this: Http2ServerResponse, trailers: OutgoingHttpHeaders) {
    reencode(trailers);
    addTrailers.call(this, trailers);
  };
}

function reencode(headers: OutgoingHttpHeaders): void {
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (name.toLowerCase() !== "grpc-message" || typeof value !== "string") continue;
    let text: string;
    try {
      text = decodeURIComponent(value);
    } catch {
      continue;
    }
    headers[name] = encodeGrpcMessage(text);
  }
}

/** `text` as a grpc-message value: `%` and bytes outside printable ASCII percent-encoded, as the gRPC spec says. */
export function encodeGrpcMessage(text: string): string {
  let encoded = "";
  for (const byte of Buffer.from(text, "utf8")) {
    encoded += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return encoded;
}

/**
 * A trailers-only response: connect-es's own setTrailerStatus builds grpc-status and
 * grpc-status-details-bin, and grpc-message is encoded as the gRPC spec says.
 */
export function respondGrpcError(stream: ServerHttp2Stream, error: ConnectError, requestId: string): void {
  if (stream.destroyed || stream.closed) return;
  const headers: OutgoingHttpHeaders = { ":status": 200, "content-type": contentTypeProto, [REQUEST_ID_HEADER]: requestId };
  setTrailerStatus(new Headers(), error).forEach((value, name) => {
    headers[name] = value;
  });
  headers["grpc-message"] = encodeGrpcMessage(error.rawMessage);
  stream.respond(headers, { endStream: true });
  closeUnreadStream(stream);
}
