import http from "node:http";
import https from "node:https";

/**
 * One JSON-RPC request over HTTP(S), its answer received whole, on node:http rather than fetch: a
 * backfill receives answers of many megabytes, and fetch hands them over through web streams, at a
 * cost per chunk that the indexer's one thread pays. Connections are kept alive between requests.
 */

/** An answer received whole. */
export interface HttpAnswer {
  status: number;
  /** The Retry-After header, when present. */
  retryAfter: string | null;
  text: string;
}

/** Thrown when no answer came (no connection, a reset, a timeout before the status). */
export class NoAnswerError extends Error {
  override name = "NoAnswerError";
}

/** Thrown when an answer began but did not arrive whole. */
export class AnswerCutShortError extends Error {
  override name = "AnswerCutShortError";
}

const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

/** POSTs `body` (JSON) to `url`; `signal` aborts it at any point. */
export function postJson(url: string, body: string, signal: AbortSignal): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const secure = url.startsWith("https:");
    let request: http.ClientRequest;
    try {
      request = (secure ? https : http).request(url, {
        method: "POST",
        agent: secure ? agents.https : agents.http,
        headers: { "content-type": "application/json", accept: "application/json", "content-length": Buffer.byteLength(body) },
        signal,
      });
    } catch (error) {
      reject(new NoAnswerError(describe(error)));
      return;
    }
    let answered = false;
    request.once("error", (error) => {
      if (!answered) reject(new NoAnswerError(describe(error)));
    });
    request.once("response", (response) => {
      answered = true;
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.once("error", (error) => reject(new AnswerCutShortError(describe(error))));
      response.once("close", () => {
        if (!response.complete) reject(new AnswerCutShortError("the connection closed before the answer's end"));
      });
      response.once("end", () => {
        const retryAfter = response.headers["retry-after"];
        resolve({ status: response.statusCode ?? 0, retryAfter: typeof retryAfter === "string" ? retryAfter : null, text: Buffer.concat(chunks).toString("utf8") });
      });
    });
    request.end(body);
  });
}

function describe(error: unknown): string {
  const { message, code } = error as Error & { code?: string };
  return code && !String(message).includes(code) ? `${message} (${code})` : String(message);
}
