import http2 from "node:http2";
import { TEST_API_KEY } from "../support/relgraph-server.js";

/** A REST answer: status, raw body text and parsed JSON. */
export interface RestReply {
  status: number;
  text: string;
  // Envelopes are asserted field by field, so the parsed body stays untyped.
  body: any;
}

/** Query parameters; a value of null is left out. */
export type Params = Record<string, string | number | null | undefined>;

/** Options of a REST call. */
export interface RestOptions {
  /** The ApiKey header; null sends none. Default TEST_API_KEY. */
  apiKey?: string | null;
}

/** Builds `path?query` with the parameters encoded as a browser would. */
export function pathWithQuery(path: string, params: Params = {}): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== null && value !== undefined) query.set(name, String(value));
  const text = query.toString();
  return text === "" ? path : `${path}?${text}`;
}

/** GET over HTTP/1.1 with fetch. */
export async function restGet(baseUrl: string, path: string, params: Params = {}, options: RestOptions = {}): Promise<RestReply> {
  const apiKey = options.apiKey === undefined ? TEST_API_KEY : options.apiKey;
  const response = await fetch(baseUrl + pathWithQuery(path, params), { headers: apiKey === null ? {} : { ApiKey: apiKey } });
  const text = await response.text();
  return { status: response.status, text, body: JSON.parse(text) };
}

/** GET over an h2c session (HTTP/2 with prior knowledge). */
export function h2cGet(session: http2.ClientHttp2Session, path: string, params: Params = {}, options: RestOptions = {}): Promise<RestReply> {
  const apiKey = options.apiKey === undefined ? TEST_API_KEY : options.apiKey;
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": "GET", ":path": pathWithQuery(path, params), ...(apiKey === null ? {} : { apikey: apiKey }) });
    let status = 0;
    let text = "";
    stream.setEncoding("utf8");
    stream.on("response", (headers) => (status = Number(headers[":status"])));
    stream.on("data", (chunk: string) => (text += chunk));
    stream.on("error", reject);
    stream.on("end", () => {
      try {
        resolve({ status, text, body: JSON.parse(text) });
      } catch (err) {
        reject(err);
      }
    });
    stream.end();
  });
}

/** Opens an h2c session (prior knowledge: no upgrade, no TLS) and waits until it is connected. */
export function connectH2c(baseUrl: string): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    session.once("connect", () => resolve(session));
    session.once("error", reject);
  });
}

/** Closes an h2c session and waits for it to go. */
export function closeH2c(session: http2.ClientHttp2Session): Promise<void> {
  if (session.closed || session.destroyed) return Promise.resolve();
  return new Promise((resolve) => session.close(() => resolve()));
}

/**
 * Walks a cursor chain from the first page: `page(cursor)` fetches one page. Returns every page's
 * data in order; fails when a chain runs longer than `maxPages` (a cursor that never ends).
 */
export async function walkChain<T>(
  page: (cursor: string) => Promise<{ data: T[]; cursor: string }>,
  maxPages = 1000,
): Promise<{ pages: T[][]; cursors: string[] }> {
  const pages: T[][] = [];
  const cursors: string[] = [];
  let cursor = "";
  do {
    if (pages.length >= maxPages) throw new Error(`cursor chain longer than ${maxPages} pages`);
    const next = await page(cursor);
    pages.push(next.data);
    cursors.push(next.cursor);
    cursor = next.cursor;
  } while (cursor !== "");
  return { pages, cursors };
}
