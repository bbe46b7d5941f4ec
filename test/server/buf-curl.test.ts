import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { fromBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorDetailSchema } from "../../gen/relgraph/v1/relation_service_pb.js";
import { EXPECTED, addr, fixtureRecords, userInfoJson } from "../support/fixtures.js";
import { TEST_API_KEY, startRelgraph, type RunningRelgraph } from "../support/relgraph-server.js";
import { withoutDefaults } from "./proto-json.js";

/*
 * `buf curl` with no schema: everything it knows about relgraph.v1 it learns through server
 * reflection on the one port. A correct answer proves routing, reflection and transcoding together.
 */

const run = promisify(execFile);
const BUF = fileURLToPath(new URL("../../node_modules/.bin/buf", import.meta.url));
const SERVICE = "relgraph.v1.RelationService";

/** buf curl's exit code for an RPC error: the gRPC code shifted left by three bits. */
const exitCodeOf = (grpcCode: number) => grpcCode << 3;
const UNAUTHENTICATED = 16;

interface BufResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

async function bufCurl(args: string[]): Promise<BufResult> {
  try {
    const { stdout, stderr } = await run(BUF, ["curl", ...args], { timeout: 30_000 });
    return { exitCode: 0, stdout, stderr };
  } catch (err) {
    const failure = err as { code?: number; stdout?: string; stderr?: string };
    if (typeof failure.code !== "number") throw err;
    return { exitCode: failure.code, stdout: failure.stdout ?? "", stderr: failure.stderr ?? "" };
  }
}

/** The contract code and desc of a failed call, from the relgraph.v1.ErrorDetail buf prints. */
function errorDetail(result: BufResult): { code: string; desc: string; grpcCode: string } {
  const printed = JSON.parse(result.stderr) as { code: string; message: string; details: { type: string; value: string }[] };
  const detail = printed.details.find((d) => d.type === "relgraph.v1.ErrorDetail");
  if (!detail) throw new Error(`no relgraph.v1.ErrorDetail in ${result.stderr}`);
  const { code, desc } = fromBinary(ErrorDetailSchema, Buffer.from(detail.value, "base64"));
  expect(printed.message).toBe(desc);
  return { code, desc, grpcCode: printed.code };
}

describe("buf curl through server reflection", () => {
  let server: RunningRelgraph;
  beforeAll(async () => {
    server = await startRelgraph({ records: fixtureRecords() });
  });
  afterAll(async () => {
    await server?.close();
  });

  const grpc = (method: string, body: object, extra: string[] = []) =>
    bufCurl(["--http2-prior-knowledge", "--protocol", "grpc", "-H", `apikey: ${TEST_API_KEY}`, ...extra, "-d", JSON.stringify(body), `${server.url}/${SERVICE}/${method}`]);

  it("lists the services and the five methods (reflection needs no ApiKey)", async () => {
    const services = await bufCurl(["--http2-prior-knowledge", "--protocol", "grpc", "--list-services", server.url]);
    expect(services.exitCode, services.stderr).toBe(0);
    expect(services.stdout.trim().split("\n")).toContain(SERVICE);
    // With reflection, --list-methods takes the base URL; it lists every method of every service.
    const methods = await bufCurl(["--http2-prior-knowledge", "--protocol", "grpc", "--list-methods", server.url]);
    expect(methods.exitCode, methods.stderr).toBe(0);
    const ours = methods.stdout.trim().split("\n").filter((line) => line.startsWith(`${SERVICE}/`));
    expect(ours.sort()).toEqual(
      ["MultiDimensionalRecommendation", "MutualContractInteraction", "MutualFriend", "Profile", "RelationshipGraph"].map((m) => `${SERVICE}/${m}`),
    );
  });

  it("calls MutualFriend", async () => {
    const result = await grpc("MutualFriend", { address: [addr("alice"), addr("bob")], limit: 2 });
    expect(result.exitCode, result.stderr).toBe(0);
    const response = JSON.parse(result.stdout);
    expect(response.data).toEqual(["carol", "dave"].map((n) => withoutDefaults(userInfoJson(n as "carol" | "dave"))));
    expect(response.cursor).toMatch(/\S/);
  });

  it("calls MultiDimensionalRecommendation", async () => {
    const result = await grpc("MultiDimensionalRecommendation", { socialUsername: "alice", limit: 100 });
    expect(result.exitCode, result.stderr).toBe(0);
    const response = JSON.parse(result.stdout);
    expect(response.data).toEqual(EXPECTED.aliceRecommendations.map(([n, d]) => withoutDefaults(userInfoJson(n, d))));
    // The last page's empty cursor is a proto3 default, so proto3 JSON leaves it out.
    expect(response).not.toHaveProperty("cursor");
  });

  it("calls MutualContractInteraction", async () => {
    const result = await grpc("MutualContractInteraction", { address: [addr("bob"), addr("carol")] });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ data: EXPECTED.mutualContracts.bobCarol });
  });

  it("routes Profile and RelationshipGraph, which refuse a call without an authorization (10101)", async () => {
    for (const [method, body] of [
      ["Profile", { address: addr("alice") }],
      ["RelationshipGraph", { address: addr("alice"), limit: 5 }],
    ] as const) {
      const result = await grpc(method, body);
      expect(result.exitCode, `${method}: ${result.stderr}`).toBe(exitCodeOf(UNAUTHENTICATED));
      const detail = errorDetail(result);
      expect(detail.grpcCode).toBe("unauthenticated");
      expect(detail.code).toBe("10101");
      expect(detail.desc).toContain("sig");
    }
  });

  it("reports a missing ApiKey as 10001", async () => {
    const result = await bufCurl(["--http2-prior-knowledge", "--protocol", "grpc", "-d", JSON.stringify({ address: [addr("bob"), addr("carol")] }), `${server.url}/${SERVICE}/MutualContractInteraction`]);
    expect(result.exitCode).toBe(exitCodeOf(UNAUTHENTICATED));
    expect(errorDetail(result).code).toBe("10001");
  });

  it("works over the Connect and gRPC-Web protocols, and with v1alpha reflection", async () => {
    const body = JSON.stringify({ address: [addr("bob"), addr("carol")] });
    const url = `${server.url}/${SERVICE}/MutualContractInteraction`;
    for (const args of [
      ["--protocol", "connect"],
      ["--protocol", "grpcweb"],
      ["--http2-prior-knowledge", "--protocol", "grpc", "--reflect-protocol", "grpc-v1alpha"],
    ]) {
      const result = await bufCurl([...args, "-H", `apikey: ${TEST_API_KEY}`, "-d", body, url]);
      expect(result.exitCode, `${args.join(" ")}: ${result.stderr}`).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({ data: EXPECTED.mutualContracts.bobCarol });
    }
  });
});
