import { readFileSync } from "node:fs";
import Fastify from "fastify";

/*
 * The HTTP limit of issue 16's protocol ratios: plain Fastify answering every GET with fixed bytes,
 * relgraph's own answer to the request measured. relgraph's REST ÷ this is what relgraph's work
 * costs on top of the same HTTP stack. Run as its own process: PORT and BODY_FILE from the
 * environment; prints "plain listening" when ready.
 */

const port = Number(process.env.PORT);
const body = readFileSync(String(process.env.BODY_FILE));
const app = Fastify({ logger: false });
app.get("/*", (_request, reply) => reply.type("application/json; charset=utf-8").send(body));

await app.listen({ port, host: "127.0.0.1" });
process.stdout.write(`plain listening on ${port}\n`);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => void app.close().finally(() => process.exit(0)));
}
