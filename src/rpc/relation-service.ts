import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  ProfileSchema,
  RelationshipGraphEntrySchema,
  type GameSchema,
  type RelationSchema,
  type SocialSchema,
  type UserInfoSchema,
  type MultiDimensionalRecommendationRequest,
  type MultiDimensionalRecommendationResponseSchema,
  type MutualContractInteractionRequest,
  type MutualContractInteractionResponseSchema,
  type MutualFriendRequest,
  type MutualFriendResponseSchema,
  type ProfileRequest,
  type ProfileResponseSchema,
  type RelationshipGraphRequest,
  type RelationshipGraphResponseSchema,
} from "../../gen/relgraph/v1/relation_service_pb.js";
import { PROFILE_STATEMENT, RELATIONSHIP_GRAPH_STATEMENT, type SiweVerifier } from "../auth/siwe.js";
import type { AnswerAuthorization, ResultEncryptor } from "../crypto/encryptor.js";
import type { Caller } from "../domain/caller.js";
import { InvalidArgumentError, NotOwnerError } from "../domain/errors.js";
import type { UserRecord } from "../domain/model.js";
import type { DescribedUser } from "../graph/paging.js";
import type { GraphQueries } from "../graph/queries.js";
import { toContractJson } from "../transport/contract-json.js";
import { addressList, identityList, pageRequest, singleIdentity, type SingleIdentityFields } from "./params.js";

/** What the service needs; everything is injected so each protocol and test shares one implementation. */
export interface RelationServiceDeps {
  queries: GraphQueries;
  authorizer: SiweVerifier;
  encryptor: ResultEncryptor;
}

/**
 * Creates the RelationService implementation. It only maps messages to graph queries and back;
 * validation lives in params.ts, authorization in the Authorizer, encryption in the Encryptor. Each
 * method takes the request message and the Caller its ApiKey was admitted as (request-gate.ts);
 * connect-es calls it through connectServiceImpl.
 */
export function createRelationService({ queries, authorizer, encryptor }: RelationServiceDeps) {
  /**
   * Verifies the authorization, resolves the user, and checks that the signer owns it. The
   * authorization is checked before the lookup, so a caller without one learns nothing about
   * which users exist beyond what the open operations show.
   */
  async function authorizeOwner(req: SingleIdentityFields & { sig: string; message: string }, statement: string) {
    const identity = singleIdentity(req);
    const authorization = await authorizer.verify({ sig: req.sig, message: req.message, statement });
    const [id] = await queries.resolveUsers([identity]);
    const user = await queries.user(id!);
    if (!user.addresses.includes(authorization.address)) {
      throw new NotOwnerError("the signer of message is not one of the queried user's addresses");
    }
    return { user, authorization };
  }

  // Every answer under one authorization shares its payload key; what each answer holds is decided
  // here, per request, so erasure and withdrawn consent show in the next answer all the same.
  const encryptJson = (authorization: AnswerAuthorization, json: string) =>
    encryptor.encryptForAuthorization(authorization, Buffer.from(json, "utf8"));

  return {
    async profile(req: ProfileRequest): Promise<MessageInitShape<typeof ProfileResponseSchema>> {
      const { user, authorization } = await authorizeOwner(req, PROFILE_STATEMENT);
      const counts = await queries.followCounts(user.id);
      const profile = { relationId: user.relationId, name: user.name, avatar: user.avatar, ...counts };
      return { data: await encryptJson(authorization, JSON.stringify(toContractJson(ProfileSchema, profile))) };
    },

    async relationshipGraph(req: RelationshipGraphRequest): Promise<MessageInitShape<typeof RelationshipGraphResponseSchema>> {
      const page = pageRequest(req);
      const { user, authorization } = await authorizeOwner(req, RELATIONSHIP_GRAPH_STATEMENT);
      const result = await queries.relationshipGraph(user.id, page);
      return { data: await encryptJson(authorization, relationshipGraphText(result.items)), cursor: result.cursor };
    },

    /** The chain's snapshot is held for `caller`'s ApiKey, within its share of the pool. */
    async multiDimensionalRecommendation(
      req: MultiDimensionalRecommendationRequest,
      caller: Caller,
    ): Promise<MessageInitShape<typeof MultiDimensionalRecommendationResponseSchema>> {
      const identity = singleIdentity(req);
      const page = pageRequest(req);
      const [id] = await queries.resolveUsers([identity]);
      const result = await queries.recommendations(id!, page, caller);
      return {
        data: result.items.map(({ user, description }) => userInfo(user, description)),
        cursor: result.cursor,
      };
    },

    async mutualFriend(req: MutualFriendRequest): Promise<MessageInitShape<typeof MutualFriendResponseSchema>> {
      const identities = identityList(req, 2);
      const page = pageRequest(req);
      const ids = await queries.resolveUsers(identities);
      if (ids.length < 2) {
        throw new InvalidArgumentError(`at least 2 distinct users are required; the identities given name ${ids.length}`);
      }
      const result = await queries.mutualFriends(ids, page);
      return { data: result.items.map((user) => userInfo(user)), cursor: result.cursor };
    },

    async mutualContractInteraction(req: MutualContractInteractionRequest): Promise<MessageInitShape<typeof MutualContractInteractionResponseSchema>> {
      return { data: await queries.mutualContracts(addressList(req.address, 2)) };
    },
  };
}

