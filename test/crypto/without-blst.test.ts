import Fastify from "fastify";
import { Wallet } from "ethers";
import { bytesToHex, randomBytes } from "@noble/hashes/utils.js";
import { describe, expect, it, vi } from "vitest";
import { createSiweVerifier } from "../../src/auth/siwe.js";
import { decodeScalar, hashIdentity } from "../../src/crypto/bls.js";
import { combineDecryptionShares, decodeDecryptionShare, signDecryptionShare } from "../../src/crypto/decryption-share.js";
import { loadEncryptionCurve } from "../../src/crypto/encryption-curve.js";
import { WASM_IBE, decryptKey, encryptKey } from "../../src/crypto/ibe.js";
import { encryptionIdentity, onlySignerConditions } from "../../src/crypto/identity.js";
import { keyNodeRoutes } from "../../src/crypto/key-node.js";
import { dealKeyNetwork } from "../../src/crypto/keygen.js";
import { signAuthorization } from "../support/keynodes.js";

/**
 * Where blst's prebuilt binary does not load (another platform, a libc it was not built for), the
 * server encrypts and the key nodes sign wholly in WebAssembly. Here its module fails to load, as it
 * would there, and both fallbacks are held to noble, the reference.
 */
vi.mock("../../src/crypto/decryption-share-native.js", () => {
  throw new Error("blst's prebuilt binary did not load");
});

const dealt = dealKeyNetwork({ threshold: 2, nodes: 3, url: (i) => `http://127.0.0.1:${7500 + i}` });
const secrets = dealt.shares.map((share) => ({ index: share.index, secret: decodeScalar(share.secretShare, "s") }));

describe("without blst", () => {
  it("the server's encryption curve is mcl's alone, and what it encrypts opens with noble's σ", async () => {
    const curve = await loadEncryptionCurve();
    expect(curve).toBe(WASM_IBE);
    const identity = encryptionIdentity(onlySignerConditions(Wallet.createRandom().address), bytesToHex(randomBytes(32)));
    const key = randomBytes(32);
    const ciphertext = encryptKey(dealt.network.publicKey, identity, key, curve);
    const h = hashIdentity(identity);
    const sigma = combineDecryptionShares(secrets.slice(1).map(({ index, secret }) => decodeDecryptionShare(signDecryptionShare(index, secret, h))));
    expect(decryptKey(ciphertext, sigma.toBytes(true))).toEqual(key);
  });

  it("a key node signs its share in WebAssembly, equal to noble's share byte for byte", async () => {
    const wallet = Wallet.createRandom();
    const dataToEncryptHash = bytesToHex(randomBytes(32));
    const { sig, message } = await signAuthorization(wallet);
    const verifier = createSiweVerifier({ domains: [], maxAgeSeconds: 86400 });
    const identity = encryptionIdentity(onlySignerConditions(wallet.address), dataToEncryptHash);
    for (const share of dealt.shares) {
      const app = Fastify();
      await app.register(keyNodeRoutes, { share, verifier });
      const answer = await app.inject({
        method: "POST",
        url: "/v1/decryption-share",
        payload: {
          accessControlConditions: onlySignerConditions(wallet.address),
          dataToEncryptHash,
          authSig: { sig, signedMessage: message, address: wallet.address },
        },
      });
      await app.close();
      expect(answer.statusCode).toBe(200);
      const { secret } = secrets.find(({ index }) => index === share.index)!;
      expect(answer.json().signatureShare).toBe(signDecryptionShare(share.index, secret, hashIdentity(identity)));
    }
  });
});
