import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { ProfileSchema, RelationshipGraphEntrySchema } from "../../gen/relgraph/v1/relation_service_pb.js";
import {
  AuthorizationExpiredError,
  InvalidApiKeyError,
  InvalidArgumentError,
  InvalidAuthorizationError,
  InvalidCursorError,
  MissingApiKeyError,
  NotOwnerError,
  RateLimitedError,
  StoreUnavailableError,
  UserNotFoundError,
} from "../domain/errors.js";
import { PROFILE_STATEMENT, RELATIONSHIP_GRAPH_STATEMENT } from "../domain/statements.js";
import { demoWallet } from "../synthetic/demo-wallet.js";
import { REST_ROUTES } from "../rest/facade.js";
import { toPublicError } from "../transport/errors.js";

/**
 * The OpenAPI 3.1 document of relgraph's HTTP surface, generated when the server starts: the REST
 * operations come from the facade's route table (rest/facade.ts) and the proto descriptors of their
 * RPCs, their error answers from the one error mapping (transport/errors.ts). Nothing about an operation
 * is written down twice, so the document cannot drift from what the server does.
 */

type Json = Record<string, unknown>;

/** Where the server publishes the document, and the pages that use it. */
export const OPENAPI_PATH = "/openapi.json";

/** What the contract says of each query parameter, by its proto JSON name. */
const PARAMETER_TEXT: Record<string, string> = {
  address: "An Ethereum address (0x + 40 hex), any letter case; a mixed-case address must carry a valid EIP-55 checksum.",
  socialUsername: "A social username, matched case-insensitively (Unicode NFC and case folding).",
  gameId: "A game account id.",
  sig: "The 65-byte EIP-191 signature of `message`, 0x-hex.",
  message: "The signed EIP-4361 (SIWE) text. It may be reused until it expires, e.g. for every page of a chain.",
  limit: "Page size, a decimal integer from 1 to 100.",
  cursor: "The previous page's `cursor`, verbatim; absent or empty for the first page.",
};

/** One-line summaries, by RPC name. */
const SUMMARIES: Record<string, string> = {
  Profile: "The user's profile, encrypted to the signer",
  RelationshipGraph: "The user's released 1-degree relations, encrypted to the signer, one page",
  MultiDimensionalRecommendation: "Users who share signals with the user but are not their friends, with the reasons",
  MutualFriend: "Users who are friends of every queried user",
  MutualContractInteraction: "Contracts every queried address interacted with",
};

/** A route the server registered: its URL (Fastify's syntax, `:param`) and methods. */
export interface ServedRoute {
  url: string;
  methods: readonly string[];
}

/**
 * Builds the document; `version` is the package's, `served` the routes the server registered (see
 * web/pages.ts). The REST operations come from the route table; every other HTTP route served is
 * listed too, described from OPERATOR_PATHS when it is known there, so the document names exactly
 * what this server, in this configuration, answers.
 */
