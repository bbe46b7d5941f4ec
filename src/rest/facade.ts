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
import { InvalidArgumentError, RateLimitedError, type RateLimitState } from "../domain/errors.js";
import { API_KEY_HEADER, type AdmittingGate } from "../auth/request-gate.js";
import { toContractJson } from "../transport/contract-json.js";
import { tooLarge, toPublicError } from "../transport/errors.js";
import { endUnreadRequest } from "../transport/unread-body.js";
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
 * method per RPC taking its request message. Typed from the service's descriptor, so that the facade
 * depends on the schema, not on the RPC layer.
 */
export type RelationServiceCalls = {
  [Name in keyof RelationMethods]: (request: MessageShape<RelationMethods[Name]["input"]>) => Promise<MessageInitShape<RelationMethods[Name]["output"]>>;
};

/** One REST route: a path, the codec of its request message, the RPC, and the response schema. */
interface Route<Res extends DescMessage> {
  path: string;
  /** The RPC it transcodes onto; web/openapi.ts describes the route from it. */
  method: DescMethod;
  call: (service: RelationServiceCalls, query: Query) => Promise<MessageInitShape<Res>>;
  response: Res;
}

const route = <Res extends DescMessage>(r: Route<Res>) => r as unknown as Route<DescMessage>;

/** The route table: every REST path of the spec and the RPC it transcodes onto. */
export const REST_ROUTES: readonly Route<DescMessage>[] = [
  route({ path: "/api/v1/profile", method: RelationService.method.profile, call: (s, q) => s.profile(decodeProfile(q)), response: ProfileResponseSchema }),
  route({
    path: "/api/v1/relationshipGraph",
    method: RelationService.method.relationshipGraph,
    call: (s, q) => s.relationshipGraph(decodeRelationshipGraph(q)),
    response: RelationshipGraphResponseSchema,
  }),
  // The spec spells this path two ways; both are served.
  ...["/api/v1/multi-dimensional-recommendation", "/api/v1/multiDimensionalRecommendation"].map((path) =>
    route({
      path,
      method: RelationService.method.multiDimensionalRecommendation,
      call: (s, q) => s.multiDimensionalRecommendation(decodeRecommendation(q)),
      response: MultiDimensionalRecommendationResponseSchema,
    }),
  ),
  route({ path: "/api/v1/mutualFriend", method: RelationService.method.mutualFriend, call: (s, q) => s.mutualFriend(decodeMutualFriend(q)), response: MutualFriendResponseSchema }),
  route({
    path: "/api/v1/mutualContractInteraction",
    method: RelationService.method.mutualContractInteraction,
    call: (s, q) => s.mutualContractInteraction(decodeMutualContractInteraction(q)),
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

/**
 * The REST facade: a pure proxy that decodes GET query strings into request messages, calls the
 * RPC implementation, and wraps the response's JSON in the spec's envelope. It holds no logic of
 * its own and never touches the store.
 */
export async function restFacade(app: FastifyInstance, { service, gate, maxRequestBytes }: RestFacadeOptions): Promise<void> {
  const sendError = (request: FastifyRequest, reply: FastifyReply, err: unknown) => {
    const failure = toPublicError(err, request.log);
    if (err instanceof RateLimitedError) {
      reply.header("retry-after", String(err.retryAfterSeconds));
      if (err.rateLimit) setRateLimitHeaders(reply, err.rateLimit);
    }
    return reply.code(failure.http).send({ code: failure.code, desc: failure.desc, data: null });
  };

  // REST is GET only and never reads a body; one declared over the cap is refused rather than drained.
  // A callback hook, as every hook each request passes through (see server.ts).
  app.addHook("onRequest", (request, reply, done) => {
    const length = request.headers["content-length"];
    if (length !== undefined && Number(length) > maxRequestBytes) {
      endUnreadRequest(request.raw, reply.raw);
      sendError(request, reply, tooLarge(maxRequestBytes));
    }
    done();
  });

  for (const { path, call, response } of REST_ROUTES) {
    app.get(path, async (request, reply) => {
      try {
        const { rateLimit } = await gate.admit(apiKeyOf(request));
        if (rateLimit) setRateLimitHeaders(reply, rateLimit);
        const result = await call(service, request.query as Query);
        const json = toContractJson(response, result);
        return reply.send({ code: "0", desc: "success", ...json });
      } catch (err) {
        return sendError(request, reply, err);
      }
    });
  }

  // Unknown paths and methods under /api/v1/ still require the key first, then answer in the envelope.
  // OPTIONS is left out: a CORS preflight is web/cors.ts's to answer, or to find no route.
  app.route({
    method: ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"],
    url: "/api/v1/*",
    handler: async (request, reply) => {
      try {
        await gate.admit(apiKeyOf(request));
      } catch (err) {
        return sendError(request, reply, err);
      }
      const failure = toPublicError(new InvalidArgumentError(`no such operation: ${request.method} ${request.url.split("?")[0]}`));
      return reply.code(404).send({ code: failure.code, desc: failure.desc, data: null });
    },
  });
}

/**
 * The RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset headers (the IETF httpapi draft's
 * separate-field form; Reset in seconds), on every answer to a rate-limited key, refusals included.
 */
function setRateLimitHeaders(reply: FastifyReply, state: RateLimitState): void {
  reply.header("ratelimit-limit", String(state.limit));
  reply.header("ratelimit-remaining", String(state.remaining));
  reply.header("ratelimit-reset", String(state.resetSeconds));
}

function apiKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers[API_KEY_HEADER];
  return Array.isArray(value) ? value[0] : value;
}
