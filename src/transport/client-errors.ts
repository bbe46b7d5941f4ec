import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { InvalidArgumentError } from "../domain/errors.js";
import { errorEnvelope, toPublicError } from "./errors.js";

/** What each parser-level failure is answered with; the rest are 400. */
const CLIENT_ERRORS: Record<string, { status: number; desc: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, desc: "the request's headers (URL included) are larger than the server accepts" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, desc: "the request was not received in time" },
};

/**
 * Answers requests Node's HTTP/1.1 parser refuses before any route sees them (headers too large, a
 * request too slow, malformed bytes) in the REST envelope, as an invalid argument: the path is unknown at
 * that point, so every such answer is an envelope, and an /api/v1/ client always gets one.
 */
export function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const { status, desc } = CLIENT_ERRORS[err.code ?? ""] ?? { status: 400, desc: "malformed HTTP request" };
  if (socket.writable) {
    const body = JSON.stringify(errorEnvelope(toPublicError(new InvalidArgumentError(desc))));
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
