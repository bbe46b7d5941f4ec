import { randomUUID } from "node:crypto";

/** The header that carries a request's id, accepted from the client or generated, and echoed. */
export const REQUEST_ID_HEADER = "x-request-id";

/** What a client's id may be: short printable ASCII, so that it cannot forge or break log lines. */
const ACCEPTABLE_ID = /^[\x21-\x7e]{1,128}$/;

/** The client's X-Request-Id when it is acceptable, else a fresh UUID. */
export function requestIdOf(headers: Record<string, string | string[] | undefined>): string {
  const given = headers[REQUEST_ID_HEADER];
  const value = Array.isArray(given) ? given[0] : given;
  return value !== undefined && ACCEPTABLE_ID.test(value) ? value : randomUUID();
}