export function createOpenApiDocument(version: string, served: readonly ServedRoute[]): Json {
  const schemas: Record<string, Json> = {};
  const ref = (message: DescMessage) => {
    addSchema(message, schemas);
    return { $ref: `#/components/schemas/${message.name}` };
  };
  // The plaintexts of the encrypted operations are proto messages too; decrypting clients want their shape.
  ref(ProfileSchema);
  ref(RelationshipGraphEntrySchema);

  const paths: Record<string, Json> = {};
  const operationIds = new Set<string>();
  for (const route of REST_ROUTES) {
    const { input, output, name } = route.method;
    const fields = input.fields.map((field) => field.jsonName);
    const paged = fields.includes("cursor");
    const authorized = fields.includes("sig");
    const dataField = output.fields.find((field) => field.jsonName === "data");
    if (!dataField) throw new Error(`${output.typeName} has no data field`);
    const envelope: Json = {
      type: "object",
      required: ["code", "desc", "data", ...(paged ? ["cursor"] : [])],
      properties: {
        code: { type: "string", const: "0" },
        desc: { type: "string", const: "success" },
        data: fieldSchema(dataField, ref, false),
        ...(paged ? { cursor: { type: "string", description: 'The next page\'s cursor; "" on the last page.' } } : {}),
      },
    };
    const statement = name === "Profile" ? PROFILE_STATEMENT : name === "RelationshipGraph" ? RELATIONSHIP_GRAPH_STATEMENT : null;
    // The second spelling of a path gets its own id: OpenAPI requires unique ones.
    const operationId = operationIds.has(route.method.localName) ? `${route.method.localName}Alias` : route.method.localName;
    operationIds.add(operationId);
    paths[route.path] = {
      get: {
        operationId,
        "x-relgraph-rpc": name,
        summary: SUMMARIES[name] ?? name,
        description: describeOperation(route.method.parent.typeName, name, statement),
        tags: ["relations"],
        security: [{ ApiKey: [] }],
        parameters: input.fields.map((field) => parameter(field, route.path)),
        responses: {
          "200": {
            description: "Success",
            headers: RATE_LIMIT_HEADERS,
            content: {
              "application/json": {
                schema: envelope,
                example: {
                  code: "0",
                  desc: "success",
                  data: sampleOf(dataField, name === "MultiDimensionalRecommendation"),
                  ...(paged ? { cursor: "" } : {}),
                },
              },
            },
          },
          // Every operation that names a user or an address answers 11602 when it is unknown.
          ...errorResponses({ identified: ["address", "socialUsername", "gameId"].some((field) => fields.includes(field)), paged, authorized }),
        },
        ...(statement === null
          ? {}
          : {
              "x-relgraph-plaintext": {
                description: "The JSON that `data` decrypts to (through the key nodes, with the same authorization).",
                schema: name === "Profile" ? ref(ProfileSchema) : { type: "array", items: ref(RelationshipGraphEntrySchema) },
              },
            }),
      },
    };
  }
  for (const route of served) {
    // Connect, gRPC-Web and reflection are the proto's; "*" answers CORS preflights; /api/v1/* is the envelope's 404.
    if (route.url.startsWith("/relgraph.v1.") || route.url.startsWith("/grpc.") || route.url === "*" || route.url === "/api/v1/*") continue;
    const path = openApiPath(route.url);
    if (path in paths && !(path in OPERATOR_PATHS)) continue;
    const item = (paths[path] ??= {}) as Json;
    for (const method of route.methods.map((m) => m.toLowerCase())) {
      if (method === "head" || method === "options") continue;
      item[method] = (OPERATOR_PATHS[path]?.[method] as Json | undefined) ?? {
        tags: ["operators"],
        summary: `${method.toUpperCase()} ${path}`,
        responses: { "200": { description: "OK" } },
      };
    }
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "relgraph REST API",
      version,
      description:
        "Read-only relationship data of web3 social graphs. Every operation answers in an envelope " +
        '`{"code","desc","data"}` (plus `cursor` when paged); `code` "0" is success. The same operations are ' +
        "served over Connect, gRPC and gRPC-Web as relgraph.v1.RelationService.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    servers: [{ url: "/" }],
    tags: [
      { name: "relations", description: "The five operations; they need an ApiKey." },
      { name: "operators", description: "Health, the key network and the pages; no ApiKey." },
    ],
    paths,
    components: {
      securitySchemes: { ApiKey: { type: "apiKey", in: "header", name: "ApiKey" } },
      schemas: { ...schemas, ErrorEnvelope: ERROR_ENVELOPE },
    },
  };
}

function describeOperation(service: string, rpc: string, statement: string | null): string {
  const lines = [`The RPC ${service}/${rpc}, over REST.`];
  if (rpc === "MutualFriend") lines.push("Needs at least two distinct users in total across its three lists.");
  else if (rpc === "MutualContractInteraction") lines.push("Needs at least two distinct addresses.");
  else lines.push("Give exactly one of `address`, `socialUsername`, `gameId`.");
  if (statement !== null) {
    lines.push(
      `Needs \`sig\` and \`message\`: an EIP-4361 authorization whose statement is exactly "${statement}", ` +
        "signed by one of the user's addresses. `data` is EncryptedData; only the signer can have it decrypted " +
        "by a threshold of the key nodes (GET /key-network).",
    );
  }
  return lines.join(" ");
}

function parameter(field: DescField, path: string): Json {
  const name = field.jsonName;
  const list = field.fieldKind === "list";
  const scalar = field.fieldKind === "scalar" && field.scalar === ScalarType.INT32 ? { type: "integer", minimum: 1, maximum: 100 } : { type: "string" };
  return {
    name,
    in: "query",
    required: name === "limit" || name === "sig" || name === "message" || (list && path.endsWith("mutualContractInteraction")),
    description: list ? `${PARAMETER_TEXT[name] ?? name} Comma-separated, at most 50 items.` : (PARAMETER_TEXT[name] ?? name),
    schema: list ? { type: "array", items: scalar, maxItems: 50 } : scalar,
    ...(list ? { style: "form", explode: false } : {}),
    ...exampleOf(name, list),
  };
}

/**
 * Examples from the bundled demo dataset, so that "try it" on a fresh `relgraph serve` finds users.
 * Only `address` names a user: the single-user operations take exactly one identifier.
 */
function exampleOf(name: string, list: boolean): Json {
  const single: Record<string, unknown> = { address: demoWallet(1).address.toLowerCase(), limit: 10 };
  if (list && name === "address") return { example: [demoWallet(1).address.toLowerCase(), demoWallet(2).address.toLowerCase()] };
  if (list) return {};
  return name in single ? { example: single[name] } : {};
}

