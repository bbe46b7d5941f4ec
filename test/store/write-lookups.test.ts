import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestValidationError, ingestRecords } from "../../src/ingest/ingest.js";
import { createLoadValidator } from "../../src/ingest/validate.js";
import { UnknownRelationIdError } from "../../src/store/batch.js";
import { RELATION_ID_INDEX } from "../../src/store/redis/keys.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import type { GraphStore, IngestBatch } from "../../src/store/store.js";
import { commandsDuring } from "../support/redis-monitor.js";
import { startRedisServer, type TestRedisServer } from "../support/redis-servers.js";

/*
 * A load is checked against the store and written under one hold of the write lease, and the write
 * plans from the relationIds the check looked up (redis-store.ts, LeaseHold) rather than reading
 * them again; a write forgets them, as it changes what they say.
 */

const user = (relationId: string) => ({ type: "user", relationId, addresses: [] });

/** A batch of records checked against the store outside the lease, so that its lookups are kept nowhere. */
async function checked(store: GraphStore, records: object[]): Promise<IngestBatch> {
  const validator = createLoadValidator({ sources: ["test"] });
  records.forEach((record, i) => validator.addRecord(record, 0, i + 1));
  return validator.finish(store);
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
    const seen = await commandsDuring(server.url, () =>
      ingestRecords(store, [{ type: "friend", a: "s1", b: "s2" }, user("s9"), { type: "follow", from: "s9", to: "s3" }]),
    );
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

  it("are not kept when read while a write is under way: the next write plans from the store", async () => {
    await ingestRecords(store, [user("s5"), user("s6")]);
    const erase = await checked(store, [{ op: "delete", type: "user", relationId: "s5" }]);
    const befriend = await checked(store, [{ type: "friend", a: "s5", b: "s6" }]);
    await store.exclusive(async () => {
      // Sent before the erasure's commands, answered after its write began: s5's id, about to go.
      const lookup = store.resolveRelationIds(["s5"]);
      await Promise.all([lookup, store.write(erase)]);
      await expect(store.write(befriend)).rejects.toThrow(UnknownRelationIdError);
    });
  });

  it("leave a load invalid in its lines to be refused without waiting for the lease", async () => {
    let release!: () => void;
    const held = withLeaseHeld(store, (done) => (release = done));
    await held.taken;
    try {
      const outcome = await Promise.race([
        ingestRecords(store, [{ type: "friend", a: "s1" }]).then(
          () => "written",
          (error: unknown) => (error instanceof IngestValidationError ? "refused" : String(error)),
        ),
        new Promise((resolve) => setTimeout(() => resolve("still waiting for the lease"), 3_000)),
      ]);
      expect(outcome).toBe("refused");
    } finally {
      release();
      await held.released;
    }
  });
});

/** Holds the store's write lease, as another writer would, until `hold`'s callback is called. */
function withLeaseHeld(store: GraphStore, hold: (done: () => void) => void): { taken: Promise<void>; released: Promise<void> } {
  let taken!: () => void;
  const takenPromise = new Promise<void>((resolve) => (taken = resolve));
  const released = store.exclusive(
    () =>
      new Promise<void>((resolve) => {
        hold(resolve);
        taken();
      }),
  );
  return { taken: takenPromise, released };
}
