import { create } from "@bufbuild/protobuf";
import { parse } from "fast-querystring";
import {
  MultiDimensionalRecommendationRequestSchema,
  MutualContractInteractionRequestSchema,
  MutualFriendRequestSchema,
  ProfileRequestSchema,
  RelationshipGraphRequestSchema,
} from "../../gen/relgraph/v1/relation_service_pb.js";
import { InvalidArgumentError } from "../domain/errors.js";

/**
 * Explicit query-string codecs, one per request message. They only decode text into message
 * fields (splitting lists, parsing `limit`); every rule about values lives in rpc/params.ts, which
 * the RPC implementation applies to REST and gRPC alike. Unknown parameters are ignored.
 */

/** A parsed query string: repeated parameters arrive as arrays. */
export type Query = Record<string, string | string[] | undefined>;

/**
 * Parses a query string (the text after "?") as Fastify does by default, whichever server reads
 * it: create-server.ts makes this Fastify's parser, and the h2c fast path (h2c-handler.ts) calls it.
 */
export function parseQuery(text: string): Query {
  return text.length === 0 ? {} : (parse(text) as Query);
}

/** A singular parameter; absent is "". Given twice is ambiguous, so it is refused. */
function single(query: Query, name: string): string {
  const value = query[name];
  if (Array.isArray(value)) throw new InvalidArgumentError(`${name} was given more than once`);
  return value ?? "";
}

/** A list parameter: comma-separated, and repeated parameters are concatenated. Absent or "" is []. */
function list(query: Query, name: string): string[] {
  const value = query[name];
  const parts = Array.isArray(value) ? value : value === undefined ? [] : [value];
  if (parts.length === 1 && parts[0] === "") return [];
  return parts.flatMap((part) => part.split(","));
}

/** `limit` as a decimal integer; absent is 0, which validation rejects as missing. */
function limit(query: Query): number {
  const text = single(query, "limit").trim();
  if (text === "") return 0;
  if (!/^\d{1,9}$/.test(text)) {
    throw new InvalidArgumentError(`limit must be a decimal integer from 1 to 100; got "${text.slice(0, 32)}"`);
  }
  return Number(text);
}

const identity = (query: Query) => ({
  address: single(query, "address"),
  socialUsername: single(query, "socialUsername"),
  gameId: single(query, "gameId"),
});

const authorization = (query: Query) => ({ sig: single(query, "sig"), message: single(query, "message") });

const page = (query: Query) => ({ limit: limit(query), cursor: single(query, "cursor") });

/** GET /api/v1/profile */
export const decodeProfile = (query: Query) =>
  create(ProfileRequestSchema, { ...identity(query), ...authorization(query) });

/** GET /api/v1/relationshipGraph */
export const decodeRelationshipGraph = (query: Query) =>
  create(RelationshipGraphRequestSchema, { ...identity(query), ...authorization(query), ...page(query) });

/** GET /api/v1/multi-dimensional-recommendation (and its camelCase spelling) */
export const decodeRecommendation = (query: Query) =>
  create(MultiDimensionalRecommendationRequestSchema, { ...identity(query), ...page(query) });

/** GET /api/v1/mutualFriend */
export const decodeMutualFriend = (query: Query) =>
  create(MutualFriendRequestSchema, {
    address: list(query, "address"),
    socialUsername: list(query, "socialUsername"),
    gameId: list(query, "gameId"),
    ...page(query),
  });

/** GET /api/v1/mutualContractInteraction */
export const decodeMutualContractInteraction = (query: Query) =>
  create(MutualContractInteractionRequestSchema, { address: list(query, "address") });
