/**
 * Calling relgraph from a gRPC microservice with @grpc/grpc-js (a dev dependency here) and the
 * generated protobuf-es schemas. The ApiKey travels as `apikey` metadata.
 *
 *   node dist/src/examples/grpc-client.js [HOST:PORT] [API_KEY]
 */
import { create, fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { MutualFriendRequestSchema, MutualFriendResponseSchema } from "../../gen/relgraph/v1/relation_service_pb.js";

const target = process.argv[2] ?? "127.0.0.1:8080";
const apiKey = process.argv[3] ?? process.env.RELGRAPH_API_KEY ?? "relgraph-dev-key";

const client = new grpc.Client(target, grpc.credentials.createInsecure());
const metadata = new grpc.Metadata();
metadata.set("apikey", apiKey);

client.makeUnaryRequest(
  "/relgraph.v1.RelationService/MutualFriend",
  (request: ReturnType<typeof create<typeof MutualFriendRequestSchema>>) => Buffer.from(toBinary(MutualFriendRequestSchema, request)),
  (bytes: Buffer) => fromBinary(MutualFriendResponseSchema, bytes),
  create(MutualFriendRequestSchema, { socialUsername: ["alice", "bob"], limit: 5 }),
  metadata,
  (err, response) => {
    if (err) {
      console.error(`${grpc.status[err.code]}: ${err.details}`);
      process.exitCode = 1;
    } else if (response) {
      console.log(JSON.stringify(toJson(MutualFriendResponseSchema, response), null, 2));
    }
    client.close();
  },
);