/** The error answers an operation can give, grouped by HTTP status, with the real mapping's code and status. */
function errorResponses(kind: { identified: boolean; paged: boolean; authorized: boolean }): Json {
  const errors: Error[] = [
    new MissingApiKeyError("the ApiKey header is required"),
    new InvalidApiKeyError("the ApiKey is unknown or revoked"),
    new RateLimitedError("rate limit exceeded for this ApiKey; retry after the Retry-After seconds"),
    new InvalidArgumentError("limit must be a decimal integer from 1 to 100"),
    new StoreUnavailableError("the store is unavailable"),
    new Error("an unexpected failure"),
  ];
  if (kind.identified) errors.push(new UserNotFoundError("no user has that address"));
  if (kind.paged) errors.push(new InvalidCursorError("the cursor is invalid or has expired"));
  if (kind.authorized) {
    errors.push(
      new AuthorizationExpiredError("the authorization has expired"),
      new InvalidAuthorizationError("the message has the wrong statement"),
      new NotOwnerError("the signer is not one of the user's addresses"),
    );
  }
  const byStatus = new Map<number, Json>();
  for (const error of errors) {
    const failure = toPublicError(error);
    const examples = (byStatus.get(failure.http) ?? {}) as Record<string, Json>;
    examples[`code ${failure.code}`] = { value: { code: failure.code, desc: failure.desc, data: null } };
    byStatus.set(failure.http, examples);
  }
  const responses: Json = {};
  for (const [status, examples] of [...byStatus].sort(([a], [b]) => a - b)) {
    const codes = Object.keys(examples).map((key) => key.slice(5));
    responses[String(status)] = {
      description: `Error ${codes.join(", ")}`,
      ...(status === 429 ? { headers: { "Retry-After": { schema: { type: "integer" }, description: "Seconds to wait." }, ...RATE_LIMIT_HEADERS } } : {}),
      content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" }, examples } },
    };
  }
  return responses;
}

/** Sent with every answer to a rate-limited ApiKey (RATE_LIMIT or `keys create --rate`), refusals included. */
const RATE_LIMIT_HEADERS: Json = {
  "RateLimit-Limit": { schema: { type: "integer" }, description: "Requests the ApiKey may make per window." },
  "RateLimit-Remaining": { schema: { type: "integer" }, description: "Requests left in the current window." },
  "RateLimit-Reset": { schema: { type: "integer" }, description: "Seconds until the current window ends." },
};

/** Sample values by field name, for the success examples; every other field gets its type's sample. */
const SAMPLES: Record<string, unknown> = {
  relationId: "u2",
  name: "Bob",
  avatar: "https://avatars.relgraph.example/u2.png",
  username: "bob",
  gameId: "76561198000000002",
  address: ["0x8ba1f109551bd432803012645ac136ddd64dba72"],
  description: "Followed each other on social",
  followingCount: 12,
  followerCount: 34,
  encryptedString: "base64 of IV, ciphertext and tag",
  encryptedSymmetricKey: "base64 of the identity-based ciphertext of the AES key",
  dataToEncryptHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  chain: "ethereum",
  backend: "relgraph",
  parameters: [":userAddress"],
  comparator: "=",
  value: "0x8ba1f109551bd432803012645ac136ddd64dba72",
};

/** An example value of a field, built from the descriptors; a recommendation's description names its signals. */
function sampleOf(field: DescField, recommendation: boolean): unknown {
  if (field.jsonName === "data" && field.fieldKind === "list" && field.listKind === "scalar") {
    return ["0x1f9840a85d5af5bf1d1762f925bdaddc4201f984"]; // MutualContractInteraction: contract addresses
  }
  const message = (desc: DescMessage): Json => {
    const out: Json = {};
    for (const f of desc.fields) {
      if (f.jsonName === "description" && desc.name === "UserInfo") {
        if (recommendation) out.description = "2 mutual friends, 1 account both follow";
        continue;
      }
      out[f.jsonName] = sampleOf(f, recommendation);
    }
    return out;
  };
  if (field.fieldKind === "message") return message(field.message);
  if (field.fieldKind === "list" && field.listKind === "message") return [message(field.message)];
  if (field.jsonName in SAMPLES) return SAMPLES[field.jsonName];
  if (field.fieldKind === "list") return [];
  return field.fieldKind === "scalar" && field.scalar === ScalarType.INT32 ? 0 : "";
}

const ERROR_ENVELOPE: Json = {
  type: "object",
  required: ["code", "desc", "data"],
  properties: {
    code: { type: "string", enum: ["10001", "10002", "10100", "10101", "10102", "10110", "11600", "11602", "11603", "50000", "50300"] },
    desc: { type: "string", description: "A human message naming the parameter at fault." },
    data: { type: "null" },
  },
};

