import { create, equals, fromJson, toBinary, toJson, type DescMessage, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { base64Encode } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { Http2SessionManager, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ErrorDetailSchema,
  MultiDimensionalRecommendationRequestSchema,
  MultiDimensionalRecommendationResponseSchema,
  MutualContractInteractionRequestSchema,
  MutualContractInteractionResponseSchema,
  MutualFriendRequestSchema,
  MutualFriendResponseSchema,
  RelationService,
} from "../../gen/relgraph/v1/relation_service_pb.js";
import { EXPECTED, UNKNOWN_ADDRESS, WALLETS, addr, fixtureRecords } from "../support/fixtures.js";
import { SERVING_WAYS, TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { createRelationGrpcClient, errorDetailsOf, type RelationGrpcClient } from "./grpc-client.js";
import { restGet, type Params } from "./http.js";
import { withoutDefaults } from "./proto-json.js";

/** One question asked over every protocol: the RPC, its request, and the same question over REST. */
interface Question<Req extends DescMessage = DescMessage, Res extends DescMessage = DescMessage> {
  name: string;
  method: (typeof RelationService.method)[keyof typeof RelationService.method];
  request: MessageInitShape<Req>;
  requestSchema: Req;
  responseSchema: Res;
  rest: [path: string, params: Params];
}

const question = <Req extends DescMessage, Res extends DescMessage>(q: Question<Req, Res>) => q as unknown as Question;

const QUESTIONS: Question[] = [
  question({
    name: "MutualFriend, first page",
    method: RelationService.method.mutualFriend,
    request: { address: [WALLETS.alice.address, addr("bob")], limit: 3 },
    requestSchema: MutualFriendRequestSchema,
    responseSchema: MutualFriendResponseSchema,
    rest: ["/api/v1/mutualFriend", { address: `${WALLETS.alice.address},${addr("bob")}`, limit: 3 }],
  }),
  question({
    name: "MutualFriend, mixed identities, last page",
    method: RelationService.method.mutualFriend,
    request: { address: [addr("alice")], socialUsername: ["BOB_SOCIAL"], gameId: [], limit: 100 },
    requestSchema: MutualFriendRequestSchema,
    responseSchema: MutualFriendResponseSchema,
    rest: ["/api/v1/mutualFriend", { address: addr("alice"), socialUsername: "BOB_SOCIAL", limit: 100 }],
  }),
  question({
    name: "MutualContractInteraction",
    method: RelationService.method.mutualContractInteraction,
    request: { address: [addr("bob"), WALLETS.carol.address] },
    requestSchema: MutualContractInteractionRequestSchema,
    responseSchema: MutualContractInteractionResponseSchema,
    rest: ["/api/v1/mutualContractInteraction", { address: `${addr("bob")},${WALLETS.carol.address}` }],
  }),
  question({
    name: "MultiDimensionalRecommendation, first page",
    method: RelationService.method.multiDimensionalRecommendation,
    request: { socialUsername: "alice", limit: 4 },
    requestSchema: MultiDimensionalRecommendationRequestSchema,
    responseSchema: MultiDimensionalRecommendationResponseSchema,
    rest: ["/api/v1/multi-dimensional-recommendation", { socialUsername: "alice", limit: 4 }],
  }),
  question({
    name: "MultiDimensionalRecommendation, whole list",
    method: RelationService.method.multiDimensionalRecommendation,
    request: { gameId: "76561198000000001", limit: 100 },
    requestSchema: MultiDimensionalRecommendationRequestSchema,
    responseSchema: MultiDimensionalRecommendationResponseSchema,
    rest: ["/api/v1/multiDimensionalRecommendation", { gameId: "76561198000000001", limit: 100 }],
  }),
];

describe.each(SERVING_WAYS)("one server, every protocol, the same answers ($name)", ({ env }) => {
  let server: RunningRelgraph;
  let grpcJs: RelationGrpcClient;
  const sessions: Http2SessionManager[] = [];
  const transports = new Map<string, Transport>();
  /** The REST envelope of each question, fetched once. */
  const restAnswers = new Map<string, { data: JsonValue; cursor?: string; text: string }>();

  beforeAll(async () => {
    server = await startRelgraph({ records: fixtureRecords(), env });
    const baseUrl = server.url;
    const h2 = () => {
      const manager = new Http2SessionManager(baseUrl);
      sessions.push(manager);
      return { httpVersion: "2" as const, sessionManager: manager };
    };
    transports.set("Connect JSON over HTTP/1.1", createConnectTransport({ baseUrl, httpVersion: "1.1" }));
    transports.set("Connect binary over HTTP/1.1", createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }));
    transports.set("Connect JSON over HTTP/2", createConnectTransport({ baseUrl, ...h2() }));
    transports.set("Connect binary over HTTP/2", createConnectTransport({ baseUrl, ...h2(), useBinaryFormat: true }));
    transports.set("Connect GET (JSON) over HTTP/1.1", createConnectTransport({ baseUrl, httpVersion: "1.1", useHttpGet: true }));
    transports.set("Connect GET (binary) over HTTP/2", createConnectTransport({ baseUrl, ...h2(), useHttpGet: true, useBinaryFormat: true }));
    transports.set("gRPC-Web binary over HTTP/1.1", createGrpcWebTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }));
    transports.set("gRPC-Web JSON over HTTP/2", createGrpcWebTransport({ baseUrl, ...h2() }));
    transports.set("gRPC over HTTP/2", createGrpcTransport({ baseUrl, ...h2() }));
    grpcJs = createRelationGrpcClient(`127.0.0.1:${server.port}`);
    for (const q of QUESTIONS) {
      const reply = await restGet(baseUrl, ...q.rest);
      expect(reply.status, reply.text).toBe(200);
      restAnswers.set(q.name, { ...reply.body, text: reply.text });
    }
  });
  afterAll(async () => {
    grpcJs?.close();
    for (const manager of sessions) manager.abort();
    await server?.close();
  });

  /** The answer REST gave, as the RPC response message (proto3 JSON reads null as unset). */
  const restAsMessage = (q: Question) => {
    const { data, cursor } = restAnswers.get(q.name)!;
    return fromJson(q.responseSchema, cursor === undefined ? { data } : { data, cursor });
  };

  /** The RPC answer equals REST's: as messages, and as JSON (REST keeps defaults that proto3 JSON drops). */
  const expectSameAsRest = (q: Question, response: unknown) => {
    const message = create(q.responseSchema, response as MessageInitShape<DescMessage>);
    expect(equals(q.responseSchema, message, restAsMessage(q)), q.name).toBe(true);
    const { data, cursor } = restAnswers.get(q.name)!;
    const restJson = withoutDefaults(cursor === undefined ? { data } : { data, cursor }) ?? {};
    expect(toJson(q.responseSchema, message)).toEqual(restJson);
  };

  it("REST answers what the fixture says (the baseline the RPCs are held to)", () => {
    expect(restAnswers.get("MutualContractInteraction")!.data).toEqual(EXPECTED.mutualContracts.bobCarol);
    const whole = restAnswers.get("MultiDimensionalRecommendation, whole list")!.data as { description: string }[];
    expect(whole.map((u) => u.description)).toEqual(EXPECTED.aliceRecommendations.map(([, d]) => d));
  });

  const transportNames = [
    "Connect JSON over HTTP/1.1",
    "Connect binary over HTTP/1.1",
    "Connect JSON over HTTP/2",
    "Connect binary over HTTP/2",
    "Connect GET (JSON) over HTTP/1.1",
    "Connect GET (binary) over HTTP/2",
    "gRPC-Web binary over HTTP/1.1",
    "gRPC-Web JSON over HTTP/2",
    "gRPC over HTTP/2",
  ];

  describe.each(transportNames)("%s", (name) => {
    const client = (): Client<typeof RelationService> => createClient(RelationService, transports.get(name)!);
    const call = (q: Question, headers: Record<string, string> = { apikey: TEST_API_KEY }) =>
      (client() as unknown as Record<string, (req: unknown, options: object) => Promise<unknown>>)[q.method.localName]!(q.request, { headers });

    it("answers every question exactly as REST does", async () => {
      for (const q of QUESTIONS) expectSameAsRest(q, await call(q));
    });

    it("carries the contract code as an ErrorDetail, with the mapped status", async () => {
      const cases: [string, () => Promise<unknown>, Code, string, Params & { path: string }][] = [
        ["no ApiKey", () => call(QUESTIONS[0]!, {}), Code.Unauthenticated, "10001", { path: "/api/v1/mutualFriend" }],
        ["unknown ApiKey", () => call(QUESTIONS[0]!, { apikey: "nope" }), Code.Unauthenticated, "10002", { path: "/api/v1/mutualFriend" }],
        [
          "limit 0",
          () => client().mutualFriend({ address: [addr("alice"), addr("bob")], limit: 0 }, { headers: { apikey: TEST_API_KEY } }),
          Code.InvalidArgument,
          "11600",
          { path: "/api/v1/mutualFriend", address: `${addr("alice")},${addr("bob")}`, limit: 0 },
        ],
        [
          "unknown user",
          () => client().multiDimensionalRecommendation({ address: UNKNOWN_ADDRESS, limit: 5 }, { headers: { apikey: TEST_API_KEY } }),
          Code.NotFound,
          "11602",
          { path: "/api/v1/multi-dimensional-recommendation", address: UNKNOWN_ADDRESS, limit: 5 },
        ],
        [
          "forged cursor",
          () => client().mutualFriend({ address: [addr("alice"), addr("bob")], limit: 2, cursor: "abc.def" }, { headers: { apikey: TEST_API_KEY } }),
          Code.InvalidArgument,
          "11603",
          { path: "/api/v1/mutualFriend", address: `${addr("alice")},${addr("bob")}`, limit: 2, cursor: "abc.def" },
        ],
      ];
      for (const [what, attempt, code, contractCode, { path, ...params }] of cases) {
        const error = await attempt().then(
          () => expect.unreachable(`${what} succeeded`),
          (err: unknown) => ConnectError.from(err),
        );
        expect(error.code, what).toBe(code);
        const [detail] = error.findDetails(ErrorDetailSchema);
        expect(detail?.code, what).toBe(contractCode);
        // The desc is the REST envelope's desc for the same mistake, and the error's message.
        const rest = await restGet(server.url, path, params, what === "no ApiKey" ? { apiKey: null } : what === "unknown ApiKey" ? { apiKey: "nope" } : {});
        expect(rest.body.code).toBe(contractCode);
        expect(detail?.desc).toBe(rest.body.desc);
        expect(error.rawMessage).toBe(rest.body.desc);
      }
    });
  });

  describe("Connect GET on the wire", () => {
    it("serves a GET with the message in the query string, JSON and base64 binary", async () => {
      const q = QUESTIONS[3]!;
      const url = `${server.url}/${RelationService.typeName}/${q.method.name}`;
      const json = await fetch(`${url}?connect=v1&encoding=json&message=${encodeURIComponent(JSON.stringify(toJson(q.requestSchema, create(q.requestSchema, q.request))))}`, {
        headers: { apikey: TEST_API_KEY },
      });
      expect(json.status).toBe(200);
      expectSameAsRest(q, fromJson(q.responseSchema, (await json.json()) as JsonValue));
      const binary = base64Encode(toBinary(q.requestSchema, create(q.requestSchema, q.request)), "url");
      const proto = await fetch(`${url}?connect=v1&encoding=proto&base64=1&message=${binary}`, { headers: { apikey: TEST_API_KEY } });
      expect(proto.status).toBe(200);
      expect(proto.headers.get("content-type")).toBe("application/proto");
    });
  });

  describe("@grpc/grpc-js", () => {
    it("answers every question exactly as REST does", async () => {
      for (const q of QUESTIONS) expectSameAsRest(q, await grpcJs.call(q.method, create(q.requestSchema, q.request) as never));
    });

    it("continues a chain whose cursor came from REST, and REST continues a gRPC cursor", async () => {
      const restFirst = restAnswers.get("MutualFriend, first page")!;
      const next = await grpcJs.call(RelationService.method.mutualFriend, create(MutualFriendRequestSchema, {
        address: [addr("alice"), addr("bob")],
        limit: 3,
        cursor: restFirst.cursor!,
      }));
      expect(next.data.map((u) => u.relationId?.relationId)).toEqual(["frank", "grace", "heidi"]);
      const last = await restGet(server.url, "/api/v1/mutualFriend", { address: `${addr("alice")},${addr("bob")}`, limit: 3, cursor: next.cursor });
      expect(last.body.data.map((u: { relationId: { relationId: string } }) => u.relationId.relationId)).toEqual(["ivan"]);
      expect(last.body.cursor).toBe("");
    });

    it("fails with the mapped status and an ErrorDetail in grpc-status-details-bin", async () => {
      const cases: [string, () => Promise<unknown>, grpc.status, string][] = [
        ["no ApiKey", () => grpcJs.call(RelationService.method.mutualFriend, create(MutualFriendRequestSchema, { limit: 1 }), null), grpc.status.UNAUTHENTICATED, "10001"],
        ["unknown ApiKey", () => grpcJs.call(RelationService.method.mutualFriend, create(MutualFriendRequestSchema, { limit: 1 }), "nope"), grpc.status.UNAUTHENTICATED, "10002"],
        [
          "limit 0",
          () => grpcJs.call(RelationService.method.mutualFriend, create(MutualFriendRequestSchema, { address: [addr("alice"), addr("bob")], limit: 0 })),
          grpc.status.INVALID_ARGUMENT,
          "11600",
        ],
        [
          "one user",
          () => grpcJs.call(RelationService.method.mutualContractInteraction, create(MutualContractInteractionRequestSchema, { address: [addr("bob")] })),
          grpc.status.INVALID_ARGUMENT,
          "11600",
        ],
        [
          "unknown user",
          () => grpcJs.call(RelationService.method.multiDimensionalRecommendation, create(MultiDimensionalRecommendationRequestSchema, { address: UNKNOWN_ADDRESS, limit: 5 })),
          grpc.status.NOT_FOUND,
          "11602",
        ],
        [
          "bad cursor",
          () => grpcJs.call(RelationService.method.mutualFriend, create(MutualFriendRequestSchema, { address: [addr("alice"), addr("bob")], limit: 2, cursor: "x" })),
          grpc.status.INVALID_ARGUMENT,
          "11603",
        ],
      ];
      for (const [what, attempt, status, contractCode] of cases) {
        const error = await attempt().then(
          () => expect.unreachable(`${what} succeeded`),
          (err: grpc.ServiceError) => err,
        );
        expect(error.code, what).toBe(status);
        const { status: rpcStatus, details } = errorDetailsOf(error);
        expect(rpcStatus.code, what).toBe(status);
        expect(details.map((d) => d.code), what).toEqual([contractCode]);
        // grpc-js decodes grpc-message with decodeURI; the server encodes it as the gRPC spec says
        // (transport/grpc-message.ts), so commas, semicolons and quotes arrive intact.
        expect(error.details, what).toBe(details[0]!.desc);
        expect(rpcStatus.message).toBe(details[0]!.desc);
      }
    });
  });
});
