/*
 * Credentials travel inside URLs: a Redis password (redis://user:pass@host), an RPC provider's key in
 * the path (https://mainnet.infura.io/v3/<key>) or in the query (?apikey=…). Anything that prints a
 * URL, a configuration or an error that may quote one goes through here first.
 */

const REDACTED = "[redacted]";

/** Path segments this long are treated as tokens: provider keys are 20+ characters, Redis db numbers 1–2. */
const TOKEN_SEGMENT_MIN_LENGTH = 16;

/**
 * A URL with its password, every query value, its fragment and every token-like path segment
 * replaced. Text that is not a URL is replaced whole, since it could be anything.
 */
export function redactUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return REDACTED;
  }
  if (url.password) url.password = REDACTED;
  // A URL with only a user (redis://secret@host) may be carrying the password there.
  else if (url.username && !url.password) url.username = REDACTED;
  url.pathname = url.pathname
    .split("/")
    .map((segment) => (segment.length >= TOKEN_SEGMENT_MIN_LENGTH ? REDACTED : segment))
    .join("/");
  for (const name of [...url.searchParams.keys()]) url.searchParams.set(name, REDACTED);
  url.hash = "";
  // URL encodes the brackets; the marker reads better as written.
  return url.toString().replaceAll(encodeURIComponent(REDACTED), REDACTED).replaceAll("%5Bredacted%5D", REDACTED);
}

/**
 * Every URL (scheme://…) inside a free text, redacted: for error messages and stacks. A stack's
 * frames are file:// URLs of relgraph's own modules, which carry no credential and are what an
 * operator reads a stack for, so those stay as they are.
 */
export function redactUrlsIn(text: string): string {
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`)\]}]+/gi, (url) => (/^file:\/\/\//i.test(url) ? url : redactUrl(url)));
}

/** A copy of a log value (an error serialized by pino, a config) with the URLs in every string redacted. */
export function redactUrlsDeep(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return redactUrlsIn(value);
  if (depth > 8 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item) => redactUrlsDeep(item, depth + 1));
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) copy[key] = redactUrlsDeep(item, depth + 1);
  return copy;
}
