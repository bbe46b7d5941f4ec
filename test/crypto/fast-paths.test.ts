import { SecretKey, Signature, PublicKey, verify as blstVerify } from "@chainsafe/blst";
import { bls12_381 } from "@noble/curves/bls12-381.js";
import { bytesToHex, hexToBytes, randomBytes } from "@noble/hashes/utils.js";
import { beforeAll, describe, expect, it } from "vitest";
import { EncodingError, Fr, G1_BASE, decodeScalar, encodeScalar, hashIdentity, pairingBytes } from "../../src/crypto/bls.js";
import {
  decodeG1Wasm,
  decodeG2Wasm,
  g1BaseWasm,
  hashIdentityWasm,
  loadWasmBls,
  mulG1Wasm,
  mulG2Wasm,
  pairingBytesWasm,
  pairingsEqualWasm,
} from "../../src/crypto/bls-wasm.js";
import {
  combineDecryptionShares,
  combineDecryptionSharesWasm,
  decodeDecryptionShare,
  decodeDecryptionShareWasm,
  signDecryptionShare,
  verifyDecryptionShare,
  verifyDecryptionShareWasm,
} from "../../src/crypto/decryption-share.js";
import { NATIVE_MULTIPLES, hashIdentityNative, nativeShareSigner } from "../../src/crypto/decryption-share-native.js";
import { NOBLE_IBE, WASM_IBE, decryptKey, encryptKey, wasmIbeWithMultiples } from "../../src/crypto/ibe.js";
import { encryptionIdentity, onlySignerConditions } from "../../src/crypto/identity.js";
import { dealKeyNetwork } from "../../src/crypto/keygen.js";
import { randomScalar } from "../../src/crypto/shamir.js";

/**
 * Issue 35: every fast path (mcl in WebAssembly for pairings, blst natively for key-node shares) is
 * held to @noble/curves, the reference, both ways and byte for byte: ciphertexts made by one decrypt
 * with the other, shares are equal, share checks and combinations agree, and both refuse the same
 * bad points.
 */

const identities = Array.from({ length: 4 }, (_, i) =>
  encryptionIdentity(onlySignerConditions(`0x${"ab".repeat(19)}${i.toString(16).padStart(2, "0")}`), bytesToHex(randomBytes(32))),
);

beforeAll(async () => {
  await loadWasmBls();
});

describe("mcl (WebAssembly) against noble", () => {
  it("hashes identities to the same G2 points (RFC 9380, the _POP_ tag), and so does blst", () => {
    for (const identity of [...identities, "", "x".repeat(300)]) {
      expect(bytesToHex(hashIdentityWasm(identity).serialize())).toBe(bytesToHex(hashIdentity(identity).toBytes(true)));
      expect(bytesToHex(hashIdentityNative(identity))).toBe(bytesToHex(hashIdentity(identity).toBytes(true)));
    }
  });

  it("has the same generator and the same scalar multiples", () => {
    const s = randomScalar();
    expect(bytesToHex(g1BaseWasm().serialize())).toBe(bytesToHex(G1_BASE.toBytes(true)));
    expect(bytesToHex(mulG1Wasm(g1BaseWasm(), s).serialize())).toBe(bytesToHex(G1_BASE.multiply(s).toBytes(true)));
    const h = hashIdentity(identities[0]!);
    expect(bytesToHex(mulG2Wasm(hashIdentityWasm(identities[0]!), s).serialize())).toBe(bytesToHex(h.multiply(s).toBytes(true)));
  });

  it("serialises pairings to the same 576 bytes the IBE hashes", () => {
    for (const identity of identities) {
      const p = G1_BASE.multiply(randomScalar());
      const q = hashIdentity(identity);
      const fast = pairingBytesWasm(decodeG1Wasm(p.toBytes(true), "p"), decodeG2Wasm(q.toBytes(true), "q"));
      expect(fast).toHaveLength(576);
      expect(bytesToHex(fast)).toBe(bytesToHex(pairingBytes(p, q)));
    }
  });

  it("refuses what noble refuses: wrong lengths, points off the curve, the identity", () => {
    const g1 = G1_BASE.toBytes(true);
    const offCurve = g1.slice();
    offCurve[47]! ^= 1;
    const h = hashIdentity("x").toBytes(true);
    const offCurve2 = h.slice();
    offCurve2[95]! ^= 1;
    for (const [bytes, decodeFast, decodeRef] of [
      [offCurve, decodeG1Wasm, (b: Uint8Array) => bls12_381.G1.Point.fromBytes(b)],
      [offCurve2, decodeG2Wasm, (b: Uint8Array) => bls12_381.G2.Point.fromBytes(b)],
    ] as const) {
      expect(() => decodeRef(bytes)).toThrow();
      expect(() => decodeFast(bytes, "point")).toThrow(EncodingError);
    }
    expect(() => decodeG1Wasm(g1.subarray(1), "point")).toThrow(/48 bytes/);
    const infinity = new Uint8Array(48);
    infinity[0] = 0xc0;
    expect(() => decodeG1Wasm(infinity, "point")).toThrow(EncodingError);
  });
});

