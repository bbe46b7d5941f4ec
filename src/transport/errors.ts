import { Code, ConnectError } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { ErrorDetailSchema } from "../../gen/relgraph/v1/relation_service_pb.js";
import { RelgraphError, RequestTooLargeError, type ErrorCode } from "../domain/errors.js";

/** How one contract code shows on each protocol. */
interface CodeMapping {
  http: number;
  connect: Code;
}

/** The contract's code table: the only place codes meet HTTP statuses and gRPC codes. */
const CODE_TABLE: Record<ErrorCode, CodeMapping> = {
  "10001": { http: 401, connect: Code.Unauthenticated },
  "10002": { http: 401, connect: Code.Unauthenticated },
  "10100": { http: 401, connect: Code.Unauthenticated },
  "10101": { http: 401, connect: Code.Unauthenticated },
  "10102": { http: 403, connect: Code.PermissionDenied },
  "10110": { http: 429, connect: Code.ResourceExhausted },
  "11600": { http: 400, connect: Code.InvalidArgument },
  "11602": { http: 404, connect: Code.NotFound },
  "11603": { http: 400, connect: Code.InvalidArgument },
  "50000": { http: 500, connect: Code.Internal },
  "50300": { http: 503, connect: Code.Unavailable },
};

/** The REST envelope of a failure, as the contract spells it: `{code, desc, data: null}`. */
export interface ErrorEnvelope {
  code: ErrorCode;
  desc: string;
  data: null;
}

/** The envelope a REST client gets for `failure`: the one place the envelope is built. */
export function errorEnvelope(failure: Pick<PublicError, "code" | "desc">): ErrorEnvelope {
  return { code: failure.code, desc: failure.desc, data: null };
}

/** An oversized request is a bad request whose status says why: the contract's 11600, shown as 413 / RESOURCE_EXHAUSTED. */
const TOO_LARGE: CodeMapping = { http: 413, connect: Code.ResourceExhausted };

/** What a client is told about a failure. */
export interface PublicError {
  code: ErrorCode;
  desc: string;
  http: number;
  connect: Code;
}

const INTERNAL_DESC = "internal error";

/** Minimal logger shape, satisfied by pino and Fastify's logger. */
export interface ErrorLogger {
  error(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/**
 * Turns any thrown value into what the client may see. Domain errors keep their code and message;
 * anything else becomes 50000 with a fixed message, and its cause is logged here, once, so that
 * internals never reach a client. Unavailable dependencies are logged as warnings with their cause.
 */
export function toPublicError(err: unknown, log?: ErrorLogger): PublicError {
  if (err instanceof RelgraphError) {
    if (err.code === "50300") log?.warn({ err, cause: err.cause }, "dependency unavailable");
    return { code: err.code, desc: err.message, ...(err instanceof RequestTooLargeError ? TOO_LARGE : CODE_TABLE[err.code]) };
  }
  if (err instanceof ConnectError) {
    const detail = err.findDetails(ErrorDetailSchema)[0];
    if (detail && detail.code in CODE_TABLE) {
      const code = detail.code as ErrorCode;
      return { code, desc: detail.desc, ...CODE_TABLE[code], ...(err.code === Code.ResourceExhausted && code === "11600" ? TOO_LARGE : {}) };
    }
  }
  log?.error({ err }, "unexpected failure");
  return { code: "50000", desc: INTERNAL_DESC, ...CODE_TABLE["50000"] };
}

/** The error an oversized request gets, on every protocol. */
export function tooLarge(maxBytes: number): RequestTooLargeError {
  return new RequestTooLargeError(`the request is larger than ${maxBytes} bytes (MAX_REQUEST_BYTES)`);
}

/** Converts any thrown value into a ConnectError carrying the contract code as an ErrorDetail. */
export function toConnectError(err: unknown, log?: ErrorLogger): ConnectError {
  const failure = toPublicError(err, log);
  return new ConnectError(failure.desc, failure.connect, undefined, [
    { desc: ErrorDetailSchema, value: create(ErrorDetailSchema, { code: failure.code, desc: failure.desc }) },
  ]);
}
