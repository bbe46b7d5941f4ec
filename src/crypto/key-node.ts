import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from "fastify";
import { createRateLimiter } from "../auth/rate-limit.js";
import { RELGRAPH_STATEMENTS } from "../auth/siwe.js";
import { RateLimitedError, RelgraphError } from "../domain/errors.js";
import { registerCors } from "../transport/cors.js";
import { toPublicError } from "../transport/errors.js";
import { bytesToHex, concatBytes } from "@noble/hashes/utils.js";
import { decodeScalar } from "./bls.js";
import { hashIdentityWasm, loadWasmBls, mulG2Wasm } from "./bls-wasm.js";
import { conditionsFromJson, encryptionIdentity, onlySignerAddress } from "./identity.js";
import { parseKeyShare, type KeyShare } from "./key-network.js";

/**
 * A key node: it holds one share sᵢ and answers POST /v1/decryption-share with σᵢ = sᵢ·H₂(id) for a
 * caller who proves, with a SIWE authorization, to be the one address the conditions allow. It
 * rebuilds the identity from the conditions itself, so it only ever signs identities bound to the
 * verified signer.
 *
 * Request:  { accessControlConditions, dataToEncryptHash: "<64 hex>",
 *             authSig: { sig: "0x…", signedMessage: "<EIP-4361 text>", address?: "0x…" } }
 * Response: 200 { index: i, signatureShare: "<hex: index byte ‖ compressed G2>" }
 * Errors:   400/401/403/429/503 { error: "bad_request" | "unauthorized" | "forbidden" | "rate_limited" |
 *           "unavailable", message, code? } where code is relgraph's code for authorization failures
 *           and rate limits (429 carries Retry-After).
 */

/**
 * Checks a SIWE authorization; src/auth/siwe.ts's createSiweVerifier has this shape. Rejections that
 * are RelgraphErrors become 401 (10100/10101) or 503 (50300) with their message.
 */
export interface AuthorizationVerifier {
  verify(input: { sig: string; message: string; statement: string | readonly string[] | null }): Promise<{ address: string }>;
}

/** Options of keyNodeRoutes. */
export interface KeyNodeOptions {
  /** This node's share; validated against its network when the plugin registers. */
  share: KeyShare;
  verifier: AuthorizationVerifier;
  /**
   * Decryption-share requests per client address (each costs a hash to G2 and a scalar
   * multiplication, natively); default DEFAULT_KEY_NODE_RATE_LIMIT.
   */
  rateLimit?: { perSecond: number; burst: number };
}

/**
 * The default rate limit of a key node, per client address (KEY_NODE_RATE_LIMIT_PER_SECOND / _BURST).
 * A client decrypts once per authorization (later answers reuse the payload key), so one user reading
 * their profile and a graph of any size page by page asks a node twice; the burst leaves room for
 * several users behind one address signing in at once.
 */
export const DEFAULT_KEY_NODE_RATE_LIMIT = { perSecond: 10, burst: 20 };

/** Largest accepted request body; a real request is well under 2 KiB. */
const BODY_LIMIT = 64 * 1024;

/** Thrown inside a request to answer with a 4xx/503 status and a JSON error. */
class KeyNodeRequestError extends Error {
  constructor(
    readonly status: keyof typeof ERROR_KINDS,
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = "KeyNodeRequestError";
  }
}

const ERROR_KINDS = { 400: "bad_request", 401: "unauthorized", 403: "forbidden", 429: "rate_limited", 503: "unavailable" } as const;

/**
 * The key node's routes as an encapsulated Fastify plugin, so that it can be mounted at a prefix
 * (the development network lives at /dev-key-nodes/<i> inside relgraph's own server). Register it
 * without fastify-plugin: its error handler must stay inside its own scope.
 */
export const keyNodeRoutes: FastifyPluginAsync<KeyNodeOptions> = async (app, options) => {
  const share = parseKeyShare(options.share);
  const signShare = await createShareSigner(share.index, decodeScalar(share.secretShare, "secretShare"));
  const verifier = options.verifier;
  const limiter = createRateLimiter(options.rateLimit ?? DEFAULT_KEY_NODE_RATE_LIMIT);

  app.setErrorHandler((error, request, reply) => {
    if (error instanceof KeyNodeRequestError) {
      return reply.code(error.status).send({ error: ERROR_KINDS[error.status], message: error.message, code: error.code });
    }
    const status = (error as { statusCode?: number }).statusCode;
    // Fastify's own 4xx (bad JSON, body too large, wrong content type) keep their status.
    if (status !== undefined && status >= 400 && status < 500) {
      return reply.code(status).send({ error: "bad_request", message: (error as Error).message });
    }
    request.log.error({ err: error }, "key node request failed");
    return reply.code(500).send({ error: "internal", message: "internal error" });
  });

  app.get("/healthz", async () => ({ status: "ok", index: share.index }));

  // Limited before the body is parsed: a refused caller costs no JSON parse and no pairing.
  const limit = async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      limiter.take(request.ip);
    } catch (error) {
      if (!(error instanceof RateLimitedError)) throw error;
      reply.header("retry-after", String(error.retryAfterSeconds));
      throw new KeyNodeRequestError(429, error.message.replace("this ApiKey", "this client"), error.code);
    }
  };

  app.post("/v1/decryption-share", { bodyLimit: BODY_LIMIT, onRequest: limit }, async (request) => {
    const { conditions, dataToEncryptHash, sig, message, claimedAddress } = parseRequest(request.body);
    const allowed = onlySignerAddress(conditions);
    if (allowed === null) {
      throw new KeyNodeRequestError(
        403,
        'accessControlConditions must be exactly one "only the signer" condition; this node evaluates no other',
      );
    }
    const signer = (await verify(verifier, sig, message)).address.toLowerCase();
    if (claimedAddress !== undefined && claimedAddress.toLowerCase() !== signer) {
      throw new KeyNodeRequestError(401, "authSig.address is not the address that signed authSig.signedMessage");
    }
    if (allowed.toLowerCase() !== signer) {
      throw new KeyNodeRequestError(403, "the conditions allow another address than the signer");
    }
    const identity = encryptionIdentity(conditions, dataToEncryptHash);
    return { index: share.index, signatureShare: signShare(identity) };
  });
};

