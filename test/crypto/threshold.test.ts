import { describe, expect, it } from "vitest";
import { EncodingError, decodeG1, decodeScalar, hashIdentity } from "../../src/crypto/bls.js";
import {
  combineDecryptionShares,
  decodeDecryptionShare,
  encodeDecryptionShare,
  signDecryptionShare,
  verifyDecryptionShare,
} from "../../src/crypto/decryption-share.js";
import { KeyNetworkError, parseKeyShare, parsePublicKeyNetwork } from "../../src/crypto/key-network.js";
import { dealKeyNetwork, type DealtKeyNetwork } from "../../src/crypto/keygen.js";
import { randomScalar } from "../../src/crypto/shamir.js";

const identity = "lit-accesscontrolcondition://11/22";
const h = hashIdentity(identity);

function subsets<T>(items: T[], size: number): T[][] {
  if (size === 0) return [[]];
  if (items.length < size) return [];
  const [first, ...rest] = items as [T, ...T[]];
  return [...subsets(rest, size - 1).map((s) => [first, ...s]), ...subsets(rest, size)];
}

function deal(threshold: number, nodes: number): DealtKeyNetwork {
  return dealKeyNetwork({ threshold, nodes, url: (i) => `http://127.0.0.1:${7400 + i}` });
}

function shareOf(dealt: DealtKeyNetwork, index: number, id = h) {
  const share = dealt.shares[index - 1]!;
  return decodeDecryptionShare(signDecryptionShare(index, decodeScalar(share.secretShare, "s"), id));
}

function publicShare(dealt: DealtKeyNetwork, index: number) {
  return decodeG1(dealt.network.nodes[index - 1]!.publicShare, "pk");
}

describe("threshold dealing and combining", () => {
  for (const [t, n] of [
    [2, 3],
    [3, 5],
    [1, 1],
    [4, 4],
  ] as const) {
    it(`${t}-of-${n}: every t-subset combines to the key that verifies against PK, fewer do not`, () => {
      const dealt = deal(t, n);
      const pk = decodeG1(dealt.network.publicKey, "pk");
      const indices = dealt.network.nodes.map((node) => node.index);
      const keys = subsets(indices, t).map((subset) =>
        combineDecryptionShares(subset.map((i) => shareOf(dealt, i))).toHex(true),
      );
      expect(new Set(keys).size).toBe(1);
      // e(g1, σ) = e(PK, H) with σ from any subset.
      const sigma = combineDecryptionShares(indices.slice(0, t).map((i) => shareOf(dealt, i)));
      expect(verifyDecryptionShare({ index: 0, point: sigma }, pk, h)).toBe(true);
      if (t > 1) {
        const short = combineDecryptionShares(indices.slice(0, t - 1).map((i) => shareOf(dealt, i)));
        expect(verifyDecryptionShare({ index: 0, point: short }, pk, h)).toBe(false);
      }
    });
  }

  it("deals a fresh secret each time", () => {
    expect(deal(2, 3).network.publicKey).not.toBe(deal(2, 3).network.publicKey);
  });

  it("refuses impossible thresholds and node counts", () => {
    expect(() => deal(0, 3)).toThrow(RangeError);
    expect(() => deal(4, 3)).toThrow(RangeError);
    expect(() => deal(1, 256)).toThrow(RangeError);
  });
});

