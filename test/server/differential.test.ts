import http from "node:http";
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { create, fromBinary, toBinary, toJson, toJsonString, type DescMessage, type DescMethod, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { base64Encode } from "@bufbuild/protobuf/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import { WALLETS, addr, fixtureRecords } from "../support/fixtures.js";
import { signAuthorization } from "../support/keynodes.js";
import { createCachedStore } from "../../src/store/cache/cached-store.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";

/*
 * The fast paths (FAST_PATHS: rpc/unary/, rest/h2c-handler.ts, store/redis/resp/) answer exactly as connect-es does. Two servers on
 * the same data, one with FAST_PATHS=on and one with FAST_PATHS=off, are asked the same raw requests
 * (every protocol, every RPC, every variant below), and must give the same status, the headers that
 * matter, the same body and the same gRPC status. Ciphertexts and cursors are random or may be, so
 * success bodies are compared decoded, with those values masked; everything else byte for byte.
 * Every refusal must carry the contract's ErrorDetail, whichever path wrote it.
 */

/** Request bodies over this are oversize: the lowest MAX_REQUEST_BYTES allowed. */
const MAX_REQUEST_BYTES = 1024;
const ENV = { MAX_REQUEST_BYTES: String(MAX_REQUEST_BYTES) };

type Method = DescMethod & { methodKind: "unary" };
const METHODS = RelationService.methods as Method[];

/** What goes on the wire for one case, before the protocol frames it. */
interface Wire {
  /** The request message: binary, or JSON text. */
  message: Uint8Array | string;
  compress?: boolean;
  headers?: Record<string, string>;
  /** gRPC and gRPC-Web only: frames the message instead of the one correct envelope. */
  envelope?: (message: Uint8Array) => Uint8Array;
}

/** An answer as it arrived: gRPC's status may be in the headers (trailers-only) or the trailers. */
interface Reply {
  status: number;
  headers: Record<string, string>;
  trailers: Record<string, string>;
  body: Buffer;
}

/** A gRPC envelope: flags, big-endian length, message. */
function envelope(message: Uint8Array, flags = 0, length = message.length): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame[0] = flags;
  frame.writeUInt32BE(length, 1);
  frame.set(message, 5);
  return frame;
}

function headersOf(raw: http.IncomingHttpHeaders | http2.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) if (value !== undefined) out[name.toLowerCase()] = String(value);
  return out;
}

