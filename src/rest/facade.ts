import type { DescMessage, DescMethod, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import {
  MultiDimensionalRecommendationResponseSchema,
  MutualContractInteractionResponseSchema,
  MutualFriendResponseSchema,
  ProfileResponseSchema,
  RelationService,
  RelationshipGraphResponseSchema,
} from "../../gen/relgraph/v1/relation_service_pb.js";
import type { Caller } from "../domain/caller.js";
import { InvalidArgumentError, RateLimitedError, type RateLimitState } from "../domain/errors.js";
import { API_KEY_HEADER, type AdmittingGate } from "../auth/request-gate.js";
import { toContractJson } from "../transport/contract-json.js";
import { errorEnvelope, tooLarge, toPublicError, type ErrorLogger } from "../transport/errors.js";
import { endUnreadRequest } from "../transport/refused-upload.js";
import {
  decodeMutualContractInteraction,
  decodeMutualFriend,
  decodeProfile,
  decodeRecommendation,
  decodeRelationshipGraph,
  type Query,
} from "./codec.js";

type RelationMethods = typeof RelationService.method;

/**
 * What the facade calls: the RelationService implementation (rpc/relation-service.ts), one async
 * method per RPC taking its request message and the Caller its ApiKey was admitted as. Typed from
 * the service's descriptor, so that the facade depends on the schema, not on the RPC layer.
 */
export type RelationServiceCalls = {
  [Name in keyof RelationMethods]: (
    request: MessageShape<RelationMethods[Name]["input"]>,
    caller: Caller,
  ) => Promise<MessageInitShape<RelationMethods[Name]["output"]>>;
};

/** One REST route: a path, the codec of its request message, the RPC, and the response schema. */
export interface Route<Res extends DescMessage> {
  path: string;
  /** The RPC it transcodes onto; web/openapi.ts describes the route from it. */
  method: DescMethod;
  call: (service: RelationServiceCalls, query: Query, caller: Caller) => Promise<MessageInitShape<Res>>;
  response: Res;
}

const route = <Res extends DescMessage>(r: Route<Res>) => r as unknown as Route<DescMessage>;

/** The route table: every REST path of the spec and the RPC it transcodes onto. */
export const REST_ROUTES: readonly Route<DescMessage>[] = [
  route({ path: "/api/v1/profile", method: RelationService.method.profile, call: (s, q, c) => s.profile(decodeProfile(q), c), response: ProfileResponseSchema }),
  route({
    path: "/api/v1/relationshipGraph",
    method: RelationService.method.relationshipGraph,
    call: (s, q, c) => s.relationshipGraph(decodeRelationshipGraph(q), c),
    response: RelationshipGraphResponseSchema,
  }),
  // The spec spells this path two ways; both are served.
  ...["/api/v1/multi-dimensional-recommendation", "/api/v1/multiDimensionalRecommendation"].map((path) =>
    route({
      path,
      method: RelationService.method.multiDimensionalRecommendation,
      call: (s, q, c) => s.multiDimensionalRecommendation(decodeRecommendation(q), c),
      response: MultiDimensionalRecommendationResponseSchema,
    }),
  ),
  route({ path: "/api/v1/mutualFriend", method: RelationService.method.mutualFriend, call: (s, q, c) => s.mutualFriend(decodeMutualFriend(q), c), response: MutualFriendResponseSchema }),
  route({
    path: "/api/v1/mutualContractInteraction",
    method: RelationService.method.mutualContractInteraction,
    call: (s, q, c) => s.mutualContractInteraction(decodeMutualContractInteraction(q), c),
    response: MutualContractInteractionResponseSchema,
  }),
];

/** Options of the REST facade plugin. */
export interface RestFacadeOptions {
  service: RelationServiceCalls;
  gate: AdmittingGate;
  /** Largest request body (MAX_REQUEST_BYTES). */
  maxRequestBytes: number;
}

/** The content type of every REST answer: JSON, as Fastify labels what it serializes. */
export const REST_CONTENT_TYPE = "application/json; charset=utf-8";

/**
 * Headers of every /api/v1/ answer. No shared cache (a CDN, a corporate proxy) may keep one: it would
 * answer the next asker without checking their ApiKey, and go on showing a user after their erasure
 * or a relation after its release was withdrawn.
 */
export const REST_ANSWER_HEADERS: Readonly<Record<string, string>> = Object.freeze({ "cache-control": "no-store" });

/**
 * One REST answer, whoever writes it: Fastify (restFacade below) or the h2c fast path
 * (h2c-handler.ts), so that both send the same status, headers and bytes.
 */
export interface RestAnswer {
  status: number;
  /** Headers besides content-type, content-length and X-Request-Id: REST_ANSWER_HEADERS, RateLimit-*, Retry-After. */
  headers: Readonly<Record<string, string>>;
  /** The envelope as JSON text. */
  body: string;
}

/**
 * Answers one request of `route`: admits its ApiKey, decodes its query, calls the RPC for the Caller
 * the gate admitted, and wraps the result in the spec's envelope; any failure becomes the contract's
 * error envelope. Never rejects.
 */
export async function answerRoute(
  route: Route<DescMessage>,
  service: RelationServiceCalls,
  gate: AdmittingGate,
  apiKey: string | undefined,
  query: Query,
  log: ErrorLogger,
): Promise<RestAnswer> {
  let headers: Readonly<Record<string, string>> = REST_ANSWER_HEADERS;
  try {
    const { caller, rateLimit } = await gate.admit(apiKey);
    // A key's budget is told on every answer once it is admitted, refusals of the query included.
    if (rateLimit) headers = { ...REST_ANSWER_HEADERS, ...rateLimitHeaders(rateLimit) };
    const json = toContractJson(route.response, await route.call(service, query, caller));
    return { status: 200, headers, body: JSON.stringify({ code: "0", desc: "success", ...json }) };
  } catch (err) {
    return refusal(err, log, headers);
  }
}

/** The error envelope of `err` (toPublicError logs what is not the client's doing), with a rate-limited key's headers. */
export function refusal(err: unknown, log?: ErrorLogger, headers: Readonly<Record<string, string>> = REST_ANSWER_HEADERS): RestAnswer {
  const failure = toPublicError(err, log);
  if (err instanceof RateLimitedError) {
    headers = { ...headers, "retry-after": String(err.retryAfterSeconds), ...(err.rateLimit ? rateLimitHeaders(err.rateLimit) : {}) };
  }
  return { status: failure.http, headers, body: JSON.stringify(errorEnvelope(failure)) };
}

/** The REST route served at exactly `path` (no query, no decoding), if any. */
export function restRouteAt(path: string): Route<DescMessage> | undefined {
  return ROUTES_BY_PATH.get(path);
}

const ROUTES_BY_PATH = new Map(REST_ROUTES.map((r) => [r.path, r]));

/**
 * The REST facade: a pure proxy that decodes GET query strings into request messages, calls the
 * RPC implementation, and wraps the response's JSON in the spec's envelope. It holds no logic of
 * its own and never touches the store.
 */
export async function restFacade(app: FastifyInstance, { service, gate, maxRequestBytes }: RestFacadeOptions): Promise<void> {
  const send = (reply: FastifyReply, answer: RestAnswer) => reply.code(answer.status).headers(answer.headers).type(REST_CONTENT_TYPE).send(answer.body);

  // REST is GET only and never reads a body; one declared over the cap is refused rather than drained.
  // A callback hook, as every hook each request passes through (see create-server.ts).
  app.addHook("onRequest", (request, reply, done) => {
    const length = request.headers["content-length"];
    if (length !== undefined && Number(length) > maxRequestBytes) {
      endUnreadRequest(request.raw, reply.raw);
      send(reply, refusal(tooLarge(maxRequestBytes), request.log));
    }
    done();
  });

  for (const route of REST_ROUTES) {
    app.get(route.path, async (request, reply) => send(reply, await answerRoute(route, service, gate, apiKeyOf(request), request.query as Query, request.log)));
  }

  // Unknown paths and methods under /api/v1/ still require the key first, then answer in the envelope.
  // OPTIONS is left out: a CORS preflight is transport/cors.ts's to answer, or to find no route.
  app.route({
    method: ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"],
    url: "/api/v1/*",
    handler: async (request, reply) => {
      try {
        await gate.admit(apiKeyOf(request));
      } catch (err) {
        return send(reply, refusal(err, request.log));
      }
      const failure = toPublicError(new InvalidArgumentError(`no such operation: ${request.method} ${request.url.split("?")[0]}`));
      return send(reply, { status: 404, headers: REST_ANSWER_HEADERS, body: JSON.stringify(errorEnvelope(failure)) });
    },
  });
}

/** The RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset headers (the IETF httpapi draft's separate-field form; Reset in seconds). */
function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    "ratelimit-limit": String(state.limit),
    "ratelimit-remaining": String(state.remaining),
    "ratelimit-reset": String(state.resetSeconds),
  };
}

function apiKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers[API_KEY_HEADER];
  return Array.isArray(value) ? value[0] : value;
}
