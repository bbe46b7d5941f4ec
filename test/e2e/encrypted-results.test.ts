import { fromBinary, toBinary, toJson, create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { Wallet } from "ethers";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  EncryptedDataSchema,
  ProfileRequestSchema,
  ProfileResponseSchema,
  RelationshipGraphRequestSchema,
  RelationshipGraphResponseSchema,
} from "../../gen/relgraph/v1/relation_service_pb.js";
import { loadConfig } from "../../src/config/config.js";
import { decryptResult, fetchKeyNetwork } from "../../src/client/decrypt.js";
import type { EncryptedPayload } from "../../src/crypto/encryptor.js";
import type { PublicKeyNetwork } from "../../src/crypto/key-network.js";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { createRelgraph, type Relgraph } from "../../src/relgraph.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { signAuthorization, startKeyNodes, type KeyNodeProcesses } from "../support/keynodes.js";

/**
 * Issue "Profile and Relationship graph", end to end: fresh ethers wallets sign real SIWE messages,
 * both operations are called over REST and over @grpc/grpc-js, and the results are decrypted through
 * three key nodes running as separate processes, then compared with the ingested data.
 */

const API_KEY = "e2e-key";
const owner = Wallet.createRandom();
const stranger = Wallet.createRandom();
const friendWallets = [Wallet.createRandom(), Wallet.createRandom(), Wallet.createRandom(), Wallet.createRandom()];
const PROFILE = "Access to User Profile.";
const GRAPH = "Access to Relationship Graph.";

const records = [
  {
    type: "user",
    relationId: "owner",
    name: "Olivia",
    avatar: "https://a.example/o.png",
    addresses: [owner.address],
    social: { username: "Olivia_S", name: "Olivia S", avatar: "https://s.example/o.png" },
    game: null,
  },
  { type: "user", relationId: "stranger", name: "Sam", avatar: "", addresses: [stranger.address] },
  ...friendWallets.map((wallet, i) => ({
    type: "user",
    relationId: `f${i + 1}`,
    name: `Friend ${i + 1}`,
    avatar: `https://a.example/f${i + 1}.png`,
    addresses: [wallet.address],
    social: i % 2 === 0 ? { username: `friend${i + 1}`, name: `F${i + 1}`, avatar: "" } : null,
    game: i === 1 ? { gameId: `g-${i + 1}`, name: `gamer${i + 1}`, avatar: "" } : null,
  })),
  ...friendWallets.map((_, i) => ({ type: "friend", a: "owner", b: `f${i + 1}`, description: `met at event ${i + 1}` })),
  // f4 is a friend but not released: it must never show up.
  { type: "release", relationId: "owner", peers: ["f1", "f2", "f3"] },
  { type: "follow", from: "owner", to: "f1" },
  { type: "follow", from: "owner", to: "f2" },
  { type: "follow", from: "f3", to: "owner" },
];

/** The decrypted entries the owner's released relations must produce, in relationId order. */
const expectedGraph = [0, 1, 2].map((i) => ({
  relation: { relationId: `f${i + 1}`, name: `Friend ${i + 1}`, avatar: `https://a.example/f${i + 1}.png` },
  address: [friendWallets[i]!.address.toLowerCase()],
  social: i % 2 === 0 ? { username: `friend${i + 1}`, name: `F${i + 1}`, avatar: "" } : null,
  game: i === 1 ? { gameId: `g-${i + 1}`, name: `gamer${i + 1}`, avatar: "" } : null,
  description: `met at event ${i + 1}`,
}));

const expectedProfile = { relationId: "owner", name: "Olivia", avatar: "https://a.example/o.png", followingCount: 2, followerCount: 1 };

let nodes: KeyNodeProcesses;
let relgraph: Relgraph;
let baseUrl: string;
let grpcTarget: string;
let network: PublicKeyNetwork;
let dir: string;
let store: ReturnType<typeof createMemoryStore>;