/** One HTTP/1.1 exchange, raw: no decompression, no retries. */
function h1(url: string, method: string, path: string, headers: Record<string, string>, body?: Uint8Array): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${url}${path}`, { method, headers: { ...headers, ...(body ? { "content-length": String(body.length) } : {}) }, agent: false });
    request.on("response", (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: headersOf(response.headers), trailers: headersOf(response.trailers), body: Buffer.concat(chunks) }));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end(body);
  });
}

/** One HTTP/2 exchange over a session of its own. */
async function h2(url: string, method: string, path: string, headers: Record<string, string>, body?: Uint8Array): Promise<Reply> {
  const session = http2.connect(url);
  try {
    return await new Promise<Reply>((resolve, reject) => {
      // Node ends a GET's stream with its headers unless told there is a body.
      const stream = session.request({ ":method": method, ":path": path, ...headers, ...(body ? { "content-length": String(body.length) } : {}) }, { endStream: body === undefined });
      const reply: Reply = { status: 0, headers: {}, trailers: {}, body: Buffer.alloc(0) };
      const chunks: Buffer[] = [];
      stream.on("response", (h) => {
        reply.status = Number(h[":status"]);
        reply.headers = headersOf(h);
      });
      stream.on("trailers", (t) => (reply.trailers = headersOf(t)));
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => resolve({ ...reply, body: Buffer.concat(chunks) }));
      stream.on("error", reject);
      stream.end(body);
    });
  } finally {
    session.close();
  }
}

interface Protocol {
  name: string;
  /** The message format: binary Protobuf or JSON. */
  binary: boolean;
  /** gRPC or gRPC-Web: messages go in envelopes. */
  enveloped: boolean;
  /** The deadline header and a value of it. */
  timeoutHeader: string;
  timeout(ms: number): string;
  send(url: string, method: Method, wire: Wire, requestId: string): Promise<Reply>;
}

const bytesOf = (message: Uint8Array | string) => (typeof message === "string" ? Buffer.from(message, "utf8") : message);
const pathOf = (method: Method) => `/${RelationService.typeName}/${method.name}`;
// connect-timeout-ms has at most 10 digits; grpc-timeout at most 8, with a unit.
const connectTimeout = (ms: number) => String(Math.min(ms, 9_999_999_999));
const grpcTimeout = (ms: number) => (ms >= 1e8 ? "99999999H" : `${ms}m`);

function connectPost(name: string, binary: boolean, transport: typeof h1): Protocol {
  return {
    name,
    binary,
    enveloped: false,
    timeoutHeader: "connect-timeout-ms",
    timeout: connectTimeout,
    send: (url, method, wire, requestId) => {
      const body = wire.compress ? gzipSync(bytesOf(wire.message)) : bytesOf(wire.message);
      const headers = {
        "content-type": binary ? "application/proto" : "application/json",
        "connect-protocol-version": "1",
        apikey: TEST_API_KEY,
        "x-request-id": requestId,
        ...(wire.compress ? { "content-encoding": "gzip" } : {}),
        ...wire.headers,
      };
      return transport(url, "POST", pathOf(method), headers, body);
    },
  };
}

function connectGet(name: string, binary: boolean): Protocol {
  return {
    name,
    binary,
    enveloped: false,
    timeoutHeader: "connect-timeout-ms",
    timeout: connectTimeout,
    send: (url, method, wire, requestId) => {
      const query = new URLSearchParams({ connect: "v1", encoding: binary ? "proto" : "json" });
      if (wire.compress) {
        query.set("compression", "gzip");
        query.set("base64", "1");
        query.set("message", base64Encode(gzipSync(bytesOf(wire.message)), "url"));
      } else if (binary) {
        query.set("base64", "1");
        query.set("message", base64Encode(bytesOf(wire.message), "url"));
      } else {
        query.set("message", wire.message as string);
      }
      return h1(url, "GET", `${pathOf(method)}?${query.toString()}`, { apikey: TEST_API_KEY, "x-request-id": requestId, ...wire.headers });
    },
  };
}

function grpcLike(name: string, web: boolean): Protocol {
  return {
    name,
    binary: true,
    enveloped: true,
    timeoutHeader: "grpc-timeout",
    timeout: grpcTimeout,
    send: (url, method, wire, requestId) => {
      const message = bytesOf(wire.message);
      const body = wire.envelope ? wire.envelope(message) : wire.compress ? envelope(gzipSync(message), 1) : envelope(message);
      const headers = {
        "content-type": web ? "application/grpc-web+proto" : "application/grpc+proto",
        apikey: TEST_API_KEY,
        "x-request-id": requestId,
        ...(web ? { "x-grpc-web": "1" } : { te: "trailers" }),
        ...(wire.compress ? { "grpc-encoding": "gzip" } : {}),
        ...wire.headers,
      };
      return (web ? h1 : h2)(url, "POST", pathOf(method), headers, body);
    },
  };
}

const PROTOCOLS: Protocol[] = [
  connectPost("Connect JSON POST over HTTP/1.1", false, h1),
  connectPost("Connect binary POST over HTTP/2", true, h2),
  connectGet("Connect JSON GET", false),
  connectGet("Connect binary GET", true),
  grpcLike("gRPC", false),
  grpcLike("gRPC-Web", true),
];

/** One case: a name, and the wire for a method over a protocol (null: not applicable). */
interface Variant {
  name: string;
  wire(method: Method, protocol: Protocol): Wire | null;
}

/** The message of `init` in the protocol's format. */
function encode(schema: DescMessage, init: MessageInitShape<DescMessage>, binary: boolean): Uint8Array | string {
  const message = create(schema, init);
  return binary ? toBinary(schema, message) : toJsonString(schema, message);
}

/** An unknown field: number 1000, a varint, in binary; a key no message has, in JSON. */
function withUnknownField(message: Uint8Array | string): Uint8Array | string {
  if (typeof message === "string") return `{"unknownField":1,${message.slice(1)}`.replace(",}", "}");
  return Buffer.concat([message, Buffer.from([0xc0, 0x3e, 0x01])]);
}

let valid: Record<string, MessageInitShape<DescMessage>>;
const INVALID: Record<string, MessageInitShape<DescMessage>> = {
  profile: { address: addr("alice"), socialUsername: "alice", sig: "0x00", message: "m" },
  relationshipGraph: { address: addr("alice"), limit: 0 },
  multiDimensionalRecommendation: { address: addr("alice"), limit: 101 },
  mutualFriend: { address: [addr("alice")], limit: 3 },
  mutualContractInteraction: { address: ["0xnot-an-address", addr("bob")] },
};

const VARIANTS: Variant[] = [
  { name: "valid", wire: (m, p) => ({ message: encode(m.input, valid[m.localName]!, p.binary) }) },
  { name: "invalid", wire: (m, p) => ({ message: encode(m.input, INVALID[m.localName]!, p.binary) }) },
  { name: "unknown field", wire: (m, p) => ({ message: withUnknownField(encode(m.input, valid[m.localName]!, p.binary)) }) },
  { name: "compressed", wire: (m, p) => ({ message: encode(m.input, valid[m.localName]!, p.binary), compress: true }) },
  { name: "generous deadline", wire: (m, p) => ({ message: encode(m.input, valid[m.localName]!, p.binary), headers: { [p.timeoutHeader]: p.timeout(1e10) } }) },
  // The store holds these calls far past their deadline (slowStore).
  { name: "passed deadline", wire: (m, p) => ({ message: encode(m.input, valid[m.localName]!, p.binary), headers: { [p.timeoutHeader]: p.timeout(DEADLINE_MS) } }) },
  { name: "malformed deadline", wire: (m, p) => ({ message: encode(m.input, valid[m.localName]!, p.binary), headers: { [p.timeoutHeader]: "soon" } }) },
  { name: "oversize", wire: (m, p) => ({ message: encode(m.input, { ...valid[m.localName]!, cursor: "c".repeat(MAX_REQUEST_BYTES + 1) }, p.binary) }) },
  { name: "malformed message", wire: (_m, p) => ({ message: p.binary ? Uint8Array.from([0x0a, 0xff, 0xff]) : "{not json" }) },
  { name: "message of the wrong type", wire: (_m, p) => ({ message: p.binary ? Uint8Array.from([0x08, 0x01]) : '{"limit":"many"}' }) },
  { name: "no envelope at all", wire: (_m, p) => (p.enveloped ? { message: new Uint8Array(0), envelope: () => new Uint8Array(0) } : null) },
  { name: "a short envelope", wire: (m, p) => (p.enveloped ? { message: encode(m.input, valid[m.localName]!, true), envelope: (b) => envelope(b).subarray(0, 3) } : null) },
  { name: "an envelope longer than its message", wire: (m, p) => (p.enveloped ? { message: encode(m.input, valid[m.localName]!, true), envelope: (b) => envelope(b, 0, b.length + 4) } : null) },
  { name: "two messages", wire: (m, p) => (p.enveloped ? { message: encode(m.input, valid[m.localName]!, true), envelope: (b) => Buffer.concat([envelope(b), envelope(b)]) } : null) },
  { name: "compressed flag, no grpc-encoding", wire: (m, p) => (p.enveloped ? { message: encode(m.input, valid[m.localName]!, true), envelope: (b) => envelope(b, 1) } : null) },
  // Flag bits besides "compressed" mean nothing in a request; connect-es reads past them.
  { name: "other flag bits", wire: (m, p) => (p.enveloped ? { message: encode(m.input, valid[m.localName]!, true), envelope: (b) => envelope(b, 0x82) } : null) },
  // The ApiKey is judged first, whatever else is wrong with the request.
  { name: "malformed deadline, unknown ApiKey", wire: (m, p) => ({ message: encode(m.input, valid[m.localName]!, p.binary), headers: { [p.timeoutHeader]: "soon", apikey: "no-such-key" } }) },
  { name: "malformed deadline, no ApiKey", wire: (m, p) => ({ message: encode(m.input, valid[m.localName]!, p.binary), headers: { [p.timeoutHeader]: "-1S", apikey: "" } }) },
];

/** One REST request over h2c, raw. */
interface RestRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array;
}

/** One REST case: the requests it sends (the same to both servers), and the status they must all get, when it is one. */
interface RestCase {
  name: string;
  status?: number;
  requests(): RestRequest[];
}

const REST_PATHS: Record<string, string[]> = {
  profile: ["/api/v1/profile"],
  relationshipGraph: ["/api/v1/relationshipGraph"],
  multiDimensionalRecommendation: ["/api/v1/multi-dimensional-recommendation", "/api/v1/multiDimensionalRecommendation"],
  mutualFriend: ["/api/v1/mutualFriend"],
  mutualContractInteraction: ["/api/v1/mutualContractInteraction"],
};

/** A request message as the REST facade's query string: lists comma-separated, absent fields left out. */
function queryOf(init: MessageInitShape<DescMessage>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(init)) {
    if (value === undefined || value === "" || name === "$typeName") continue;
    query.set(name, Array.isArray(value) ? value.join(",") : String(value));
  }
  return query.toString();
}

/** Every route (or those of `methods`), each spelling, with `query(method)` as its query string. */
function everyRoute(query: (method: Method) => string, headers: Record<string, string> = {}, method = "GET", methods = METHODS): RestRequest[] {
  return methods.flatMap((m) =>
    REST_PATHS[m.localName]!.map((path) => ({ method, path: `${path}?${query(m)}`, headers: { apikey: TEST_API_KEY, "x-request-id": `rest-${m.localName}`, ...headers } })),
  );
}

/** The methods that take a page's `limit`. */
const PAGED = METHODS.filter((m) => m.input.fields.some((f) => f.localName === "limit"));

const mutualFriendPath = () => `/api/v1/mutualFriend?${queryOf(valid.mutualFriend!)}`;
const withKey = (headers: Record<string, string> = {}) => ({ apikey: TEST_API_KEY, "x-request-id": "rest-case", ...headers });

const REST_CASES: RestCase[] = [
  { name: "valid", status: 200, requests: () => everyRoute((m) => queryOf(valid[m.localName]!)) },
  { name: "invalid", status: 400, requests: () => everyRoute((m) => queryOf(INVALID[m.localName]!)) },
  { name: "no query at all", status: 400, requests: () => everyRoute(() => "") },
  { name: "limit given twice", status: 400, requests: () => everyRoute((m) => `${queryOf(valid[m.localName]!)}&limit=2`, {}, "GET", PAGED) },
  { name: "limit not a number", status: 400, requests: () => everyRoute((m) => queryOf({ ...valid[m.localName]!, limit: " 2x" } as MessageInitShape<DescMessage>), {}, "GET", PAGED) },
  {
    name: "percent-encoded and plus-encoded values, a malformed escape, a fragment, unknown parameters",
    requests: () => [
      { method: "GET", path: `/api/v1/mutualFriend?address=${encodeURIComponent(addr("alice"))}%2C${addr("bob")}&limit=3`, headers: withKey() },
      { method: "GET", path: `/api/v1/multiDimensionalRecommendation?socialUsername=ali+ce&limit=2`, headers: withKey() },
      { method: "GET", path: `/api/v1/multiDimensionalRecommendation?socialUsername=%E0%A4%A&limit=2`, headers: withKey() },
      { method: "GET", path: `${mutualFriendPath()}#fragment`, headers: withKey() },
      { method: "GET", path: `${mutualFriendPath()}&unknown=1&&=&x`, headers: withKey() },
    ],
  },
  { name: "no ApiKey", status: 401, requests: () => everyRoute((m) => queryOf(valid[m.localName]!), { apikey: "" }) },
  { name: "unknown ApiKey", status: 401, requests: () => everyRoute((m) => queryOf(valid[m.localName]!), { apikey: "no-such-key" }) },
  {
    name: "unknown routes and odd spellings of known ones",
    requests: () =>
      ["/api/v1/nope", "/api/v1/mutualFriend/", "/api/v1/mutual%46riend", "/api/v1/MUTUALFRIEND", "/api/v1//mutualFriend", "/api/v2/mutualFriend"].flatMap((path) => [
        { method: "GET", path: `${path}?${queryOf(valid.mutualFriend!)}`, headers: withKey() },
        { method: "GET", path, headers: withKey({ apikey: "" }) },
      ]),
  },
  {
    name: "X-Request-Id: accepted, absent, or unacceptable (a fresh one is made)",
    requests: (): RestRequest[] => [
      { method: "GET", path: mutualFriendPath(), headers: { apikey: TEST_API_KEY, "x-request-id": "client-chosen-id.1" } },
      { method: "GET", path: mutualFriendPath(), headers: { apikey: TEST_API_KEY } },
      { method: "GET", path: mutualFriendPath(), headers: { apikey: TEST_API_KEY, "x-request-id": "has space" } },
      { method: "GET", path: mutualFriendPath(), headers: { apikey: "", "x-request-id": "x".repeat(129) } },
    ],
  },
  {
    name: "HEAD, POST, OPTIONS, DELETE of a route",
    requests: () => [
      ...everyRoute((m) => queryOf(valid[m.localName]!), {}, "HEAD"),
      { method: "POST", path: mutualFriendPath(), headers: withKey({ "content-type": "application/json" }), body: Buffer.from("{}") },
      { method: "OPTIONS", path: mutualFriendPath(), headers: withKey() },
      { method: "DELETE", path: mutualFriendPath(), headers: withKey() },
    ],
  },
  {
    name: "a GET with a body, within and over MAX_REQUEST_BYTES, a content-type, an Origin",
    requests: () => [
      { method: "GET", path: mutualFriendPath(), headers: withKey(), body: Buffer.from("x") },
      { method: "GET", path: mutualFriendPath(), headers: withKey(), body: Buffer.alloc(MAX_REQUEST_BYTES + 1, 0x78) },
      { method: "GET", path: mutualFriendPath(), headers: withKey({ "content-type": "application/json" }) },
      { method: "GET", path: mutualFriendPath(), headers: withKey({ "content-type": "application/grpc" }) },
      { method: "GET", path: mutualFriendPath(), headers: withKey({ origin: "https://dapp.example" }) },
    ],
  },
];