describe("IBE: WebAssembly and noble, both ways", () => {
  const network = dealKeyNetwork({ threshold: 1, nodes: 1, url: () => "http://127.0.0.1:1" });
  const secret = decodeScalar(network.shares[0]!.secretShare, "s");
  const pk = network.network.publicKey;

  it("a ciphertext made with mcl decrypts with noble, and one made with noble decrypts with mcl", () => {
    for (const [i, identity] of identities.entries()) {
      const msg = randomBytes(i * 20);
      const sigma = hashIdentity(identity).multiply(secret).toBytes(true);
      const fast = encryptKey(pk, identity, msg, WASM_IBE);
      const slow = encryptKey(pk, identity, msg);
      // The server's: the pairing in WebAssembly, the scalar multiples by blst.
      const server = encryptKey(pk, identity, msg, wasmIbeWithMultiples(NATIVE_MULTIPLES));
      expect(decryptKey(server, sigma)).toEqual(msg);
      expect(fast).toHaveLength(slow.length);
      expect(decryptKey(fast, sigma)).toEqual(msg);
      expect(decryptKey(slow, sigma, WASM_IBE)).toEqual(msg);
      expect(decryptKey(fast, sigma, WASM_IBE)).toEqual(msg);
      // A key of another identity opens neither.
      const wrong = hashIdentity(`${identity}x`).multiply(secret).toBytes(true);
      expect(() => decryptKey(fast, wrong, WASM_IBE)).toThrow(/does not decrypt/);
      expect(() => decryptKey(fast, wrong)).toThrow(/does not decrypt/);
    }
    expect(WASM_IBE.publicKey(hexToBytes(pk))).toBeDefined();
    expect(NOBLE_IBE.publicKey(hexToBytes(pk))).toBeDefined();
  });

  it("the server's sender mask and U, with blst's multiples, equal noble's byte for byte", () => {
    const server = wasmIbeWithMultiples(NATIVE_MULTIPLES);
    const serverKey = server.publicKey(hexToBytes(pk));
    const nobleKey = NOBLE_IBE.publicKey(hexToBytes(pk));
    for (const identity of identities) {
      const r = randomScalar();
      expect(bytesToHex(server.senderMask(serverKey, r, identity))).toBe(bytesToHex(NOBLE_IBE.senderMask(nobleKey, r, identity)));
      expect(bytesToHex(server.baseMultiple(r))).toBe(bytesToHex(NOBLE_IBE.baseMultiple(r)));
    }
  });

  it("a tampered U is refused by both", () => {
    const sigma = hashIdentity(identities[0]!).multiply(secret).toBytes(true);
    const ciphertext = encryptKey(pk, identities[0]!, randomBytes(32), WASM_IBE);
    const tampered = ciphertext.slice();
    tampered[20]! ^= 1;
    expect(() => decryptKey(tampered, sigma)).toThrow(/ciphertext/);
    expect(() => decryptKey(tampered, sigma, WASM_IBE)).toThrow(/ciphertext/);
  });
});

