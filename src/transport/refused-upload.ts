import type { IncomingMessage, ServerResponse } from "node:http";
import { constants, type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Stream } from "node:http2";

/*
 * A request refused before its body was read (no ApiKey, too large) is answered at once; the client
 * may still be uploading. Left alone, HTTP/1.1 keeps the connection to drain the rest and an HTTP/2
 * stream stays half-open until the client gives up: a stalled client would hold both. These end the
 * exchange once the answer is out, as HTTP allows: `Connection: close`, or RST_STREAM(NO_ERROR).
 */

/** Call before writing the answer of a request whose body may not have been read to its end. */
export function endUnreadRequest(req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void {
  if (req.readableEnded) return;
  const stream = (req as Partial<Http2ServerRequest>).stream;
  if (stream !== undefined) res.once("finish", () => closeUnreadStream(stream));
  else if (!res.headersSent) (res as ServerResponse).setHeader("connection", "close");
}

/** Call after answering on a raw HTTP/2 stream whose body may not have been read to its end. */
export function closeUnreadStream(stream: ServerHttp2Stream): void {
  if (!stream.readableEnded && !stream.destroyed) stream.close(constants.NGHTTP2_NO_ERROR);
}