/** One REST exchange over h2c. */
const sendRest = (url: string, request: RestRequest) => h2(url, request.method, request.path, request.headers, request.body);

/** Response headers a REST client may act on, or a cache keep; the rest (date) differ by nature. */
const REST_HEADERS = [
  "content-type",
  "x-request-id",
  "retry-after",
  "ratelimit-limit",
  "ratelimit-remaining",
  "ratelimit-reset",
  "vary",
  "cache-control",
  "access-control-allow-origin",
  "access-control-expose-headers",
  "allow",
];

/** What must be identical in a REST answer: status, headers that matter, and the envelope (random values masked). */
function restComparable(reply: Reply, request: RestRequest) {
  const headers = Object.fromEntries(REST_HEADERS.filter((n) => reply.headers[n] !== undefined).map((n) => [n, reply.headers[n]]));
  // A request id the server made is random: it must be a UUID, and not the one the client sent.
  if (headers["x-request-id"] !== undefined && headers["x-request-id"] !== request.headers["x-request-id"]) {
    expect(headers["x-request-id"]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    headers["x-request-id"] = "<generated>";
  }
  // Content-Length says how long this body is; masked values may differ in length between the two.
  if (reply.headers["content-length"] !== undefined && request.method !== "HEAD") expect(Number(reply.headers["content-length"])).toBe(reply.body.length);
  let body = reply.body.toString("utf8");
  if (reply.status === 200 && body.startsWith("{")) body = JSON.stringify(mask(JSON.parse(body) as JsonValue));
  return { status: reply.status, headers, body, hasLength: reply.headers["content-length"] !== undefined };
}

/** While set, the stores answer the reads every RPC starts with only after STORE_DELAY_MS: a call past any deadline. */
let holdStore = false;
const DEADLINE_MS = 50;
const STORE_DELAY_MS = 1_000;

/** A fresh memory store whose first reads of a call wait while holdStore is set. */
function slowStore(): GraphStore {
  const store = createCachedStore(createMemoryStore());
  return new Proxy(store, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      if (name !== "resolve" && name !== "contractIntersection") return value.bind(target);
      return async (...args: unknown[]) => {
        if (holdStore) await new Promise((resolve) => setTimeout(resolve, STORE_DELAY_MS));
        return value.apply(target, args);
      };
    },
  });
}

