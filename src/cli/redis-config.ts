import { ConfigError, loadConfig, type Config } from "../config/config.js";
import { engineName } from "../store/index.js";
import type { CommandIo } from "./io.js";

/**
 * The configuration of a command that works on Redis only (follow, index): null, with the reason on
 * stderr, when the environment is invalid or names no Redis; the command then exits 2.
 */
export function redisCommandConfig(io: CommandIo, command: string): Config | null {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.stderr.write(`relgraph ${command}: ${error.message}\n`);
    return null;
  }
  if (engineName(config) === "memory") {
    io.stderr.write(`relgraph ${command}: no Redis is configured: set REDIS_URL or REDIS_CLUSTER_NODES\n`);
    return null;
  }
  return config;
}
