// Bundles the browser pages (/demo, /docs) into dist/web/, with every dependency inside, so that
// the pages load nothing from outside the server. Run by `npm run build` after tsc.
import { copyFile, mkdir, readdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist", "web");
await mkdir(out, { recursive: true });
await build({
  entryPoints: { demo: join(root, "src/web/demo/demo.ts"), docs: join(root, "src/web/docs/docs.ts") },
  outdir: out,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  sourcemap: "linked",
  legalComments: "linked",
  logLevel: "warning",
});
const statics = join(root, "src/web/static");
for (const name of await readdir(statics)) await copyFile(join(statics, name), join(out, name));
