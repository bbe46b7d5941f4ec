import { Wallet, verifyMessage, type BaseWallet } from "ethers";
import { SiweMessage } from "siwe";
import { describe, expect, it } from "vitest";
import {
  PROFILE_STATEMENT,
  RELATIONSHIP_GRAPH_STATEMENT,
  createSiweVerifier,
  type SiweVerifierOptions,
} from "../../src/auth/siwe.js";
import { AuthorizationExpiredError, InvalidAuthorizationError } from "../../src/domain/errors.js";

const NOW = new Date("2025-06-01T12:00:00.000Z");
const HOUR = 3600 * 1000;

function at(offsetMs: number): string {
  return new Date(NOW.getTime() + offsetMs).toISOString();
}

function verifier(options: Partial<SiweVerifierOptions> = {}) {
  return createSiweVerifier({ domains: [], maxAgeSeconds: 24 * 3600, now: () => NOW, ...options });
}

interface Fields {
  domain?: string;
  statement?: string;
  issuedAt?: string;
  expirationTime?: string;
  notBefore?: string;
}

/** A real EIP-4361 message for the wallet, signed with EIP-191. */
async function signed(wallet: BaseWallet, fields: Fields = {}): Promise<{ sig: string; message: string }> {
  const message = new SiweMessage({
    domain: fields.domain ?? "app.example.com",
    address: wallet.address,
    statement: fields.statement ?? PROFILE_STATEMENT,
    uri: "https://app.example.com/login",
    version: "1",
    chainId: 1,
    nonce: "abcdef0123456789",
    issuedAt: fields.issuedAt ?? at(-60_000),
    expirationTime: fields.expirationTime,
    notBefore: fields.notBefore,
  }).prepareMessage();
  return { sig: await wallet.signMessage(message), message };
}