describe("decryption share checks", () => {
  const dealt = deal(2, 3);

  it("accepts an honest share for its own index and identity", () => {
    expect(verifyDecryptionShare(shareOf(dealt, 2), publicShare(dealt, 2), h)).toBe(true);
  });

  it("rejects a share made with another node's secret, for another identity, or with a random secret", () => {
    expect(verifyDecryptionShare(shareOf(dealt, 1), publicShare(dealt, 2), h)).toBe(false);
    expect(verifyDecryptionShare(shareOf(dealt, 2, hashIdentity(`${identity}x`)), publicShare(dealt, 2), h)).toBe(false);
    const forged = { index: 2, point: h.multiply(randomScalar()) };
    expect(verifyDecryptionShare(forged, publicShare(dealt, 2), h)).toBe(false);
  });

  it("round-trips Lit's wire format: index byte then compressed G2", () => {
    const share = shareOf(dealt, 3);
    const wire = encodeDecryptionShare(share);
    expect(wire).toHaveLength(194);
    expect(wire.slice(0, 2)).toBe("03");
    expect(decodeDecryptionShare(wire).point.equals(share.point)).toBe(true);
  });

  it("refuses index 0, the identity point, bad encodings and wrong lengths", () => {
    const wire = encodeDecryptionShare(shareOf(dealt, 1));
    expect(() => decodeDecryptionShare(`00${wire.slice(2)}`)).toThrow(/index/);
    expect(() => decodeDecryptionShare(`01c0${"0".repeat(190)}`)).toThrow(/identity/);
    expect(() => decodeDecryptionShare(`01${"ff".repeat(96)}`)).toThrow(EncodingError);
    expect(() => decodeDecryptionShare(wire.slice(0, -2))).toThrow(EncodingError);
    expect(() => decodeDecryptionShare(`${wire}00`)).toThrow(EncodingError);
    expect(() => decodeDecryptionShare(`zz${wire.slice(2)}`)).toThrow(EncodingError);
    expect(() => decodeDecryptionShare(undefined)).toThrow(EncodingError);
  });

  it("refuses to combine shares with duplicate indices", () => {
    expect(() => combineDecryptionShares([shareOf(dealt, 1), shareOf(dealt, 1)])).toThrow(/distinct/);
  });
});

describe("key network validation", () => {
  const dealt = deal(2, 3);

  it("accepts what keygen deals, in any node order", () => {
    const reversed = { ...dealt.network, nodes: [...dealt.network.nodes].reverse() };
    expect(parsePublicKeyNetwork(reversed)).toEqual(dealt.network);
    expect(parseKeyShare(dealt.shares[1]).index).toBe(2);
  });

  it("refuses a public share off the polynomial, a wrong PK, duplicate indices and bad thresholds", () => {
    const other = deal(2, 3).network;
    const swapped = { ...dealt.network, nodes: [dealt.network.nodes[0]!, dealt.network.nodes[1]!, other.nodes[2]!] };
    expect(() => parsePublicKeyNetwork(swapped)).toThrow(/polynomial/);
    expect(() => parsePublicKeyNetwork({ ...dealt.network, publicKey: other.publicKey })).toThrow(/interpolate/);
    const dup = { ...dealt.network, nodes: [dealt.network.nodes[0]!, dealt.network.nodes[0]!] };
    expect(() => parsePublicKeyNetwork(dup)).toThrow(/distinct/);
    expect(() => parsePublicKeyNetwork({ ...dealt.network, threshold: 4 })).toThrow(KeyNetworkError);
    expect(() => parsePublicKeyNetwork({ ...dealt.network, publicKey: `c0${"0".repeat(94)}` })).toThrow(/identity/);
    expect(() => parsePublicKeyNetwork([])).toThrow(KeyNetworkError);
  });

  it("refuses a share whose secret does not match its public share, without echoing the secret", () => {
    const share = dealt.shares[0]!;
    const wrong = { ...share, secretShare: dealt.shares[1]!.secretShare };
    expect(() => parseKeyShare(wrong)).toThrow(/does not match/);
    for (const secretShare of [`${share.secretShare}zz`, `${share.secretShare}00`, "00".repeat(32)]) {
      const error = (() => {
        try {
          parseKeyShare({ ...share, secretShare });
        } catch (caught) {
          return caught as Error;
        }
        return null;
      })();
      expect(error).toBeInstanceOf(KeyNetworkError);
      expect(error?.message).not.toContain(share.secretShare);
    }
  });
});
