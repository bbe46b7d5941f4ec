/*
 * Credentials travel inside URLs, wherever a provider chooses to put them: a Redis password in the
 * userinfo (redis://user:pass@host), an RPC provider's key in the path (https://rpc.example/v2/<key>,
 * however short) or in the query (?apikey=…). No rule can tell a key from a database number or a route,
 * so a logged URL keeps only what names the place: its scheme, host and port. Anything that prints a
 * URL-valued setting, a configuration or an error that may quote one goes through here first.
 */

const REDACTED = "[redacted]";

/**
 * A URL as scheme://host[:port], everything else (userinfo, path, query, fragment) dropped. Text that
 * is not a URL is replaced whole, since it could be anything.
 */
export function redactUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return REDACTED;
  }
  // `host` is hostname and explicit port; a scheme without an authority (mailto:) keeps nothing else.
  return url.host ? `${url.protocol}//${url.host}` : `${url.protocol}${REDACTED}`;
}

/**
 * A Redis Cluster seed (host:port) as host:port only: a seed written with a user, a path or a query
 * keeps none of them. Text with no host:port in it is replaced whole.
 */
export function redactSeed(seed: string): string {
  let url: URL;
  try {
    url = new URL(`redis://${seed}`);
  } catch {
    return REDACTED;
  }
  return url.host || REDACTED;
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
