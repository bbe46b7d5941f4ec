import { describe, expect, it } from "vitest";
import {
  createApiKey,
  createApiKeyAuthenticator,
  generateApiKey,
  hashApiKey,
  listApiKeys,
  revokeApiKey,
} from "../../src/auth/api-keys.js";
import {
  InvalidApiKeyError,
  MissingApiKeyError,
  StoreUnavailableError,
} from "../../src/domain/errors.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import type { ApiKeyStore } from "../../src/store/store.js";

/** Wraps a store, counting key lookups and optionally failing them. */
function instrumented(store: ApiKeyStore, fail: () => Error | null = () => null) {
  let lookups = 0;
  const wrapped: ApiKeyStore = {
    putApiKey: (record) => store.putApiKey(record),
    listApiKeys: () => store.listApiKeys(),
    revokeApiKey: (id, at) => store.revokeApiKey(id, at),
    async apiKeyByHash(hash) {
      lookups += 1;
      const error = fail();
      if (error) throw error;
      return store.apiKeyByHash(hash);
    },
  };
  return { store: wrapped, lookups: () => lookups };
}

describe("hashApiKey / generateApiKey", () => {
  it("hashes to hex SHA-256", () => {
    expect(hashApiKey("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    // Keys stored before the one-call hash must still match: UTF-8 in, as createHash hashed them.
    expect(hashApiKey("clé 🦊")).toBe("806ee4402b476b6f15ea1bac96d447d770da64e6cab9744f1498cb2e04f48e5c");
  });

  it("generates distinct rg_-prefixed 256-bit keys", () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a).toMatch(/^rg_[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
  });
});

describe("managed keys", () => {
  it("stores only the hash, lists and revokes by id", async () => {
    const store = createMemoryStore();
    const { key, record } = await createApiKey(store, "ci");
    expect(record).toMatchObject({ hash: hashApiKey(key), label: "ci", revokedAt: null });
    expect(record.id).toBe(record.hash.slice(0, 8));
    expect(JSON.stringify(await store.listApiKeys())).not.toContain(key);

    const second = await createApiKey(store, "dashboard");
    expect((await listApiKeys(store)).map((r) => r.label).sort()).toEqual(["ci", "dashboard"]);

    expect(await revokeApiKey(store, record.id)).toBe(true);
    expect(await revokeApiKey(store, "nope")).toBe(false);
    const listed = await listApiKeys(store);
    expect(listed.find((r) => r.id === record.id)?.revokedAt).toEqual(expect.any(String));
    expect(listed.find((r) => r.id === second.record.id)?.revokedAt).toBeNull();
  });
});

describe("createApiKeyAuthenticator", () => {
  it("refuses a missing or empty key with 10001", async () => {
    const auth = createApiKeyAuthenticator({ store: createMemoryStore(), staticKeys: ["s3cret"] });
    await expect(auth.authenticate(undefined)).rejects.toThrow(MissingApiKeyError);
    await expect(auth.authenticate("")).rejects.toThrow(MissingApiKeyError);
    await expect(auth.authenticate("   ")).rejects.toThrow(MissingApiKeyError);
  });

  it("accepts a static key and refuses an unknown one with 10002", async () => {
    const auth = createApiKeyAuthenticator({ store: createMemoryStore(), staticKeys: ["alpha", "beta"] });
    const alpha = await auth.authenticate("alpha");
    const beta = await auth.authenticate("beta");
    expect(alpha.keyId).not.toBe(beta.keyId);
    expect(alpha.keyId).not.toContain("alpha");
    await expect(auth.authenticate("gamma")).rejects.toThrow(InvalidApiKeyError);
    await expect(auth.authenticate("alph")).rejects.toThrow(InvalidApiKeyError);
  });

  it("refuses everything with 10002 when no key exists anywhere", async () => {
    const auth = createApiKeyAuthenticator({ store: createMemoryStore(), staticKeys: [] });
    await expect(auth.authenticate(generateApiKey())).rejects.toThrow(InvalidApiKeyError);
  });

  it("accepts a managed key at once and refuses it once revoked and the cache has expired", async () => {
    const memory = createMemoryStore();
    const { store, lookups } = instrumented(memory);
    let clock = 1_000_000;
    const auth = createApiKeyAuthenticator({ store, staticKeys: [], cacheTtlMs: 5_000, now: () => clock });

    const { key, record } = await createApiKey(memory, "app");
    expect(await auth.authenticate(key)).toEqual({ keyId: record.id, rateLimit: null });
    expect(await auth.authenticate(key)).toEqual({ keyId: record.id, rateLimit: null });
    expect(lookups()).toBe(1);

    await revokeApiKey(memory, record.id);
    // Within the TTL the cached answer stands; that is the documented bound on revocation.
    clock += 4_999;
    await expect(auth.authenticate(key)).resolves.toEqual({ keyId: record.id, rateLimit: null });
    clock += 1;
    await expect(auth.authenticate(key)).rejects.toThrow(InvalidApiKeyError);
    await expect(auth.authenticate(key)).rejects.toThrow(InvalidApiKeyError);
    // The second refusal comes from the short negative cache.
    expect(lookups()).toBe(2);
  });

  it("caches a miss briefly: a repeated unknown key reaches the store once per second", async () => {
    let clock = 0;
    const raw = instrumented(createMemoryStore());
    const auth = createApiKeyAuthenticator({ store: raw.store, staticKeys: [], now: () => clock });
    const key = generateApiKey();
    for (let i = 0; i < 5; i++) await expect(auth.authenticate(key)).rejects.toThrow(InvalidApiKeyError);
    expect(raw.lookups()).toBe(1);
    clock += 1_000;
    await expect(auth.authenticate(key)).rejects.toThrow(InvalidApiKeyError);
    expect(raw.lookups()).toBe(2);
  });

  it("keeps at most 10,000 refusals, the oldest making room", async () => {
    const raw = instrumented(createMemoryStore());
    const auth = createApiKeyAuthenticator({ store: raw.store, staticKeys: [], now: () => 0 });
    for (let i = 0; i <= 10_000; i++) await auth.authenticate(`unknown-${i}`).catch(() => {});
    expect(raw.lookups()).toBe(10_001);
    await auth.authenticate("unknown-10000").catch(() => {});
    expect(raw.lookups()).toBe(10_001);
    // The first refusal was dropped to make room, so it is asked again.
    await auth.authenticate("unknown-0").catch(() => {});
    expect(raw.lookups()).toBe(10_002);
  });

  it("lets a key stored after a refusal work once the refusal's second has passed", async () => {
    let clock = 0;
    const memory = createMemoryStore();
    const auth = createApiKeyAuthenticator({ store: memory, staticKeys: [], now: () => clock });
    const key = generateApiKey();
    await expect(auth.authenticate(key)).rejects.toThrow(InvalidApiKeyError);
    const hash = hashApiKey(key);
    await memory.putApiKey({ id: "k1", hash, label: "late", createdAt: new Date().toISOString(), revokedAt: null });
    clock += 1_000;
    await expect(auth.authenticate(key)).resolves.toEqual({ keyId: "k1", rateLimit: null });
  });

  it("propagates a store failure as StoreUnavailableError, not 10002", async () => {
    const raw = instrumented(createMemoryStore(), () => new Error("ECONNREFUSED 127.0.0.1:6379"));
    const auth = createApiKeyAuthenticator({ store: raw.store, staticKeys: ["static"] });
    const error = await auth.authenticate("managed-key").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).not.toContain("ECONNREFUSED");
    // Static keys do not need the store.
    await expect(auth.authenticate("static")).resolves.toBeDefined();

    const typed = instrumented(createMemoryStore(), () => new StoreUnavailableError("store down"));
    await expect(
      createApiKeyAuthenticator({ store: typed.store, staticKeys: [] }).authenticate("k"),
    ).rejects.toThrow(StoreUnavailableError);
  });
});
