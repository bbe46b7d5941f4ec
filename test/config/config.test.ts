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
