import { Code, ConnectError } from "@connectrpc/connect";
import { createAsyncIterable, encodeEnvelope, readAllBytes, type UniversalHandler, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, errorFromJsonBytes, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { findTrailerError, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerParse, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import { toConnectError, type ErrorLogger } from "../transport/errors.js";
import { translateConnectEsRefusal } from "../transport/malformed-request.js";

/*
 * connect-es reads, decompresses and parses a request before any interceptor runs, and answers what
 * fails there with errors of its own: no ErrorDetail, and codes the contract does not use (malformed
 * protobuf is INTERNAL). The wrapper below finds such answers of a RelationService handler and
 * rewrites them into the contract's (transport/malformed-request.ts), in each protocol's own form,
 * written with connect-es's own encoders. Errors of the implementation always carry an ErrorDetail
 * (the error interceptor, interceptors.ts), so an answer without one is connect-es's own.
 */

/** Options of withContractRefusals. */
export interface ContractRefusalOptions {
  maxRequestBytes: number;
  log: ErrorLogger;
}

/** The handler, answering what connect-es refuses in the contract's codes and words. */
export function withContractRefusals(handler: UniversalHandler, { maxRequestBytes, log }: ContractRefusalOptions): UniversalHandler {
  const method = handler.method;
  const wrapped = async (request: Parameters<UniversalHandler>[0]): Promise<UniversalServerResponse> => {
    const response = await handler(request);
    const contentType = request.header.get("content-type") ?? "";
    const grpcWeb = contentType.startsWith("application/grpc-web");
    const grpc = !grpcWeb && contentType.startsWith("application/grpc");
    const translate = (error: ConnectError): ConnectError | null => {
      // A client that hung up mid-request left connect-es an unreadable body ("internal error"):
      // nobody reads the answer, and it is no failure of relgraph's to log as one.
      if (error.details.length > 0 || request.signal.aborted) return null;
      const timeoutHeader = grpc || grpcWeb ? "grpc-timeout" : "connect-timeout-ms";
      const contractError = translateConnectEsRefusal(error.code, error.rawMessage, { method, timeoutHeader, maxRequestBytes });
      return contractError === null ? null : toConnectError(contractError, log);
    };
    if (grpc) return rewriteGrpc(response, translate);
    if (grpcWeb) return rewriteGrpcWeb(response, translate);
    return rewriteConnect(response, translate);
  };
  return Object.assign(wrapped, handler);
}

type Translate = (error: ConnectError) => ConnectError | null;

/** gRPC: the status is in the trailers, which connect-es has filled by the time a unary call's handler resolves. */
function rewriteGrpc(response: UniversalServerResponse, translate: Translate): UniversalServerResponse {
  const trailer = response.trailer;
  const error = trailer && findTrailerError(trailer);
  const replacement = error && translate(error);
  if (!trailer || !replacement) return response;
  for (const name of ["grpc-status", "grpc-message", "grpc-status-details-bin"]) trailer.delete(name);
  setTrailerStatus(trailer, replacement);
  return response;
}

/** gRPC-Web: the status is a trailer envelope in the body; an answer without a message is that envelope alone. */
async function rewriteGrpcWeb(response: UniversalServerResponse, translate: Translate): Promise<UniversalServerResponse> {
  if (!response.body) return response;
  const body = await readAllBytes(response.body, Number.MAX_SAFE_INTEGER);
  const onlyTrailer = body.length >= 5 && body[0] === trailerFlag && new DataView(body.buffer, body.byteOffset).getUint32(1) === body.length - 5;
  const error = onlyTrailer ? findTrailerError(trailerParse(body.subarray(5))) : undefined;
  const replacement = error && translate(error);
  if (!replacement) return { ...response, body: createAsyncIterable([body]) };
  const trailer = setTrailerStatus(new Headers(), replacement);
  return { ...response, body: createAsyncIterable([encodeEnvelope(trailerFlag, trailerSerialize(trailer))]) };
}

/** Connect: an error is a JSON body under a non-200 status. */
async function rewriteConnect(response: UniversalServerResponse, translate: Translate): Promise<UniversalServerResponse> {
  if (response.status === 200 || !response.body || !response.header?.get("content-type")?.startsWith("application/json")) return response;
  const body = await readAllBytes(response.body, Number.MAX_SAFE_INTEGER);
  let replacement: ConnectError | null = null;
  try {
    replacement = translate(errorFromJsonBytes(body, undefined, new ConnectError("not an error body", Code.Unknown)));
  } catch {
    // Not a Connect error body (errorFromJsonBytes threw its fallback): pass it on as it is.
  }
  if (!replacement) return { ...response, body: createAsyncIterable([body]) };
  const bytes = errorToJsonBytes(replacement, {});
  const header = new Headers(response.header);
  header.set("content-length", String(bytes.byteLength));
  return { ...response, status: codeToHttpStatus(replacement.code), header, body: createAsyncIterable([bytes]) };
}