/** The RelationService methods, callable by Connect (as a ServiceImpl) and by the REST facade alike. */
export type RelationServiceMethods = ReturnType<typeof createRelationService>;

/*
 * Replies are built as plain init shapes, not messages: every consumer takes them as they are (the REST
 * facade's toContractJson, the unary paths' toBinaryFast, connect-es's own create), and building a
 * message per user, relation, account and game was a visible share of a REST request.
 */

/**
 * A relationship graph page's plaintext, the JSON list of its entries: what stringifying each entry's
 * toContractJson writes. All of an entry but its description follows from the peer's stored record,
 * so that part's text is made once per record object. The cache layer hands out one object per user
 * until the user changes, and a record is never modified in place (a changed user is a new object),
 * so a text can never show what its record no longer holds. The description is the entry's last
 * field (proto/), so it is appended; test/rpc/relationship-graph-text.test.ts holds the page to
 * stringifying each entry whole.
 */
export function relationshipGraphText(items: readonly DescribedUser[]): string {
  let text = "[";
  for (let i = 0; i < items.length; i++) {
    const { user: peer, description } = items[i]!;
    text += `${i === 0 ? "" : ","}${peerText(peer)}"description":${JSON.stringify(description)}}`;
  }
  return `${text}]`;
}

const peerTexts = new WeakMap<UserRecord, string>();

/** An entry's text up to its description: the opening brace and every field before it, each followed by a comma. */
function peerText(peer: UserRecord): string {
  let text = peerTexts.get(peer);
  if (text === undefined) {
    const { description: _description, ...fields } = toContractJson(RelationshipGraphEntrySchema, { ...userParts(peer), relation: relationOf(peer) });
    const json = JSON.stringify(fields);
    text = json === "{}" ? "{" : `${json.slice(0, -1)},`;
    peerTexts.set(peer, text);
  }
  return text;
}

function relationOf(user: UserRecord): MessageInitShape<typeof RelationSchema> {
  return { relationId: user.relationId, name: user.name, avatar: user.avatar };
}

/** The parts UserInfo and RelationshipGraphEntry share. */
function userParts(user: UserRecord): { address: string[]; social?: MessageInitShape<typeof SocialSchema>; game?: MessageInitShape<typeof GameSchema> } {
  return { address: user.addresses, social: user.social ?? undefined, game: user.game ?? undefined };
}

function userInfo(user: UserRecord, description?: string): MessageInitShape<typeof UserInfoSchema> {
  return { relationId: relationOf(user), ...userParts(user), description };
}
