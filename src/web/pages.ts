import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply } from "fastify";
import { OPENAPI_PATH, createOpenApiDocument, type ServedRoute } from "./openapi.js";

/**
 * The browser-facing pages, which need no ApiKey: GET /openapi.json, GET /docs (renders it), GET
 * /demo (the demo dApp) and their scripts and styles under /web/. Every asset is served from this
 * server: `npm run build` bundles them into dist/web/ (scripts/build-web.mjs), and the pages' CSP
 * forbids loading scripts or styles from anywhere else.
 */

/** Where the pages' assets are served. */
export const ASSETS_PREFIX = "/web/";

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
  ".png": "image/png",
  ".txt": "text/plain; charset=utf-8",
};

// Scripts and styles only from here; the demo calls any relgraph server and its key nodes.
// 'wasm-unsafe-eval' lets the page compile WebAssembly (the client's pairings), and nothing else: eval stays refused.
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; connect-src *; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Options of webPages. */
export interface WebPagesOptions {
  /** The server's routes, filled while it registers them (collectRoutes); read once it is ready. */
  routes: readonly ServedRoute[];
}

/**
 * Records every route registered on `app` from now on, in its encapsulation context and below, so
 * that the OpenAPI document can name them all. Call it before registering anything else.
 */
export function collectRoutes(app: FastifyInstance): ServedRoute[] {
  const routes: ServedRoute[] = [];
  app.addHook("onRoute", (route) => {
    routes.push({ url: route.url, methods: Array.isArray(route.method) ? route.method : [route.method] });
  });
  return routes;
}

/** The pages as a Fastify plugin. */
export async function webPages(app: FastifyInstance, options: WebPagesOptions): Promise<void> {
  const root = packageRoot();
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
  const assets = readAssets(join(root, "dist", "web"));
  // Built when the server is ready, once every route (this plugin's own included) is registered.
  let openapi = "";
  app.addHook("onReady", async () => {
    openapi = JSON.stringify(createOpenApiDocument(version, options.routes));
  });

  app.get(OPENAPI_PATH, async (_request, reply) => reply.type("application/json").send(openapi));

  const sendAsset = (reply: FastifyReply, name: string) => {
    const body = assets.get(name);
    if (body === undefined) {
      // Running from sources without a build: say what to do instead of a bare 404.
      return reply.code(503).type("text/plain").send(`${name} is not built: run "npm run build"\n`);
    }
    return reply
      .header("content-security-policy", CSP)
      .header("x-content-type-options", "nosniff")
      .type(CONTENT_TYPES[extname(name)] ?? "application/octet-stream")
      .send(body);
  };
  app.get("/docs", async (_request, reply) => sendAsset(reply, "docs.html"));
  app.get("/demo", async (_request, reply) => sendAsset(reply, "demo.html"));
  app.get<{ Params: { file: string } }>(`${ASSETS_PREFIX}:file`, async (request, reply) => {
    const { file } = request.params;
    if (!assets.has(file) || file.endsWith(".html")) return reply.code(404).type("text/plain").send("no such file\n");
    return sendAsset(reply, file);
  });
}

/** Reads every built asset once; only these names are ever served, so no path reaches the disk. */
function readAssets(dir: string): Map<string, Buffer> {
  const assets = new Map<string, Buffer>();
  if (!existsSync(dir)) return assets;
  for (const name of readdirSync(dir)) {
    if (extname(name) in CONTENT_TYPES) assets.set(name, readFileSync(join(dir, name)));
  }
  return assets;
}

/** The directory of relgraph's package.json, whether this runs from dist/ or from the sources. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json"))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error("relgraph's package.json is not above its code");
    dir = parent;
  }
  return dir;
}