/** Values that are random, or may be: ciphertexts, and cursors. */
const MASKED = new Set(["encryptedString", "encryptedSymmetricKey", "dataToEncryptHash", "cursor"]);

function mask(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(mask);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, MASKED.has(key) && item !== "" ? "<masked>" : mask(item as JsonValue)]));
  }
  return value;
}

/** The answer's message as masked proto3 JSON, or null when it holds no message. */
function messageOf(protocol: Protocol, method: Method, reply: Reply): string | null {
  if (reply.status !== 200) return null;
  const type = reply.headers["content-type"] ?? "";
  if (type === "application/json") {
    const json = JSON.parse(reply.body.toString("utf8")) as JsonValue;
    return JSON.stringify(mask(json));
  }
  if (type === "application/proto") return JSON.stringify(mask(toJson(method.output, fromBinary(method.output, reply.body))));
  if (!protocol.enveloped) return null;
  // gRPC and gRPC-Web: the message envelopes decoded, a gRPC-Web trailer envelope as its text.
  const parts: string[] = [];
  for (let at = 0; at + 5 <= reply.body.length; ) {
    const length = reply.body.readUInt32BE(at + 1);
    const data = reply.body.subarray(at + 5, at + 5 + length);
    parts.push(reply.body[at] === 0x80 ? data.toString("utf8") : JSON.stringify(mask(toJson(method.output, fromBinary(method.output, data)))));
    at += 5 + length;
  }
  return parts.join(" | ");
}