/**
 * σᵢ = sᵢ·H₂(identity) in Lit's wire format: natively with blst where its prebuilt binary loads, else
 * in WebAssembly with mcl. Both are held to noble's signDecryptionShare in test/crypto/fast-paths.test.ts.
 */
async function createShareSigner(index: number, secret: bigint): Promise<(identity: string) => string> {
  try {
    const { nativeShareSigner } = await import("./decryption-share-native.js");
    return nativeShareSigner(index, secret);
  } catch {
    await loadWasmBls();
    return (identity) => bytesToHex(concatBytes(Uint8Array.of(index), mulG2Wasm(hashIdentityWasm(identity), secret).serialize()));
  }
}

/** Options of startKeyNode. */
export interface StartKeyNodeOptions extends KeyNodeOptions {
  /** Port to listen on; 0 picks a free one. */
  port: number;
  host: string;
  logger?: FastifyServerOptions["logger"];
  /** CORS_ORIGINS: origins whose pages may ask this node for shares (a dApp decrypts in the browser). */
  corsOrigins?: readonly string[];
}

/** A running standalone key node. */
export interface RunningKeyNode {
  app: FastifyInstance;
  /** The URL it listens on. */
  url: string;
  /**
   * Stops accepting, lets requests in flight finish, and after `graceMs` drops the connections that
   * remain: a client may hold a connected socket it never sends on, which would hold a plain close open
   * until the headers timeout.
   */
  close(graceMs?: number): Promise<void>;
}

const CLOSE_GRACE_MS = 2000;

/** Runs a key node as its own server (`relgraph keynode`). */
export async function startKeyNode(options: StartKeyNodeOptions): Promise<RunningKeyNode> {
  const app = Fastify({ logger: options.logger ?? false });
  await registerCors(app, options.corsOrigins ?? []);
  await app.register(keyNodeRoutes, { share: options.share, verifier: options.verifier, rateLimit: options.rateLimit });
  const url = await app.listen({ port: options.port, host: options.host });
  return {
    app,
    url,
    async close(graceMs = CLOSE_GRACE_MS) {
      const deadline = setTimeout(() => app.server.closeAllConnections(), graceMs);
      try {
        await app.close();
      } finally {
        clearTimeout(deadline);
      }
    },
  };
}

function parseRequest(body: unknown) {
  const bad = (message: string) => new KeyNodeRequestError(400, message);
  if (!isObject(body)) throw bad("the body must be a JSON object");
  const { accessControlConditions, dataToEncryptHash, authSig } = body;
  const conditions = conditionsFromJson(accessControlConditions);
  if (conditions === null) throw bad("accessControlConditions must be a list of Lit evmBasic access-control conditions");
  if (typeof dataToEncryptHash !== "string" || !/^[0-9a-f]{64}$/.test(dataToEncryptHash)) {
    throw bad("dataToEncryptHash must be 64 lowercase hex digits");
  }
  if (!isObject(authSig)) throw bad("authSig must be an object with sig and signedMessage");
  const { sig, signedMessage, address } = authSig;
  if (typeof sig !== "string" || sig === "") throw bad("authSig.sig is required");
  if (typeof signedMessage !== "string" || signedMessage === "") throw bad("authSig.signedMessage is required");
  if (address !== undefined && typeof address !== "string") throw bad("authSig.address must be a string");
  return {
    conditions,
    dataToEncryptHash,
    sig,
    message: signedMessage,
    claimedAddress: address,
  };
}

async function verify(verifier: AuthorizationVerifier, sig: string, message: string) {
  try {
    // Either of relgraph's statements, and no other: a sign-in given to some other site decrypts nothing.
    return await verifier.verify({ sig, message, statement: RELGRAPH_STATEMENTS });
  } catch (error) {
    if (error instanceof RelgraphError) {
      // The verifier refuses with 10100/10101 (401) or 50300 (503): statuses the key node names.
      throw new KeyNodeRequestError(toPublicError(error).http as keyof typeof ERROR_KINDS, error.message, error.code);
    }
    throw error;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
