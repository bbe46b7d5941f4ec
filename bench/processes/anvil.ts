import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** The anvil binary of the installed platform package of @foundry-rs/anvil (a devDependency). */
export function anvilBinary(): string {
  const require = createRequire(import.meta.url);
  const platform = `@foundry-rs/anvil-${process.platform}-${process.arch === "x64" ? "amd64" : process.arch}`;
  return join(dirname(require.resolve(`${platform}/package.json`)), "bin", "anvil");
}