/** What must be identical: the status, the headers that matter, the gRPC status wherever it was sent, and the body. */
function comparable(protocol: Protocol, method: Method, reply: Reply) {
  const pick = (from: Record<string, string>, names: string[]) => Object.fromEntries(names.filter((n) => from[n] !== undefined).map((n) => [n, from[n]]));
  const message = messageOf(protocol, method, reply);
  return {
    status: reply.status,
    headers: pick(reply.headers, ["content-type", "content-encoding", "grpc-encoding", "x-request-id", "retry-after"]),
    // A trailers-only answer sends the gRPC status in the headers; connect-es sends it in the trailers.
    grpcStatus: pick({ ...reply.headers, ...reply.trailers }, ["grpc-status", "grpc-message", "grpc-status-details-bin"]),
    body: message ?? reply.body.toString("utf8"),
  };
}

/** Whether a refusal carries the contract's ErrorDetail (a deadline the client set is no refusal). */
function carriesErrorDetail(view: ReturnType<typeof comparable>): boolean {
  if (view.grpcStatus["grpc-status"] !== undefined && view.grpcStatus["grpc-status"] !== "0") {
    return view.grpcStatus["grpc-status"] === "4" || view.grpcStatus["grpc-status-details-bin"] !== undefined;
  }
  const webStatus = /grpc-status: ?(\d+)/.exec(view.body)?.[1];
  if (webStatus !== undefined) return webStatus === "0" || webStatus === "4" || view.body.includes("grpc-status-details-bin");
  if (view.status !== 200) return view.body.includes('"code":"deadline_exceeded"') || view.body.includes("relgraph.v1.ErrorDetail");
  return true;
}