describe("createSiweVerifier", () => {
  it("accepts a correctly signed message and reports the lowercase signer", async () => {
    const wallet = Wallet.createRandom();
    const { sig, message } = await signed(wallet, { expirationTime: at(HOUR), notBefore: at(-HOUR) });
    const result = await verifier().verify({ sig, message, statement: PROFILE_STATEMENT });
    expect(result).toEqual({
      address: wallet.address.toLowerCase(),
      domain: "app.example.com",
      statement: PROFILE_STATEMENT,
      issuedAt: new Date(at(-60_000)),
      expirationTime: new Date(at(HOUR)),
      id: expect.stringMatching(/^[0-9a-f]{64}$/),
      validUntil: new Date(at(HOUR)),
    });
  });

  it("rejects a missing sig with 10101 naming sig", async () => {
    const { message } = await signed(Wallet.createRandom());
    const error = await verifier().verify({ sig: "", message, statement: PROFILE_STATEMENT }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidAuthorizationError);
    expect((error as Error).message).toMatch(/\bsig\b/);
  });

  it("rejects an empty message with 10101 naming message", async () => {
    const { sig } = await signed(Wallet.createRandom());
    const error = await verifier().verify({ sig, message: "", statement: PROFILE_STATEMENT }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidAuthorizationError);
    expect((error as Error).message).toMatch(/\bmessage\b/);
  });

  it("rejects a sig that is not hex", async () => {
    const { message } = await signed(Wallet.createRandom());
    const sig = `0x${"zz".repeat(65)}`;
    await expect(verifier().verify({ sig, message, statement: PROFILE_STATEMENT })).rejects.toThrow(
      InvalidAuthorizationError,
    );
  });

  it("rejects a truncated sig", async () => {
    const { sig, message } = await signed(Wallet.createRandom());
    await expect(
      verifier().verify({ sig: sig.slice(0, -2), message, statement: PROFILE_STATEMENT }),
    ).rejects.toThrow(InvalidAuthorizationError);
  });

  it("rejects 65 bytes of hex that are no valid signature", async () => {
    const { message } = await signed(Wallet.createRandom());
    const sig = `0x${"11".repeat(64)}05`;
    await expect(verifier().verify({ sig, message, statement: PROFILE_STATEMENT })).rejects.toThrow(
      InvalidAuthorizationError,
    );
  });

  it("rejects a truncated message", async () => {
    const { sig, message } = await signed(Wallet.createRandom());
    const error = await verifier()
      .verify({ sig, message: message.slice(0, message.length - 40), statement: PROFILE_STATEMENT })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidAuthorizationError);
    expect((error as Error).message).toMatch(/EIP-4361/);
    expect((error as Error).message).not.toMatch(/\n|state|maxMatched/);
  });

  it("rejects a message in a wrong format", async () => {
    const wallet = Wallet.createRandom();
    const message = JSON.stringify({ domain: "app.example.com", address: wallet.address, statement: PROFILE_STATEMENT });
    const sig = await wallet.signMessage(message);
    await expect(verifier().verify({ sig, message, statement: PROFILE_STATEMENT })).rejects.toThrow(
      InvalidAuthorizationError,
    );
  });

  it("rejects a message whose address is not EIP-55 checksummed and says which line", async () => {
    // A random address whose checksum happens to leave every letter lowercase (or that has no letter)
    // is checksummed in lowercase too: one with a capital is drawn.
    let wallet = Wallet.createRandom();
    while (wallet.address === wallet.address.toLowerCase()) wallet = Wallet.createRandom();
    const { message: original } = await signed(wallet);
    const message = original.replace(wallet.address, wallet.address.toLowerCase());
    const sig = await wallet.signMessage(message);
    const error = await verifier().verify({ sig, message, statement: PROFILE_STATEMENT }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidAuthorizationError);
    expect((error as Error).message).toMatch(/line 2/);
  });

  it("rejects a signature made by another wallet", async () => {
    const { message } = await signed(Wallet.createRandom());
    const sig = await Wallet.createRandom().signMessage(message);
    await expect(verifier().verify({ sig, message, statement: PROFILE_STATEMENT })).rejects.toThrow(
      InvalidAuthorizationError,
    );
  });

  it("rejects a message altered after signing", async () => {
    const { sig, message } = await signed(Wallet.createRandom());
    const altered = message.replace("abcdef0123456789", "abcdef0123456788");
    await expect(verifier().verify({ sig, message: altered, statement: PROFILE_STATEMENT })).rejects.toThrow(
      InvalidAuthorizationError,
    );
  });

  it("rejects an expired message with 10100", async () => {
    const { sig, message } = await signed(Wallet.createRandom(), { issuedAt: at(-2 * HOUR), expirationTime: at(-HOUR) });
    await expect(verifier().verify({ sig, message, statement: PROFILE_STATEMENT })).rejects.toThrow(
      AuthorizationExpiredError,
    );
  });

  it("reports 10101, not 10100, for an expired message signed by the wrong wallet", async () => {
    const { message } = await signed(Wallet.createRandom(), { issuedAt: at(-2 * HOUR), expirationTime: at(-HOUR) });
    const sig = await Wallet.createRandom().signMessage(message);
    await expect(verifier().verify({ sig, message, statement: PROFILE_STATEMENT })).rejects.toThrow(
      InvalidAuthorizationError,
    );
  });

  it("rejects a message whose notBefore is in the future with 10100", async () => {
    const { sig, message } = await signed(Wallet.createRandom(), { notBefore: at(HOUR) });
    await expect(verifier().verify({ sig, message, statement: PROFILE_STATEMENT })).rejects.toThrow(
      AuthorizationExpiredError,
    );
  });

  it("rejects a message issued longer ago than maxAgeSeconds with 10100", async () => {
    const { sig, message } = await signed(Wallet.createRandom(), { issuedAt: at(-2 * HOUR) });
    await expect(verifier({ maxAgeSeconds: 3600 }).verify({ sig, message, statement: PROFILE_STATEMENT })).rejects.toThrow(
      AuthorizationExpiredError,
    );
    // The same message is fine under the default 24 h.
    await expect(verifier().verify({ sig, message, statement: PROFILE_STATEMENT })).resolves.toBeDefined();
  });

  it("rejects a message issued in the future with 10100, beyond the clock-skew allowance", async () => {
    const wallet = Wallet.createRandom();
    const future = await signed(wallet, { issuedAt: at(10 * 60_000) });
    await expect(verifier().verify({ ...future, statement: PROFILE_STATEMENT })).rejects.toThrow(
      AuthorizationExpiredError,
    );
    const slightlyAhead = await signed(wallet, { issuedAt: at(30_000) });
    await expect(verifier().verify({ ...slightlyAhead, statement: PROFILE_STATEMENT })).resolves.toBeDefined();
  });

  it("rejects the wrong statement with 10101 and a missing one too", async () => {
    const wallet = Wallet.createRandom();
    const { sig, message } = await signed(wallet, { statement: RELATIONSHIP_GRAPH_STATEMENT });
    const error = await verifier().verify({ sig, message, statement: PROFILE_STATEMENT }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidAuthorizationError);
    expect((error as Error).message).toContain(PROFILE_STATEMENT);

    const bare = new SiweMessage({
      domain: "app.example.com",
      address: wallet.address,
      uri: "https://app.example.com",
      version: "1",
      chainId: 1,
      issuedAt: at(0),
    }).prepareMessage();
    await expect(
      verifier().verify({ sig: await wallet.signMessage(bare), message: bare, statement: PROFILE_STATEMENT }),
    ).rejects.toThrow(InvalidAuthorizationError);
  });

  it("accepts any statement when statement is null", async () => {
    const wallet = Wallet.createRandom();
    for (const statement of [PROFILE_STATEMENT, RELATIONSHIP_GRAPH_STATEMENT]) {
      const { sig, message } = await signed(wallet, { statement });
      await expect(verifier().verify({ sig, message, statement: null })).resolves.toMatchObject({ statement });
    }
  });

  it("rejects a domain outside SIWE_DOMAINS with 10101", async () => {
    const { sig, message } = await signed(Wallet.createRandom(), { domain: "evil.example.org" });
    const strict = verifier({ domains: ["app.example.com", "localhost:3000"] });
    const error = await strict.verify({ sig, message, statement: PROFILE_STATEMENT }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidAuthorizationError);
    expect((error as Error).message).toContain("evil.example.org");
  });

  it("accepts a listed domain, case-insensitively, and any domain when SIWE_DOMAINS is unset", async () => {
    const wallet = Wallet.createRandom();
    const listed = await signed(wallet, { domain: "localhost:3000" });
    await expect(
      verifier({ domains: ["APP.example.com", "localhost:3000"] }).verify({ ...listed, statement: PROFILE_STATEMENT }),
    ).resolves.toMatchObject({ domain: "localhost:3000" });
    const anyDomain = await signed(wallet, { domain: "whatever.example.net" });
    await expect(verifier().verify({ ...anyDomain, statement: PROFILE_STATEMENT })).resolves.toMatchObject({
      domain: "whatever.example.net",
    });
  });

  it("turns garbage into 10101 and nothing else", async () => {
    const v = verifier();
    const { sig } = await signed(Wallet.createRandom());
    const garbage: unknown[] = [
      undefined,
      null,
      42,
      "\u0000",
      "x".repeat(100_000),
      "app.example.com wants you to sign in with your Ethereum account:\n0x0\n\n",
    ];
    for (const value of garbage) {
      await expect(v.verify({ sig, message: value as string, statement: null })).rejects.toThrow(
        InvalidAuthorizationError,
      );
      await expect(v.verify({ sig: value as string, message: "m", statement: null })).rejects.toThrow(
        InvalidAuthorizationError,
      );
    }
  });

  describe("verified once", () => {
    it("remembers a verified authorization by its message and signature; every use still checks the statement and the time limits", async () => {
      const wallet = Wallet.createRandom();
      const { sig, message } = await signed(wallet, { expirationTime: at(HOUR) });
      let clock = NOW;
      const cached = verifier({ now: () => clock });
      const first = await cached.verify({ sig, message, statement: PROFILE_STATEMENT });
      // The same pair, so the same id; a different signature over the same message is another authorization.
      const again = await cached.verify({ sig, message, statement: PROFILE_STATEMENT });
      expect(again).toEqual(first);
      const other = await signed(wallet, { expirationTime: at(HOUR - 1000) });
      expect((await cached.verify({ ...other, statement: PROFILE_STATEMENT })).id).not.toBe(first.id);

      await expect(cached.verify({ sig, message, statement: RELATIONSHIP_GRAPH_STATEMENT })).rejects.toBeInstanceOf(InvalidAuthorizationError);
      clock = new Date(NOW.getTime() + HOUR);
      await expect(cached.verify({ sig, message, statement: PROFILE_STATEMENT })).rejects.toBeInstanceOf(AuthorizationExpiredError);
    });

    it("holds a remembered authorization to its maximum age and notBefore on every use", async () => {
      const wallet = Wallet.createRandom();
      const { sig, message } = await signed(wallet, { notBefore: at(10 * 60_000) });
      let clock = new Date(NOW.getTime() + 20 * 60_000);
      const cached = verifier({ now: () => clock, maxAgeSeconds: 3600 });
      const first = await cached.verify({ sig, message, statement: PROFILE_STATEMENT });
      expect(first.validUntil).toEqual(new Date(new Date(at(-60_000)).getTime() + HOUR));
      clock = NOW;
      await expect(cached.verify({ sig, message, statement: PROFILE_STATEMENT })).rejects.toThrow(/not valid before/);
      clock = new Date(NOW.getTime() + HOUR);
      await expect(cached.verify({ sig, message, statement: PROFILE_STATEMENT })).rejects.toThrow(/issued more than 3600 seconds ago/);
    });

    it("never remembers a failure: a bad signature is refused every time", async () => {
      const wallet = Wallet.createRandom();
      const { message } = await signed(wallet);
      const { sig: wrong } = await signed(Wallet.createRandom());
      const cached = verifier();
      for (let i = 0; i < 2; i++) {
        await expect(cached.verify({ sig: wrong, message, statement: PROFILE_STATEMENT })).rejects.toBeInstanceOf(InvalidAuthorizationError);
      }
    });
  });

  it("recovers signers as ethers does: many wallets accepted, the malleated (high-s) twin and other signers refused", async () => {
    const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const check = verifier({ cacheSize: 0 });
    for (let i = 0; i < 10; i++) {
      const wallet = Wallet.createRandom();
      const { sig, message } = await signed(wallet, { expirationTime: at(HOUR + i) });
      expect((await check.verify({ sig, message, statement: PROFILE_STATEMENT })).address).toBe(wallet.address.toLowerCase());
      expect(verifyMessage(message, sig)).toBe(wallet.address);
      // The same signature with s' = n − s and the other v: valid ECDSA, refused by ethers and by relgraph.
      const s = BigInt(`0x${sig.slice(66, 130)}`);
      const v = Number.parseInt(sig.slice(130), 16);
      const twin = `${sig.slice(0, 66)}${(N - s).toString(16).padStart(64, "0")}${(v === 27 ? 28 : 27).toString(16)}`;
      expect(() => verifyMessage(message, twin)).toThrow();
      await expect(check.verify({ sig: twin, message, statement: PROFILE_STATEMENT })).rejects.toBeInstanceOf(InvalidAuthorizationError);
      // v as 0/1 is the same signature.
      const zeroBased = `${sig.slice(0, 130)}${(v - 27).toString(16).padStart(2, "0")}`;
      expect((await check.verify({ sig: zeroBased, message, statement: PROFILE_STATEMENT })).address).toBe(wallet.address.toLowerCase());
    }
  });
});
