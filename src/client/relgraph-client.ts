import type { JsonObject } from "@bufbuild/protobuf";
import { ConnectError, createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import {
  ErrorDetailSchema,
  MultiDimensionalRecommendationResponseSchema,
  MutualContractInteractionResponseSchema,
  MutualFriendResponseSchema,
  ProfileResponseSchema,
  RelationService,
  RelationshipGraphResponseSchema,
} from "../../gen/relgraph/v1/relation_service_pb.js";
import type { EncryptedPayload } from "../crypto/encryptor.js";
import type { PublicKeyNetwork } from "../crypto/key-network.js";
import { toContractJson } from "../transport/contract-json.js";
import { loadWasmBls } from "../crypto/bls-wasm.js";
import { createPayloadKeyCache, decryptResult, fetchKeyNetwork, type PayloadKeyCache } from "./decrypt.js";
import { createSiweMessage, type AuthorizedOperation } from "./siwe-message.js";

/**
 * relgraph's client for browsers and Node: every operation over REST, Connect or gRPC-Web (the
 * latter two through @connectrpc/connect-web), answers in the contract's JSON shapes whatever the
 * protocol, SIWE authorizations, and decryption through the key network. It uses fetch and no Node
 * built-ins, so a dApp bundles it as is.
 */

/** How the client reaches relgraph. */
export type Protocol = "rest" | "connect" | "grpc-web";

/** Options of createRelgraphClient. */
export interface RelgraphClientOptions {
  /** The server's base URL, e.g. "https://relgraph.example" (no /api/v1). */
  baseUrl: string;
  /** Sent as the ApiKey header (REST) or `apikey` metadata (Connect, gRPC-Web). */
  apiKey: string;
  /** Default "rest". */
  protocol?: Protocol;
  fetch?: typeof fetch;
  /** Budget for each call and each key node's answer. Default 10 s. */
  timeoutMs?: number;
  /**
   * Where decrypted payload keys are kept: by default in this client's memory (bounded, each until its
   * authorization expires), so that one threshold decryption per authorization opens all its answers.
   * Pass your own PayloadKeyCache to keep them elsewhere (anything lasting is your choice: a key opens
   * every answer of its authorization), or false to run a threshold decryption for every answer.
   */
  keyCache?: PayloadKeyCache | false;
}

/** `sig` and the signed EIP-4361 `message`, sent with Profile and Relationship graph. */
export interface Authorization {
  sig: string;
  message: string;
}

/** One user, by exactly one of their identifiers. */
export type UserRef = { address: string } | { socialUsername: string } | { gameId: string };

/** Users named by any mix of identifiers (Mutual friend). */
export interface UserRefs {
  address?: string[];
  socialUsername?: string[];
  gameId?: string[];
}

/** A page request: `limit` from 1 to 100, and the previous page's cursor (absent for the first). */
export interface PageRequest {
  limit: number;
  cursor?: string;
}

/** A page of results; `cursor` is "" on the last page. */
export interface Page<T> {
  data: T;
  cursor: string;
}

/** Data shapes of the contract. */
export interface Relation {
  relationId: string;
  name: string;
  avatar: string;
}
// The same shapes the service stores; domain/model.ts imports nothing, so the bundle stays Node-free.
export type { Game, Social } from "../domain/model.js";
import type { Game, Social } from "../domain/model.js";
/** A user in Mutual friend and recommendation answers; `description` is the recommendation's reason. */
export interface UserInfo {
  relationId: Relation;
  address: string[];
  social: Social | null;
  game: Game | null;
  description?: string;
}
/** The decrypted Profile. */
export interface Profile {
  relationId: string;
  name: string;
  avatar: string;
  followingCount: number;
  followerCount: number;
}
/** One decrypted Relationship graph entry. */
export interface RelationshipGraphEntry {
  relation: Relation;
  address: string[];
  social: Social | null;
  game: Game | null;
  description: string;
}
/** EncryptedData, as Profile and Relationship graph return it. */
export type EncryptedData = EncryptedPayload;

/** Thrown when relgraph answers with an error code; `code` and `desc` are the contract's. */
export class RelgraphClientError extends Error {
  constructor(
    readonly code: string,
    readonly desc: string,
    readonly status?: number,
  ) {
    super(`${code}: ${desc}`);
    this.name = "RelgraphClientError";
  }
}

/** Signs EIP-191 personal messages for one address, e.g. a wallet (see eip1193Signer). */
export interface MessageSigner {
  address: string;
  signMessage(message: string): Promise<string>;
}

/** Options of RelgraphClient.authorize. */
export interface AuthorizeOptions {
  /** The dApp's host and URI the message names; default the page's location, else the server's URL. */
  domain?: string;
  uri?: string;
  chainId?: number;
  validForSeconds?: number;
}

/** The client; create it with createRelgraphClient. */
export interface RelgraphClient {
  readonly protocol: Protocol;
  profile(user: UserRef, authorization: Authorization): Promise<EncryptedData>;
  relationshipGraph(user: UserRef, authorization: Authorization, page: PageRequest): Promise<Page<EncryptedData>>;
  multiDimensionalRecommendation(user: UserRef, page: PageRequest): Promise<Page<UserInfo[]>>;
  mutualFriend(users: UserRefs, page: PageRequest): Promise<Page<UserInfo[]>>;
  mutualContractInteraction(addresses: string[]): Promise<string[]>;
  /** Signs an authorization for `operation` (it picks the statement) with `signer`. */
  authorize(operation: AuthorizedOperation, signer: MessageSigner, options?: AuthorizeOptions): Promise<Authorization>;
  /** The server's key network (GET /key-network), fetched once. */
  keyNetwork(): Promise<PublicKeyNetwork>;
  /**
   * Decrypts an EncryptedData with the authorization it was fetched with and returns its JSON: through
   * the key nodes the first time, with the kept payload key for the authorization's later answers.
   */
  decrypt<T = unknown>(encrypted: EncryptedData, authorization: Authorization): Promise<T>;
  /** Profile, decrypted. */
  decryptedProfile(user: UserRef, authorization: Authorization): Promise<Profile>;
  /** One Relationship graph page, decrypted. */
  decryptedRelationshipGraph(user: UserRef, authorization: Authorization, page: PageRequest): Promise<Page<RelationshipGraphEntry[]>>;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** The REST paths of the operations (the server's route table serves the same). */
const REST_PATHS = {
  profile: "/api/v1/profile",
  relationshipGraph: "/api/v1/relationshipGraph",
  multiDimensionalRecommendation: "/api/v1/multi-dimensional-recommendation",
  mutualFriend: "/api/v1/mutualFriend",
  mutualContractInteraction: "/api/v1/mutualContractInteraction",
} as const;

type Operation = keyof typeof REST_PATHS;
type Params = Record<string, string | number | string[] | undefined>;

/** Creates a client of the relgraph server at `baseUrl`. */
export function createRelgraphClient(options: RelgraphClientOptions): RelgraphClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const protocol = options.protocol ?? "rest";
  const doFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const rpc = protocol === "rest" ? null : createClient(RelationService, rpcTransport(protocol, baseUrl, options.apiKey, doFetch));
  let network: Promise<PublicKeyNetwork> | undefined;
  const keyCache = options.keyCache === false ? undefined : (options.keyCache ?? createPayloadKeyCache());
  // Compiling the WebAssembly of the pairings starts now, while the wallet signs and the server answers;
  // a failure shows at the first decryption, which awaits it again.
  loadWasmBls().catch(() => undefined);

  /**
   * Starts fetching the key network while the query runs, so that the first decryption does not wait
   * for one more round trip; a failure shows when decrypt awaits it (which fetches again).
   */
  const prefetchKeyNetwork = () => {
    client.keyNetwork().catch(() => undefined);
  };

  /**
   * Calls `operation` with `params` (proto JSON names) and returns the response in the contract's
   * JSON (transport/contract-json.ts, as the REST envelope writes it), so answers look the same on every protocol.
   */
  const call = async (operation: Operation, params: Params): Promise<JsonObject> => {
    if (rpc === null) return restCall(doFetch, baseUrl, options.apiKey, REST_PATHS[operation], params, timeoutMs);
    try {
      const request = params as never;
      const signal = AbortSignal.timeout(timeoutMs);
      switch (operation) {
        case "profile":
          return toContractJson(ProfileResponseSchema, await rpc.profile(request, { signal }));
        case "relationshipGraph":
          return toContractJson(RelationshipGraphResponseSchema, await rpc.relationshipGraph(request, { signal }));
        case "multiDimensionalRecommendation":
          return toContractJson(MultiDimensionalRecommendationResponseSchema, await rpc.multiDimensionalRecommendation(request, { signal }));
        case "mutualFriend":
          return toContractJson(MutualFriendResponseSchema, await rpc.mutualFriend(request, { signal }));
        case "mutualContractInteraction":
          return toContractJson(MutualContractInteractionResponseSchema, await rpc.mutualContractInteraction(request, { signal }));
      }
    } catch (error) {
      throw fromConnectError(error);
    }
  };
  const page = <T>(answer: JsonObject): Page<T> => ({ data: answer.data as T, cursor: (answer.cursor as string | undefined) ?? "" });

  const client: RelgraphClient = {
    protocol,
    async profile(user, authorization) {
      return (await call("profile", { ...user, ...authorization })).data as unknown as EncryptedData;
    },
    async relationshipGraph(user, authorization, request) {
      return page(await call("relationshipGraph", { ...user, ...authorization, ...pageParams(request) }));
    },
    async multiDimensionalRecommendation(user, request) {
      return page(await call("multiDimensionalRecommendation", { ...user, ...pageParams(request) }));
    },
    async mutualFriend(users, request) {
      return page(await call("mutualFriend", { ...users, ...pageParams(request) }));
    },
    async mutualContractInteraction(addresses) {
      return (await call("mutualContractInteraction", { address: addresses })).data as string[];
    },
    async authorize(operation, signer, authorizeOptions = {}) {
      const here = typeof location === "object" && /^https?:$/.test(location.protocol) ? location : new URL(baseUrl);
      const message = createSiweMessage({
        operation,
        address: signer.address,
        domain: authorizeOptions.domain ?? here.host,
        uri: authorizeOptions.uri ?? here.origin,
        chainId: authorizeOptions.chainId,
        validForSeconds: authorizeOptions.validForSeconds,
      });
      return { sig: await signer.signMessage(message), message };
    },
    keyNetwork() {
      network ??= fetchKeyNetwork(baseUrl, { fetch: doFetch, timeoutMs }).catch((error: unknown) => {
        network = undefined;
        throw error;
      });
      return network;
    },
    async decrypt<T>(encrypted: EncryptedData, authorization: Authorization) {
      const plaintext = await decryptResult(encrypted, {
        network: await client.keyNetwork(),
        serverUrl: baseUrl,
        ...authorization,
        fetch: doFetch,
        timeoutMs,
        keyCache,
      });
      return JSON.parse(new TextDecoder().decode(plaintext)) as T;
    },
    async decryptedProfile(user, authorization) {
      prefetchKeyNetwork();
      return client.decrypt<Profile>(await client.profile(user, authorization), authorization);
    },
    async decryptedRelationshipGraph(user, authorization, request) {
      prefetchKeyNetwork();
      const answer = await client.relationshipGraph(user, authorization, request);
      return { data: await client.decrypt<RelationshipGraphEntry[]>(answer.data, authorization), cursor: answer.cursor };
    },
  };
  return client;
}

/** A MessageSigner over an EIP-1193 provider (`window.ethereum`): asks for the account, signs with personal_sign. */
export async function eip1193Signer(provider: Eip1193Provider): Promise<MessageSigner> {
  const accounts = (await provider.request({ method: "eth_requestAccounts" })) as unknown;
  const address = Array.isArray(accounts) && typeof accounts[0] === "string" ? accounts[0] : null;
  if (address === null) throw new Error("the wallet returned no account");
  return {
    address,
    async signMessage(message) {
      const hex = `0x${Array.from(new TextEncoder().encode(message), (b) => b.toString(16).padStart(2, "0")).join("")}`;
      const sig = (await provider.request({ method: "personal_sign", params: [hex, address] })) as unknown;
      if (typeof sig !== "string") throw new Error("the wallet returned no signature");
      return sig;
    },
  };
}

/** The part of EIP-1193 the client uses. */
export interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

function rpcTransport(protocol: "connect" | "grpc-web", baseUrl: string, apiKey: string, doFetch: typeof fetch): Transport {
  const withApiKey: Interceptor = (next) => (request) => {
    request.header.set("apikey", apiKey);
    return next(request);
  };
  const options = { baseUrl, fetch: doFetch, interceptors: [withApiKey] };
  // Connect speaks JSON, readable in the browser's network panel; gRPC-Web only has binary.
  return protocol === "connect" ? createConnectTransport(options) : createGrpcWebTransport(options);
}

function pageParams({ limit, cursor }: PageRequest): Params {
  return { limit, cursor: cursor ?? "" };
}

async function restCall(
  doFetch: typeof fetch,
  baseUrl: string,
  apiKey: string,
  path: string,
  params: Params,
  timeoutMs: number,
): Promise<JsonObject> {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === "" || (Array.isArray(value) && value.length === 0)) continue;
    query.set(name, Array.isArray(value) ? value.join(",") : String(value));
  }
  let response: Response;
  try {
    response = await doFetch(`${baseUrl}${path}?${query}`, {
      headers: { ApiKey: apiKey },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new RelgraphClientError("50300", `cannot reach ${baseUrl}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const envelope = (await response.json().catch(() => null)) as JsonObject | null;
  if (envelope === null || typeof envelope.code !== "string") {
    throw new RelgraphClientError("50000", `${path} answered HTTP ${response.status} without an envelope`, response.status);
  }
  if (envelope.code !== "0") throw new RelgraphClientError(envelope.code, String(envelope.desc ?? ""), response.status);
  return envelope;
}

function fromConnectError(error: unknown): unknown {
  if (!(error instanceof ConnectError)) return error;
  const detail = error.findDetails(ErrorDetailSchema)[0];
  if (detail) return new RelgraphClientError(detail.code, detail.desc);
  return new RelgraphClientError("50000", error.rawMessage || error.message);
}