describe("the fast paths answer as connect-es does (FAST_PATHS=on against FAST_PATHS=off)", () => {
  let fast: RunningRelgraph;
  let plain: RunningRelgraph;

  beforeAll(async () => {
    // Off first: the fast paths' UTF-8 encoder, once installed, stays for the process (same bytes).
    plain = await startRelgraph({ store: slowStore(), records: fixtureRecords(), env: { ...ENV, FAST_PATHS: "off" } });
    fast = await startRelgraph({ store: slowStore(), records: fixtureRecords(), env: { ...ENV, FAST_PATHS: "on" } });
    const profileAuth = await signAuthorization(WALLETS.alice, "Access to User Profile.");
    const graphAuth = await signAuthorization(WALLETS.alice, "Access to Relationship Graph.");
    valid = {
      profile: { address: addr("alice"), ...profileAuth },
      relationshipGraph: { address: addr("alice"), ...graphAuth, limit: 2 },
      multiDimensionalRecommendation: { socialUsername: "alice", limit: 2 },
      mutualFriend: { address: [addr("alice"), addr("bob")], limit: 3 },
      mutualContractInteraction: { address: [addr("bob"), addr("carol")] },
    };
  });
  afterAll(async () => {
    await fast?.close();
    await plain?.close();
  });

  describe.each(PROTOCOLS)("$name", (protocol) => {
    it.each(VARIANTS)("$name: every RPC answers the same either way", async (variant) => {
      holdStore = variant.name === "passed deadline";
      for (const method of METHODS) {
        const wire = variant.wire(method, protocol);
        if (wire === null) continue;
        const requestId = `diff-${method.localName}`;
        const [viaConnectEs, viaFastPath] = await Promise.all([protocol.send(plain.url, method, wire, requestId), protocol.send(fast.url, method, wire, requestId)]);
        const expected = comparable(protocol, method, viaConnectEs);
        const actual = comparable(protocol, method, viaFastPath);
        expect(actual, `${method.name}`).toEqual(expected);
        expect(carriesErrorDetail(expected), `${method.name} refused without the contract's ErrorDetail: ${JSON.stringify(expected)}`).toBe(true);
      }
      holdStore = false;
    });
  });

  describe("REST over h2c (the fast path answers off the HTTP/2 stream, FAST_PATHS=off through Fastify)", () => {
    it.each(REST_CASES)("$name: answers the same either way", async (restCase) => {
      for (const request of restCase.requests()) {
        const [viaFastify, viaFastPath] = await Promise.all([sendRest(plain.url, request), sendRest(fast.url, request)]);
        const expected = restComparable(viaFastify, request);
        expect(restComparable(viaFastPath, request), `${request.method} ${request.path}`).toEqual(expected);
        if (restCase.status !== undefined) expect(expected.status, `${request.method} ${request.path}`).toBe(restCase.status);
      }
    });

    it("count REST answers in the same metric series either way", async () => {
      const restSeries = async (url: string) =>
        (await (await fetch(`${url}/metrics`)).text())
          .split("\n")
          .filter((line) => line.startsWith("relgraph_requests_total{") && line.includes('protocol="rest"'))
          .sort();
      const expected = await restSeries(plain.url);
      // The cases above ran: at least their successes and refusals were counted.
      expect(expected.some((line) => line.includes('code="200"'))).toBe(true);
      expect(expected.some((line) => line.includes('code="401"'))).toBe(true);
      expect(await restSeries(fast.url)).toEqual(expected);
    });
  });

  it("agree on what the variants mean: valid and unknown-field requests succeed, the others are refused", async () => {
    const grpc = PROTOCOLS.find((p) => p.name === "gRPC")!;
    const connect = PROTOCOLS[0]!;
    const mutualFriend = RelationService.method.mutualFriend as Method;
    const outcome = async (protocol: Protocol, variant: string, method = mutualFriend) => {
      const reply = await protocol.send(fast.url, method, VARIANTS.find((v) => v.name === variant)!.wire(method, protocol)!, "diff-meaning");
      const view = comparable(protocol, method, reply);
      return view.grpcStatus["grpc-status"] ?? String(view.status);
    };
    for (const variant of ["valid", "unknown field", "compressed", "generous deadline"]) {
      expect(await outcome(connect, variant), variant).toBe("200");
      expect(await outcome(grpc, variant), variant).toBe("0");
    }
    for (const variant of ["invalid", "malformed deadline", "malformed message", "message of the wrong type"]) {
      expect(await outcome(connect, variant), variant).toBe("400");
      expect(await outcome(grpc, variant), variant).toBe("3");
    }
    // RESOURCE_EXHAUSTED is 429 in the Connect protocol (REST answers 413).
    expect(await outcome(connect, "oversize")).toBe("429");
    expect(await outcome(grpc, "oversize")).toBe("8");
    holdStore = true;
    expect(await outcome(connect, "passed deadline")).toBe("504");
    expect(await outcome(grpc, "passed deadline")).toBe("4");
    holdStore = false;
  });
});