/** JSON Schema of a message as relgraph writes it (transport/contract-json.ts): every field present, unset messages null. */
function addSchema(message: DescMessage, schemas: Record<string, Json>): void {
  if (message.name in schemas) return;
  schemas[message.name] = {}; // reserve first: messages may refer to themselves
  const ref = (m: DescMessage) => {
    addSchema(m, schemas);
    return { $ref: `#/components/schemas/${m.name}` };
  };
  const properties: Json = {};
  const required: string[] = [];
  for (const field of message.fields) {
    properties[field.jsonName] = fieldSchema(field, ref, true);
    if (!(field.fieldKind === "scalar" && field.presence !== FeatureSet_FieldPresence.IMPLICIT)) required.push(field.jsonName);
  }
  schemas[message.name] = { type: "object", required, properties };
}

function fieldSchema(field: DescField, ref: (m: DescMessage) => Json, nullable: boolean): Json {
  switch (field.fieldKind) {
    case "scalar":
      return scalarSchema(field.scalar);
    case "enum":
      return { type: "string" };
    case "message":
      return nullable ? { anyOf: [ref(field.message), { type: "null" }] } : ref(field.message);
    case "list":
      return { type: "array", items: field.listKind === "message" ? ref(field.message) : field.listKind === "scalar" ? scalarSchema(field.scalar) : { type: "string" } };
    case "map":
      return { type: "object" };
  }
}

function scalarSchema(scalar: ScalarType): Json {
  switch (scalar) {
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int64", minimum: 0 };
    case ScalarType.STRING:
      return { type: "string" };
    default:
      // 64-bit integers and bytes are strings in proto3 JSON.
      return { type: "string" };
  }
}

/** Fastify's `:param` as OpenAPI's `{param}`; the development key nodes' numbered prefixes as one template. */
function openApiPath(url: string): string {
  return url.replace(/^\/dev-key-nodes\/\d+\//, "/dev-key-nodes/{index}/").replace(/:(\w+)/g, "{$1}");
}

const page = (description: string, type = "text/html"): Record<string, Json> => ({
  get: { tags: ["operators"], summary: description, responses: { "200": { description, content: { [type]: {} } } } },
});

/** What is known of the routes outside the five operations: health, the key network, the key nodes and the pages. */
const OPERATOR_PATHS: Record<string, Record<string, Json>> = {
  "/healthz": page("Liveness", "application/json"),
  "/readyz": {
    get: {
      tags: ["operators"],
      summary: "Readiness: the store answers within 1 s",
      responses: { "200": { description: "Ready" }, "503": { description: "The store does not answer" } },
    },
  },
  "/key-network": {
    get: {
      tags: ["operators"],
      summary: "The key network clients decrypt with: threshold, public key, and each key node's URL and public share",
      responses: { "200": { description: "The public key network" }, "404": { description: "This server encrypts with the Lit network" } },
    },
  },
  "/dev-key-nodes/{index}/v1/decryption-share": {
    post: {
      tags: ["operators"],
      summary: "A key node of the development network (only without KEY_NETWORK_FILE): a decryption share for the signer",
      parameters: [{ name: "index", in: "path", required: true, schema: { type: "integer", minimum: 1 } }],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["accessControlConditions", "dataToEncryptHash", "authSig"],
              properties: {
                accessControlConditions: { type: "array", items: { $ref: "#/components/schemas/AccessControlCondition" } },
                dataToEncryptHash: { type: "string", pattern: "^[0-9a-f]{64}$" },
                authSig: { type: "object", required: ["sig", "signedMessage"], properties: { sig: { type: "string" }, signedMessage: { type: "string" } } },
              },
            },
          },
        },
      },
      responses: {
        "200": { description: "The node's share" },
        "400": { description: "Malformed request" },
        "401": { description: "The authorization is invalid or expired" },
        "403": { description: "The conditions allow another address than the signer" },
      },
    },
  },
  "/dev-key-nodes/{index}/healthz": {
    get: {
      tags: ["operators"],
      summary: "A development key node's liveness",
      parameters: [{ name: "index", in: "path", required: true, schema: { type: "integer", minimum: 1 } }],
      responses: { "200": { description: "Alive" } },
    },
  },
  [OPENAPI_PATH]: page("This document", "application/json"),
  "/docs": page("The API docs page, rendering this document"),
  "/demo": page("The demo dApp: sign in with a wallet, see your decrypted data"),
  "/web/{file}": {
    get: {
      tags: ["operators"],
      summary: "The pages' scripts and styles",
      parameters: [{ name: "file", in: "path", required: true, schema: { type: "string" } }],
      responses: { "200": { description: "The file" }, "404": { description: "No such file" } },
    },
  },
};
