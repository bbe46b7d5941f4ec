import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";

describe("FAST_PATHS", () => {
  it("is on by default, off only when told, and refuses anything else", () => {
    expect(loadConfig({}).fastPaths).toBe(true);
    expect(loadConfig({ FAST_PATHS: "on" }).fastPaths).toBe(true);
    expect(loadConfig({ FAST_PATHS: "off" }).fastPaths).toBe(false);
    expect(() => loadConfig({ FAST_PATHS: "no" })).toThrow(ConfigError);
  });
});

describe("ENCRYPTION_BACKEND", () => {
  it("is relgraph's key nodes by default and refuses the retired Lit backend, saying why", () => {
    expect(loadConfig({}).encryptionBackend).toBe("relgraph");
    expect(loadConfig({ ENCRYPTION_BACKEND: "relgraph" }).encryptionBackend).toBe("relgraph");
    expect(() => loadConfig({ ENCRYPTION_BACKEND: "lit" })).toThrow(ConfigError);
    expect(() => loadConfig({ ENCRYPTION_BACKEND: "lit" })).toThrow(/retired its Datil and Naga networks.*2026/);
    expect(() => loadConfig({ LIT_NETWORK: "datil" })).toThrow(/LIT_NETWORK is no longer read/);
    expect(() => loadConfig({ ENCRYPTION_BACKEND: "other" })).toThrow(/expected one of relgraph/);
  });
});

describe("ENCRYPTION_WORKERS", () => {
  it("is one per core, at most 4, by default; takes 0 (the event loop) and more; refuses anything else", () => {
    expect(loadConfig({}).encryptionWorkers).toBe(Math.min(4, availableParallelism()));
    expect(loadConfig({ ENCRYPTION_WORKERS: "0" }).encryptionWorkers).toBe(0);
    expect(loadConfig({ ENCRYPTION_WORKERS: "8" }).encryptionWorkers).toBe(8);
    for (const bad of ["-1", "1.5", "many", "65"]) expect(() => loadConfig({ ENCRYPTION_WORKERS: bad })).toThrow(/ENCRYPTION_WORKERS/);
  });
});

describe("RECOMMEND_SNAPSHOTS_PER_KEY", () => {
  it("defaults to a tenth of RECOMMEND_SNAPSHOT_LIMIT, and refuses a share larger than the pool or none", () => {
    const defaults = loadConfig({});
    expect(defaults.recommendSnapshotsPerKey).toBe(Math.floor(defaults.recommendSnapshotLimit / 10));
    expect(loadConfig({ RECOMMEND_SNAPSHOT_LIMIT: "200" }).recommendSnapshotsPerKey).toBe(20);
    expect(loadConfig({ RECOMMEND_SNAPSHOT_LIMIT: "5" }).recommendSnapshotsPerKey).toBe(1);
    expect(loadConfig({ RECOMMEND_SNAPSHOTS_PER_KEY: "7" }).recommendSnapshotsPerKey).toBe(7);
    expect(loadConfig({ RECOMMEND_SNAPSHOTS_PER_KEY: "200", RECOMMEND_SNAPSHOT_LIMIT: "200" }).recommendSnapshotsPerKey).toBe(200);
    expect(() => loadConfig({ RECOMMEND_SNAPSHOTS_PER_KEY: "201", RECOMMEND_SNAPSHOT_LIMIT: "200" })).toThrow(
      /RECOMMEND_SNAPSHOTS_PER_KEY \(201\) exceeds RECOMMEND_SNAPSHOT_LIMIT \(200\)/,
    );
    expect(() => loadConfig({ RECOMMEND_SNAPSHOTS_PER_KEY: "0" })).toThrow(ConfigError);
    expect(() => loadConfig({ RECOMMEND_SNAPSHOTS_PER_KEY: "many" })).toThrow(/RECOMMEND_SNAPSHOTS_PER_KEY: expected an integer/);
  });
});
