import { describe, expect, it } from "vitest";
import { createStore } from "../../src/store/index.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { defineStoreAcceptance } from "./store-acceptance.js";

// No createDisposable: the embedded engine has no backend that can become unavailable.
defineStoreAcceptance({
  engine: "memory",
  createEmpty: async () => createMemoryStore(),
});

describe("memory engine", () => {
  it("is what createStore opens when no Redis is configured", async () => {
    const store = await createStore({ redisUrl: null, redisClusterNodes: [] });
    expect(store.engine).toBe("memory");
    await store.close();
  });
});
