import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { createLoadValidator } from "../../src/ingest/validate.js";
import { UnknownRelationIdError } from "../../src/store/batch.js";
import { RELATION_ID_INDEX } from "../../src/store/redis/keys.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";

/*
 * A load is checked against the store and written under one hold of the write lease, and the write
 * plans from the relationIds the check looked up (redis-store.ts, LeaseHold) rather than reading
 * them again; a write forgets them, as it changes what they say.
 */

const user = (relationId: string) => ({ type: "user", relationId, addresses: [] });

async function waitFor(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5_000) throw new Error("the monitor never showed the last command");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("relationIds looked up under the write lease", () => {
  let server: TestRedisServer;
  let store: GraphStore;
  beforeAll(async () => {
    server = await startRedisServer();
    store = await createRedisStore({ url: server.url });
    await ingestRecords(store, [...["s1", "s2", "s3", "s4"].map(user), { type: "friend", a: "s3", b: "s4" }]);
  });
  afterAll(async () => {
    await store?.close();
    await server?.stop();
  });

  it("are read once for a load: by its check, and not again by its plan", async () => {
    const monitor = createClient({ url: server.url });
    await monitor.connect();
    const seen: string[] = [];
    try {
      await monitor.monitor((line) => seen.push(line));
      await ingestRecords(store, [{ type: "friend", a: "s1", b: "s2" }, user("s9"), { type: "follow", from: "s9", to: "s3" }]);
      // Everything before it has been seen once the monitor shows this.
      await store.resolveRelationIds(["end-of-load"]);
      await waitFor(() => seen.some((line) => line.includes('"end-of-load"')));
    } finally {
      await monitor.close();
    }
    const lookups = seen.filter((line) => line.includes(`"HMGET" "${RELATION_ID_INDEX}"`));
    const naming = (relationId: string) => lookups.filter((line) => line.includes(` "${relationId}"`)).length;
    // The check looks up the stored users the load names; the plan reads only the user it defines.
    expect(naming("s1")).toBe(1);
    expect(naming("s3")).toBe(1);
    expect(naming("s9")).toBe(1);
    const [s1, s2] = await store.resolveRelationIds(["s1", "s2"]);
    expect(await store.userSet("friends", s1!)).toEqual([s2]);
  });

  it("are forgotten by a write: a later write under the same lease plans from the store again", async () => {
    await store.exclusive(async () => {
      // Checked while s3 is stored: the check looks s3 up under this hold.
      const later = createLoadValidator({ sources: ["later"] });
      later.addRecord({ type: "friend", a: "s3", b: "s1" }, 0, 1);
      const batch = await later.finish(store);
      // Then erased by another write under the same hold.
      await ingestRecords(store, [{ op: "delete", type: "user", relationId: "s3" }]);
      await expect(store.write(batch)).rejects.toThrow(UnknownRelationIdError);
    });
    expect(await store.resolveRelationIds(["s3"])).toEqual([null]);
  });
});