beforeAll(async () => {
  nodes = await startKeyNodes({ threshold: 2, nodes: 3 });
  dir = await mkdtemp(join(tmpdir(), "relgraph-e2e-"));
  const networkFile = join(dir, "key-network.json");
  await writeFile(networkFile, JSON.stringify(nodes.network));
  store = createMemoryStore();
  await ingestRecords(store, records);
  relgraph = await createRelgraph(loadConfig({ API_KEYS: API_KEY, KEY_NETWORK_FILE: networkFile }), store, { logLevel: false });
  baseUrl = await relgraph.server.listen({ port: 0, host: "127.0.0.1" });
  grpcTarget = new URL(baseUrl).host;
  network = await fetchKeyNetwork(baseUrl);
});

afterAll(async () => {
  await relgraph?.close();
  await nodes?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function rest(path: string, params: Record<string, string>) {
  const response = await fetch(`${baseUrl}/api/v1/${path}?${new URLSearchParams(params)}`, { headers: { ApiKey: API_KEY } });
  return { status: response.status, body: (await response.json()) as { code: string; desc: string; data: unknown; cursor?: string } };
}

async function decryptJson(data: unknown, auth: { sig: string; message: string }): Promise<unknown> {
  const plaintext = await decryptResult(data as EncryptedPayload, { network, sig: auth.sig, message: auth.message });
  return JSON.parse(new TextDecoder().decode(plaintext));
}

/** One unary call with a real grpc-js client. */
function grpcCall<I extends DescMessage, O extends DescMessage>(method: string, input: I, output: O, request: MessageShape<I>) {
  const client = new grpc.Client(grpcTarget, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("apikey", API_KEY);
  return new Promise<MessageShape<O>>((resolve, reject) => {
    client.makeUnaryRequest(
      `/relgraph.v1.RelationService/${method}`,
      (message: MessageShape<I>) => Buffer.from(toBinary(input, message)),
      (bytes: Buffer) => fromBinary(output, bytes),
      request,
      metadata,
      (err, response) => {
        client.close();
        if (err) reject(err);
        else resolve(response!);
      },
    );
  });
}

describe("Profile", () => {
  it("REST: the signer decrypts their profile, with counts from follows", async () => {
    const auth = await signAuthorization(owner, PROFILE);
    const { status, body } = await rest("profile", { address: owner.address, ...auth });
    expect(status).toBe(200);
    expect(body.code).toBe("0");
    expect(body).not.toHaveProperty("cursor");
    expect(Object.keys(body.data as object)).toEqual(
      expect.arrayContaining(["encryptedString", "encryptedSymmetricKey", "accessControlConditions", "dataToEncryptHash"]),
    );
    expect(await decryptJson(body.data, auth)).toEqual(expectedProfile);
  });

  it("REST: the user can be named by social username, case-insensitively", async () => {
    const auth = await signAuthorization(owner, PROFILE);
    const { body } = await rest("profile", { socialUsername: "olivia_s", ...auth });
    expect(await decryptJson(body.data, auth)).toEqual(expectedProfile);
  });

  it("grpc-js: the same profile decrypts from the gRPC response", async () => {
    const auth = await signAuthorization(owner, PROFILE);
    const response = await grpcCall(
      "Profile",
      ProfileRequestSchema,
      ProfileResponseSchema,
      create(ProfileRequestSchema, { address: owner.address, ...auth }),
    );
    expect(await decryptJson(toJson(EncryptedDataSchema, response.data!), auth)).toEqual(expectedProfile);
  });

  it("another wallet's authorization is refused with 10102, and cannot decrypt the owner's data", async () => {
    const strangerAuth = await signAuthorization(stranger, PROFILE);
    const denied = await rest("profile", { address: owner.address, ...strangerAuth });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ code: "10102", data: null });

    const ownerAuth = await signAuthorization(owner, PROFILE);
    const { body } = await rest("profile", { address: owner.address, ...ownerAuth });
    await expect(decryptJson(body.data, strangerAuth)).rejects.toThrow(/valid decryption share/);
  });

  it("the Relationship graph statement does not authorize Profile (10101)", async () => {
    const auth = await signAuthorization(owner, GRAPH);
    const { status, body } = await rest("profile", { address: owner.address, ...auth });
    expect(status).toBe(401);
    expect(body.code).toBe("10101");
    expect(body.desc).toMatch(/statement/i);
  });

  it("grpc-js: a missing signature is UNAUTHENTICATED", async () => {
    const request = create(ProfileRequestSchema, { address: owner.address });
    await expect(grpcCall("Profile", ProfileRequestSchema, ProfileResponseSchema, request)).rejects.toMatchObject({
      code: grpc.status.UNAUTHENTICATED,
    });
  });
});

describe("Relationship graph", () => {
  it("REST: pages of released friends decrypt to the ingested relations, in relationId order", async () => {
    const auth = await signAuthorization(owner, GRAPH);
    const entries: unknown[] = [];
    let cursor = "";
    let pages = 0;
    do {
      const { body } = await rest("relationshipGraph", { address: owner.address, ...auth, limit: "2", cursor });
      expect(body.code).toBe("0");
      entries.push(...((await decryptJson(body.data, auth)) as unknown[]));
      cursor = body.cursor!;
      pages += 1;
    } while (cursor !== "");
    expect(pages).toBe(2);
    expect(entries).toEqual(expectedGraph);
  });

  it("grpc-js: one authorization pages through the whole graph", async () => {
    const auth = await signAuthorization(owner, GRAPH);
    const first = await grpcCall(
      "RelationshipGraph",
      RelationshipGraphRequestSchema,
      RelationshipGraphResponseSchema,
      create(RelationshipGraphRequestSchema, { address: owner.address, ...auth, limit: 2 }),
    );
    const second = await grpcCall(
      "RelationshipGraph",
      RelationshipGraphRequestSchema,
      RelationshipGraphResponseSchema,
      create(RelationshipGraphRequestSchema, { address: owner.address, ...auth, limit: 2, cursor: first.cursor }),
    );
    expect(second.cursor).toBe("");
    const decrypted = [
      ...((await decryptJson(toJson(EncryptedDataSchema, first.data!), auth)) as unknown[]),
      ...((await decryptJson(toJson(EncryptedDataSchema, second.data!), auth)) as unknown[]),
    ];
    expect(decrypted).toEqual(expectedGraph);
  });

  it("one authorization's pages share one payload key, yet a withdrawn consent shows in the next page", async () => {
    const auth = await signAuthorization(owner, GRAPH);
    const page = async () => (await rest("relationshipGraph", { address: owner.address, ...auth, limit: "100" })).body.data as EncryptedPayload;
    const before = await page();
    expect(await decryptJson(before, auth)).toEqual(expectedGraph);
    // The owner withdraws consent for f2.
    await ingestRecords(store, [{ type: "release", relationId: "owner", peers: ["f1", "f3"] }]);
    try {
      const after = await page();
      expect(after.dataToEncryptHash).toBe(before.dataToEncryptHash);
      expect(after.encryptedSymmetricKey).toBe(before.encryptedSymmetricKey);
      expect(after.encryptedString).not.toBe(before.encryptedString);
      expect(await decryptJson(after, auth)).toEqual([expectedGraph[0], expectedGraph[2]]);
      // A new authorization gets a key of its own.
      const fresh = await signAuthorization(owner, GRAPH);
      const { body } = await rest("relationshipGraph", { address: owner.address, ...fresh, limit: "100" });
      expect((body.data as EncryptedPayload).dataToEncryptHash).not.toBe(before.dataToEncryptHash);
    } finally {
      await ingestRecords(store, [{ type: "release", relationId: "owner", peers: ["f1", "f2", "f3"] }]);
    }
  });

  it("decrypts with one of the three key nodes down", async () => {
    const auth = await signAuthorization(owner, GRAPH);
    const { body } = await rest("relationshipGraph", { address: owner.address, ...auth, limit: "100" });
    await nodes.stop(3);
    expect(await decryptJson(body.data, auth)).toEqual(expectedGraph);
  });

  it("a friend cannot read the owner's graph (10102)", async () => {
    const auth = await signAuthorization(friendWallets[0]!, GRAPH);
    const { status, body } = await rest("relationshipGraph", { address: owner.address, ...auth, limit: "10" });
    expect(status).toBe(403);
    expect(body.code).toBe("10102");
  });
});
