import { AnswerCutShortError, postJson, type HttpAnswer } from "./http-exchange.js";

/**
 * JSON-RPC 2.0 over HTTP (http-exchange.ts), to one or more endpoints of the same chain. An endpoint that
 * fails (no answer, a 5xx, a 429, an answer that is not JSON-RPC) is set aside for a backoff with
 * jitter, or for as long as its Retry-After asks, and the next endpoint takes the call; when every
 * endpoint is set aside, the call waits for the first to come back. A call is never given up on:
 * the indexer follows a chain for days, and an outage of its providers is something to wait out.
 *
 * An error object in a JSON-RPC answer is the node's answer, not an outage: it is thrown to the
 * caller as RpcResponseError (eth_getLogs' "too many results" is one the reader acts on).
 */

/** Thrown when an endpoint answers a call with a JSON-RPC error object. */
export class RpcResponseError extends Error {
  override name = "RpcResponseError";
  constructor(
    readonly method: string,
    /** The error object's code, e.g. -32005. */
    readonly code: number,
    /** The error object's message, as the node wrote it. */
    readonly rpcMessage: string,
    /** Which endpoint answered (its URL without credentials). */
    readonly endpoint: string,
  ) {
    super(`${method}: ${endpoint} answered error ${code}: ${rpcMessage}`);
  }
}

/** Thrown (and retried by the caller) when an answer is malformed or contradicts what was asked: it is never applied. */
export class InvalidAnswerError extends Error {
  override name = "InvalidAnswerError";
}

/** Thrown by a call in progress when the client is closed. */
export class RpcClosedError extends Error {
  override name = "RpcClosedError";
  constructor() {
    super("the RPC client was closed");
  }
}

/** One call of a batch. */
export interface RpcCall {
  method: string;
  params: unknown[];
}

/** What the client reports, for logs and metrics. */
export interface RpcEvents {
  /** An endpoint failed a request and is set aside for `waitMs`. */
  onEndpointError?: (event: { endpoint: string; error: string; waitMs: number }) => void;
}

/** Options of createRpcClient. */
export interface RpcClientOptions extends RpcEvents {
  /** Endpoint URLs, in order of preference. */
  urls: readonly string[];
  /** How long one HTTP request may take before it counts as a failure. */
  timeoutMs?: number;
  /** The first backoff after a failure; doubled per consecutive failure of that endpoint, up to maxBackoffMs. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** The longest Retry-After honoured as given; a longer one is cut to this. */
  maxRetryAfterMs?: number;
  /** Randomness for the jitter (tests make it fixed). */
  random?: () => number;
}

/** A JSON-RPC client over several endpoints. */
export interface RpcClient {
  /** Calls one method; resolves with its result, rejects with RpcResponseError (or RpcClosedError). */
  call<T = unknown>(method: string, params: unknown[]): Promise<T>;
  /**
   * Calls several methods in one HTTP request (a JSON-RPC batch); resolves with each result in
   * order. An error object in any answer rejects the whole batch with that RpcResponseError.
   */
  batch<T = unknown>(calls: readonly RpcCall[]): Promise<T[]>;
  /** Requests that failed, over every endpoint, since the start. */
  errors(): number;
  /** Stops every call in progress and every wait (they reject with RpcClosedError). */
  close(): void;
}

const DEFAULTS = { timeoutMs: 15_000, baseBackoffMs: 250, maxBackoffMs: 30_000, maxRetryAfterMs: 120_000 };

interface Endpoint {
  url: string;
  /** The URL as logged: without user info, whose password would be a secret. */
  label: string;
  failures: number;
  /** Not used before this time (ms since the epoch). */
  notBefore: number;
}

