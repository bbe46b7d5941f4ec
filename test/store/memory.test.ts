import { describe, expect, it } from "vitest";
import { createCachedStore } from "../../src/store/cache/cached-store.js";
import { createStore } from "../../src/store/index.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { defineStoreAcceptance } from "./store-acceptance.js";

// No createDisposable: the embedded engine has no backend that can become unavailable.
describe("bare", () => {
  defineStoreAcceptance({
    engine: "memory",
    createEmpty: async () => createMemoryStore(),
  });
});
// As createStore serves it (test/store/cache/).
describe("behind the cache layer", () => {
  defineStoreAcceptance({
    engine: "memory",
    createEmpty: async () => createCachedStore(createMemoryStore()),
  });
});

describe("memory engine", () => {
  it("is what createStore opens when no Redis is configured", async () => {
    const store = await createStore({ redisUrl: null, redisClusterNodes: [] });
    expect(store.engine).toBe("memory");
    await store.close();
  });
});