describe("decryption shares: blst (native), mcl and noble", () => {
  const dealt = dealKeyNetwork({ threshold: 2, nodes: 3, url: (i) => `http://127.0.0.1:${7400 + i}` });
  const secrets = dealt.shares.map((share) => ({ index: share.index, secret: decodeScalar(share.secretShare, "s") }));

  it("a key node's share is the blst signature of the identity under its secret, equal to noble's share byte for byte", () => {
    for (const identity of identities) {
      const h = hashIdentity(identity);
      for (const { index, secret } of secrets) {
        expect(nativeShareSigner(index, secret)(identity)).toBe(signDecryptionShare(index, secret, h));
        // And blst itself verifies it as an Ethereum BLS signature under PKᵢ.
        const sig = SecretKey.fromBytes(encodeScalar(secret)).sign(new TextEncoder().encode(identity));
        const pkI = PublicKey.fromBytes(hexToBytes(dealt.network.nodes[index - 1]!.publicShare));
        expect(blstVerify(new TextEncoder().encode(identity), pkI, Signature.fromBytes(sig.toBytes(), true))).toBe(true);
      }
    }
  });

  it("share checks agree, and t shares combine to the same σ, which decrypts", () => {
    const identity = identities[1]!;
    const h = hashIdentity(identity);
    const hFast = hashIdentityWasm(identity);
    const hexShares = secrets.map(({ index, secret }) => signDecryptionShare(index, secret, h));
    for (const [k, hex] of hexShares.entries()) {
      const publicShare = dealt.network.nodes[k]!.publicShare;
      const slow = decodeDecryptionShare(hex);
      const fast = decodeDecryptionShareWasm(hex);
      const pkSlow = bls12_381.G1.Point.fromHex(publicShare);
      const pkFast = decodeG1Wasm(hexToBytes(publicShare), "pk");
      expect(verifyDecryptionShare(slow, pkSlow, h)).toBe(true);
      expect(verifyDecryptionShareWasm(fast, pkFast, hFast)).toBe(true);
      // Against another node's public share, both refuse.
      const other = dealt.network.nodes[(k + 1) % 3]!.publicShare;
      expect(verifyDecryptionShare(slow, bls12_381.G1.Point.fromHex(other), h)).toBe(false);
      expect(verifyDecryptionShareWasm(fast, decodeG1Wasm(hexToBytes(other), "pk"), hFast)).toBe(false);
    }
    for (const pair of [[0, 1], [1, 2], [0, 2]]) {
      const chosen = pair.map((k) => hexShares[k]!);
      const slow = combineDecryptionShares(chosen.map(decodeDecryptionShare));
      const fast = combineDecryptionSharesWasm(chosen.map(decodeDecryptionShareWasm));
      expect(bytesToHex(fast.serialize())).toBe(bytesToHex(slow.toBytes(true)));
      const pk = decodeG1Wasm(hexToBytes(dealt.network.publicKey), "pk");
      expect(pairingsEqualWasm(g1BaseWasm(), fast, pk, hFast)).toBe(true);
      expect(pairingsEqualWasm(g1BaseWasm(), fast, pk, hashIdentityWasm(identities[0]!))).toBe(false);
    }
  });

  it("both refuse a share with index 0 or a bad point", () => {
    const hex = signDecryptionShare(1, secrets[0]!.secret, hashIdentity(identities[0]!));
    const zero = `00${hex.slice(2)}`;
    expect(() => decodeDecryptionShare(zero)).toThrow(EncodingError);
    expect(() => decodeDecryptionShareWasm(zero)).toThrow(EncodingError);
    const bad = `${hex.slice(0, -2)}${(Number.parseInt(hex.slice(-2), 16) ^ 1).toString(16).padStart(2, "0")}`;
    expect(() => decodeDecryptionShare(bad)).toThrow(EncodingError);
    expect(() => decodeDecryptionShareWasm(bad)).toThrow(EncodingError);
  });
});

void Fr;
