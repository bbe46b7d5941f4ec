import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/check-tools.ts"],
    // Tests start real redis-server processes, clusters and key nodes; give them room on 2 cores.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