describe("REST over h2c answers as Fastify does with a rate limit, and with CORS_ORIGINS (FAST_PATHS=on against off)", () => {
  const WINDOW_SECONDS = 3600;
  let servers: RunningRelgraph[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });
  /** A pair of servers on the same data, FAST_PATHS off and on, with `env`. */
  const pair = async (env: Record<string, string>) => {
    const started = await Promise.all(
      (["off", "on"] as const).map((way) => startRelgraph({ records: fixtureRecords(), env: { ...ENV, ...env, FAST_PATHS: way } })),
    );
    servers = [...servers, ...started];
    return started as [RunningRelgraph, RunningRelgraph];
  };
  const request = (headers: Record<string, string> = {}): RestRequest => ({
    method: "GET",
    path: `/api/v1/mutualFriend?address=${addr("alice")},${addr("bob")}&limit=3`,
    headers: { apikey: TEST_API_KEY, "x-request-id": "rest-pair", ...headers },
  });

  it("a rate-limited key: the same RateLimit-* headers on every answer, the same refusal and Retry-After once its budget is spent", async () => {
    const [plain, fast] = await pair({ RATE_LIMIT: "2", RATE_LIMIT_WINDOW_SECONDS: String(WINDOW_SECONDS) });
    const statuses: number[] = [];
    for (const sent of [request(), request({ "x-request-id": "rest-invalid" }), request(), request()]) {
      if (sent.headers["x-request-id"] === "rest-invalid") sent.path = `/api/v1/mutualFriend?address=${addr("alice")}&limit=3`;
      const [viaFastify, viaFastPath] = await Promise.all([sendRest(plain.url, sent), sendRest(fast.url, sent)]);
      const [expected, actual] = [restComparable(viaFastify, sent), restComparable(viaFastPath, sent)];
      // Both windows began with the first request, within milliseconds: the seconds left may straddle a tick.
      for (const view of [expected, actual]) {
        for (const name of ["ratelimit-reset", "retry-after"]) {
          if (view.headers[name] === undefined) continue;
          expect(Number(view.headers[name])).toBeGreaterThanOrEqual(0);
          expect(Number(view.headers[name])).toBeLessThanOrEqual(WINDOW_SECONDS);
          view.headers[name] = "<seconds>";
        }
      }
      expect(actual, sent.headers["x-request-id"]).toEqual(expected);
      expect(expected.headers["ratelimit-limit"]).toBe("2");
      statuses.push(expected.status);
    }
    // Admitted, admitted but invalid (it spends budget too), then refused with Retry-After.
    expect(statuses).toEqual([200, 400, 429, 429]);
  });

  it("CORS_ORIGINS set: the same CORS headers on answers to cross-origin and same-origin requests", async () => {
    const [plain, fast] = await pair({ CORS_ORIGINS: "https://dapp.example" });
    for (const sent of [request(), request({ origin: "https://dapp.example" }), request({ origin: "https://elsewhere.example" }), request({ apikey: "" })]) {
      const [viaFastify, viaFastPath] = await Promise.all([sendRest(plain.url, sent), sendRest(fast.url, sent)]);
      const expected = restComparable(viaFastify, sent);
      expect(restComparable(viaFastPath, sent)).toEqual(expected);
      expect(expected.headers["access-control-expose-headers"]).toContain("ratelimit-remaining");
    }
  });
});