/** Creates a client over `urls`; the first healthy endpoint in order of preference takes each request. */
export function createRpcClient(options: RpcClientOptions): RpcClient {
  if (options.urls.length === 0) throw new Error("no RPC endpoint given");
  const settings = { ...DEFAULTS, ...definedOnly(options) };
  const random = options.random ?? Math.random;
  const endpoints: Endpoint[] = options.urls.map((url) => ({ url, label: safeLabel(url), failures: 0, notBefore: 0 }));
  const closing = new AbortController();
  let nextId = 1;
  let failed = 0;
  let batchesRefused = false;

  function setAside(endpoint: Endpoint, error: string, retryAfterMs: number | null): void {
    failed++;
    endpoint.failures++;
    const backoff = Math.min(settings.maxBackoffMs, settings.baseBackoffMs * 2 ** Math.min(endpoint.failures - 1, 20));
    // Full jitter on the backoff (many indexers behind one provider do not retry in step); a
    // Retry-After is the provider's own word, honoured as given with a little jitter on top.
    const waitMs = retryAfterMs !== null ? Math.min(retryAfterMs, settings.maxRetryAfterMs) + random() * settings.baseBackoffMs : backoff / 2 + random() * (backoff / 2);
    endpoint.notBefore = Date.now() + waitMs;
    options.onEndpointError?.({ endpoint: endpoint.label, error, waitMs: Math.round(waitMs) });
  }

  /** The first endpoint free to take a request, waiting for one when every endpoint is set aside. */
  async function pick(): Promise<Endpoint> {
    for (;;) {
      if (closing.signal.aborted) throw new RpcClosedError();
      const now = Date.now();
      const ready = endpoints.find((endpoint) => endpoint.notBefore <= now);
      if (ready) return ready;
      const soonest = Math.min(...endpoints.map((endpoint) => endpoint.notBefore));
      await sleep(soonest - now, closing.signal);
    }
  }

  /** Sends one request body until some endpoint gives a JSON-RPC answer; resolves with the parsed body. */
  async function send(body: unknown, check: (answer: unknown) => string | null): Promise<{ answer: unknown; endpoint: Endpoint }> {
    const text = JSON.stringify(body);
    for (;;) {
      const endpoint = await pick();
      let response: HttpAnswer;
      try {
        response = await postJson(endpoint.url, text, AbortSignal.any([closing.signal, AbortSignal.timeout(settings.timeoutMs)]));
      } catch (error) {
        if (closing.signal.aborted) throw new RpcClosedError();
        // postJson's errors say what failed in their message already.
        setAside(endpoint, `${error instanceof AnswerCutShortError ? "answer cut short" : "no answer"}: ${error instanceof Error ? error.message : String(error)}`, null);
        continue;
      }
      if (response.status === 429 || response.status >= 500 || (response.status !== 200 && response.status !== 400)) {
        setAside(endpoint, `HTTP ${response.status}`, retryAfterMs(response.retryAfter));
        continue;
      }
      let answer: unknown;
      try {
        answer = JSON.parse(response.text);
      } catch {
        setAside(endpoint, `HTTP ${response.status} with an answer that is not JSON`, null);
        continue;
      }
      const problem = check(answer);
      if (problem !== null) {
        setAside(endpoint, problem, null);
        continue;
      }
      endpoint.failures = 0;
      return { answer, endpoint };
    }
  }

  function resultOf<T>(method: string, answer: Record<string, unknown>, endpoint: Endpoint): T {
    const error = answer.error as { code?: unknown; message?: unknown } | undefined;
    if (error !== undefined && error !== null) {
      throw new RpcResponseError(method, typeof error.code === "number" ? error.code : 0, typeof error.message === "string" ? error.message : "", endpoint.label);
    }
    return answer.result as T;
  }

  const client: RpcClient = {
    async call<T>(method: string, params: unknown[]): Promise<T> {
      const id = nextId++;
      const { answer, endpoint } = await send({ jsonrpc: "2.0", id, method, params }, (answer) => answerProblem(answer, id));
      return resultOf<T>(method, answer as Record<string, unknown>, endpoint);
    },
    async batch<T>(calls: readonly RpcCall[]): Promise<T[]> {
      if (calls.length === 0) return [];
      if (batchesRefused) return Promise.all(calls.map((call) => client.call<T>(call.method, call.params)));
      const first = nextId;
      nextId += calls.length;
      const body = calls.map((call, i) => ({ jsonrpc: "2.0", id: first + i, method: call.method, params: call.params }));
      const { answer, endpoint } = await send(body, (answer) => {
        // A provider that does not take batches answers with one error object: the calls go one
        // by one from then on.
        if (!Array.isArray(answer) && answerProblem(answer, null) === null && (answer as Record<string, unknown>).error) return null;
        if (!Array.isArray(answer)) return "a batch answered with something other than an array";
        if (answer.length !== calls.length) return `a batch of ${calls.length} calls answered with ${answer.length} answers`;
        for (const item of answer) {
          const problem = answerProblem(item, null);
          if (problem !== null) return problem;
        }
        const ids = new Set(answer.map((item: { id?: unknown }) => item.id));
        for (let i = 0; i < calls.length; i++) if (!ids.has(first + i)) return "a batch's answers do not match its calls' ids";
        return null;
      });
      if (!Array.isArray(answer)) {
        batchesRefused = true;
        return Promise.all(calls.map((call) => client.call<T>(call.method, call.params)));
      }
      // Answers may come in any order: they are matched by id.
      const byId = new Map((answer as Record<string, unknown>[]).map((item) => [item.id as number, item]));
      return calls.map((call, i) => resultOf<T>(call.method, byId.get(first + i)!, endpoint));
    },
    errors: () => failed,
    close: () => closing.abort(),
  };
  return client;
}

/** Why an answer is not a JSON-RPC 2.0 answer (to the id asked, when given), or null when it is one. */
function answerProblem(answer: unknown, id: number | null): string | null {
  if (typeof answer !== "object" || answer === null || Array.isArray(answer)) return "an answer that is not a JSON-RPC object";
  const item = answer as Record<string, unknown>;
  if (item.jsonrpc !== "2.0") return "an answer without jsonrpc 2.0";
  if (!("result" in item) && !("error" in item)) return "an answer with neither result nor error";
  if (id !== null && item.id !== id) return `an answer to id ${String(item.id)} where ${id} was asked`;
  return null;
}

/** A Retry-After header (seconds, or an HTTP date) in ms; null when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | null {
  if (header === null) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** The URL without user info or query, which may hold keys: what logs may show. */
function safeLabel(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === "/" ? "" : "/…"}`;
  } catch {
    return "an endpoint";
  }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Waits `ms`, or rejects with RpcClosedError once `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new RpcClosedError());
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new RpcClosedError());
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
