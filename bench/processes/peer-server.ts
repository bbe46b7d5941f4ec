import Fastify from "fastify";
import { createClient } from "redis";

/*
 * The simplest peer (issue item 3b): one Fastify route that runs the underlying Redis command
 * (SINTER over the keys it is given) with node-redis and returns the members as JSON. No ApiKey,
 * no validation, no hydration: the gap between this and relgraph is what relgraph's own layers cost.
 * Run as its own process: PORT and REDIS_URL from the environment; prints "peer listening" when ready.
 */

const port = Number(process.env.PORT);
const redis = createClient({ url: process.env.REDIS_URL });
await redis.connect();
const app = Fastify({ logger: false });

app.get("/sinter", async (request) => {
  const keys = String((request.query as { keys?: string }).keys ?? "").split(",");
  return { data: await redis.sInter(keys) };
});

await app.listen({ port, host: "127.0.0.1" });
process.stdout.write(`peer listening on ${port}\n`);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void app
      .close()
      .then(() => redis.close())
      .finally(() => process.exit(0));
  });
}
