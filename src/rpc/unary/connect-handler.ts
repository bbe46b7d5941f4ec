import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import { create, fromBinary, fromJsonString, toJsonString, type DescMethod } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import {
  codeToHttpStatus,
  contentTypeUnaryJson,
  contentTypeUnaryProto,
  errorToJsonBytes,
  parseContentType,
  parseTimeout,
} from "@connectrpc/connect/protocol-connect";
import { API_KEY_HEADER } from "../../auth/request-gate.js";
import type { RequestClaim } from "../../transport/one-port.js";
import { REQUEST_ID_HEADER, requestIdOf } from "../../transport/request-id.js";
import { endUnreadRequest } from "../../transport/refused-upload.js";
import { unreadable } from "../../transport/malformed-request.js";
import { toBinaryFast } from "../../transport/protobuf-binary.js";
import { headerValue } from "../../transport/header-value.js";
import { readBody, type UnaryCaller } from "./unary-call.js";

/**
 * The common case of the Connect protocol, served without connect-es's per-call machinery (see
 * ../unary-call.ts for why): a unary POST with a binary or JSON message, uncompressed, over HTTP/1.1 or
 * HTTP/2. Everything else (GET requests, compressed bodies, other protocol versions, streaming
 * content types) is left to Fastify and connect-es. Success is the bare message; failure is
 * connect-es's own JSON error body with the status it maps the code to.
 */
export function createConnectUnaryHandler(caller: UnaryCaller): RequestClaim {
  return (req, res) => {
    const method = req.method === "POST" ? caller.methodAt(req.url) : undefined;
    const type = parseContentType(headerValue(req.headers["content-type"]) ?? null);
    const encoding = headerValue(req.headers["content-encoding"]);
    const version = headerValue(req.headers["connect-protocol-version"]);
    if (
      method === undefined ||
      type === undefined ||
      type.stream ||
      (encoding !== undefined && encoding !== "identity") ||
      (version !== undefined && version !== "1")
    ) {
      return false;
    }
    const binary = type.binary;
    const timeout = headerValue(req.headers["connect-timeout-ms"]);
    const requestId = requestIdOf(req.headers);
    caller
      .call(
        {
          method,
          path: req.url!,
          requestId,
          protocol: "connect",
          apiKey: headerValue(req.headers[API_KEY_HEADER]),
          contentLength: headerValue(req.headers["content-length"]),
          timeout: timeout === undefined ? {} : parseTimeout(timeout, Number.MAX_SAFE_INTEGER),
          timeoutHeader: "connect-timeout-ms",
          readRequest: async () => decodeRequest(method, await readBody(req, caller.maxRequestBytes), binary),
        },
        (reply) => (binary ? toBinaryFast(method.output, reply) : toJsonString(method.output, create(method.output, reply))),
      )
      .then(
        (body) => respond(res, requestId, 200, binary ? contentTypeUnaryProto : contentTypeUnaryJson, body),
        (error: ConnectError) => {
          endUnreadRequest(req, res);
          respond(res, requestId, codeToHttpStatus(error.code), contentTypeUnaryJson, errorToJsonBytes(error, {}));
        },
      )
      // The connection can close before the answer is written; it then has nowhere to go.
      .catch(() => req.destroy());
    return true;
  };
}

/** Unknown JSON fields are ignored, as connect-es ignores them, and as binary Protobuf and REST's query strings do. */
const JSON_READ_OPTIONS = { ignoreUnknownFields: true };

function decodeRequest(method: DescMethod, body: Buffer, binary: boolean): unknown {
  try {
    return binary ? fromBinary(method.input, body) : fromJsonString(method.input, body.toString("utf8"), JSON_READ_OPTIONS);
  } catch {
    throw unreadable.malformedMessage(method);
  }
}

function respond(res: ServerResponse | Http2ServerResponse, requestId: string, status: number, contentType: string, body: Uint8Array | string): void {
  // Both response kinds take the same calls; TypeScript cannot call a union of their overloads.
  const response = res as ServerResponse;
  response.writeHead(status, { "content-type": contentType, [REQUEST_ID_HEADER]: requestId });
  response.end(body);
}
