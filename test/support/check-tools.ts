import { execFileSync } from "node:child_process";

/**
 * vitest global setup: the suite starts its own redis-server processes and a Redis Cluster, so say
 * plainly what is missing before hundreds of tests fail with a spawn ENOENT.
 */
export default function checkTools(): void {
  const missing = ["redis-server", "redis-cli"].filter((tool) => {
    try {
      execFileSync(tool, ["--version"], { stdio: "ignore" });
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length > 0) {
    throw new Error(`the tests need ${missing.join(" and ")} on the PATH: apt-get install -y redis-server redis-tools`);
  }
}
