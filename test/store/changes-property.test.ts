import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { foldSocialUsername } from "../../src/domain/identity.js";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { createCachedStore } from "../../src/store/cache/cached-store.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { createRedisStore } from "../../src/store/redis/redis-store.js";
import type { GraphStore } from "../../src/store/store.js";
import { startRedisCluster, startRedisServer, type TestRedisCluster, type TestRedisServer } from "../support/redis-servers.js";
import { addr, dump } from "../ingest/helpers.js";

/*
 * Random sequences of loads of upserts and deletes of every record type, applied through ingestion
 * to each engine, against a model the test keeps itself: plain maps, changed record by record in
 * load order. The model follows the contract's words, not the engines' code: a user delete voids the
 * load's earlier records naming that user (and the earlier asset records of addresses they held),
 * then erases what is stored of them; every other record applies in order.
 */

const USERS = 8;
const CONTRACTS = Array.from({ length: 4 }, (_, i) => addr(`c${i}`));
const OWNERLESS = [addr("d0"), addr("d1")];
const rel = (i: number) => `p${i}`;
/** Each user draws its addresses from a pool of its own, so that no load makes two users claim one. */
const addressOf = (user: number, k: number) => addr(`a${user}${k}`);
const ALL_ADDRESSES = [...Array.from({ length: USERS }, (_, u) => [0, 1, 2].map((k) => addressOf(u, k))).flat(), ...OWNERLESS];

type Rec = Record<string, unknown>;

/** A small xorshift generator, so that a failing sequence can be replayed from its seed. */
function generator(seed: number) {
  let x = seed | 1;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]! };
}

interface ModelUser {
  name: string;
  addresses: string[];
  username: string | null;
}

/** The model: the state as the contract describes it, by relationId. */
class Model {
  users = new Map<string, ModelUser>();
  friends = new Map<string, string>(); // "a|b" (sorted) → description
  follows = new Set<string>(); // "from|to"
  assets = { interaction: new Map<string, Set<string>>(), nft: new Map<string, Set<string>>() };
  releases = new Map<string, "*" | Set<string>>();

  applyLoad(records: Rec[]): void {
    const lastDelete = new Map<string, number>();
    records.forEach((r, i) => r.type === "user" && r.op === "delete" && lastDelete.set(r.relationId as string, i));
    const voided = (relationId: string, i: number) => i < (lastDelete.get(relationId) ?? -1);
    // Addresses each deleted user held, as stored or as the load's voided records of them said.
    const heldBy = new Map<string, Set<string>>();
    for (const x of lastDelete.keys()) heldBy.set(x, new Set(this.users.get(x)?.addresses ?? []));
    records.forEach((r, i) => {
      if (r.type === "user" && r.op !== "delete" && voided(r.relationId as string, i)) for (const a of r.addresses as string[]) heldBy.get(r.relationId as string)!.add(a);
    });
    const kept = records.filter((r, i) => {
      const names = [r.relationId, r.a, r.b, r.from, r.to].filter((n): n is string => typeof n === "string");
      if (names.some((n) => voided(n, i))) return false;
      if (r.type === "interaction" || r.type === "nft") {
        for (const [x, addresses] of heldBy) if (voided(x, i) && addresses.has(r.address as string)) return false;
      }
      return true;
    });
    for (const x of lastDelete.keys()) this.erase(x);
    // Peers a later delete removes from a surviving release.
    for (const r of kept) {
      if (r.type === "user" && r.op === "delete") continue;
      if (r.type === "release" && Array.isArray(r.peers)) {
        const at = records.indexOf(r);
        r.peers = (r.peers as string[]).filter((p) => !voided(p, at));
      }
      this.apply(r);
    }
  }

  private erase(x: string): void {
    const user = this.users.get(x);
    this.users.delete(x);
    for (const key of [...this.friends.keys()]) if (key.split("|").includes(x)) this.friends.delete(key);
    for (const key of [...this.follows]) if (key.split("|").includes(x)) this.follows.delete(key);
    this.releases.delete(x);
    for (const release of this.releases.values()) if (release !== "*") release.delete(x);
    for (const address of user?.addresses ?? []) {
      this.assets.interaction.delete(address);
      this.assets.nft.delete(address);
    }
  }

  private apply(r: Rec): void {
    const del = r.op === "delete";
    switch (r.type) {
      case "user": {
        const social = r.social as { username: string } | null;
        this.users.set(r.relationId as string, { name: r.name as string, addresses: [...new Set(r.addresses as string[])], username: social?.username ?? null });
        return;
      }
      case "friend": {
        const key = [r.a, r.b].sort().join("|");
        if (del) this.friends.delete(key);
        else this.friends.set(key, (r.description as string | undefined) ?? "");
        return;
      }
      case "follow": {
        const key = `${r.from}|${r.to}`;
        if (del) this.follows.delete(key);
        else this.follows.add(key);
        return;
      }
      case "interaction":
      case "nft": {
        const sets = this.assets[r.type];
        let set = sets.get(r.address as string);
        if (!set) sets.set(r.address as string, (set = new Set()));
        if (del) set.delete(r.contract as string);
        else set.add(r.contract as string);
        if (set.size === 0) sets.delete(r.address as string);
        return;
      }
      case "release": {
        const peers = del ? [] : r.peers;
        if (peers === "*") this.releases.set(r.relationId as string, "*");
        else if ((peers as string[]).length === 0) this.releases.delete(r.relationId as string);
        else this.releases.set(r.relationId as string, new Set(peers as string[]));
      }
    }
  }

  /** The model in the shape of test/ingest/helpers.ts dump(). */
  dump(relationIds: readonly string[]): Record<string, unknown> {
    const state: Record<string, unknown> = {};
    for (const x of relationIds) {
      const user = this.users.get(x);
      if (!user) {
        state[x] = null;
        continue;
      }
      const friends = [...this.friends.keys()].filter((k) => k.split("|").includes(x)).map((k) => k.split("|").find((n) => n !== x)!);
      const assetsOf = (kind: "interaction" | "nft") => [...new Set(user.addresses.flatMap((a) => [...(this.assets[kind].get(a) ?? [])]))].sort();
      const release = this.releases.get(x);
      state[x] = {
        user: {
          relationId: x,
          name: user.name,
          avatar: "",
          addresses: user.addresses,
          social: user.username === null ? null : { username: user.username, name: "", avatar: "" },
          game: null,
          id: undefined,
        },
        friends: friends.sort(),
        descriptions: Object.fromEntries(friends.map((f) => [f, this.friends.get([x, f].sort().join("|"))!]).sort()),
        following: [...this.follows].filter((k) => k.startsWith(`${x}|`)).map((k) => k.split("|")[1]!).sort(),
        followers: [...this.follows].filter((k) => k.endsWith(`|${x}`)).map((k) => k.split("|")[0]!).sort(),
        contracts: assetsOf("interaction"),
        nfts: assetsOf("nft"),
        release: release === undefined ? [] : release === "*" ? "*" : [...release].sort(),
      };
    }
    return state;
  }
}

/** One random load; `model` is the state before it, to keep the load valid. */
function randomLoad(random: ReturnType<typeof generator>, model: Model, first: boolean): Rec[] {
  const records: Rec[] = [];
  const user = (i: number): Rec => {
    const addresses = [0, 1, 2].filter(() => random.next() < 0.5).map((k) => addressOf(i, k));
    // The username's case changes from load to load: it is one identity, kept in the case last given.
    const username = random.next() < 0.7 ? (random.next() < 0.5 ? `User${i}` : `uSER${i}`) : null;
    return { type: "user", relationId: rel(i), name: `n${random.int(100)}`, addresses, social: username && { username } };
  };
  if (first) for (let i = 0; i < USERS; i++) records.push(user(i));
  const count = 10 + random.int(40);
  for (let n = 0; n < count; n++) {
    const op = random.next() < 0.35 ? "delete" : "upsert";
    const [a, b] = [random.int(USERS), random.int(USERS)];
    const kind = random.pick(["user", "user", "friend", "friend", "follow", "interaction", "nft", "release"] as const);
    if (kind === "user") {
      if (op === "delete") {
        records.push({ op, type: "user", relationId: rel(a) });
      } else {
        records.push(user(a));
      }
    } else if (kind === "friend" && a !== b) {
      records.push(op === "delete" ? { op, type: "friend", a: rel(a), b: rel(b) } : { type: "friend", a: rel(a), b: rel(b), description: random.pick(["", "x", "y"]) });
    } else if (kind === "follow" && a !== b) {
      records.push(op === "delete" ? { op, type: "follow", from: rel(a), to: rel(b) } : { type: "follow", from: rel(a), to: rel(b) });
    } else if (kind === "interaction" || kind === "nft") {
      records.push({ ...(op === "delete" ? { op } : {}), type: kind, address: random.pick(ALL_ADDRESSES), contract: random.pick(CONTRACTS) });
    } else if (kind === "release") {
      const peers = random.next() < 0.3 ? "*" : Array.from({ length: random.int(3) }, () => rel(random.int(USERS))).filter((p) => p !== rel(a));
      records.push(op === "delete" ? { op, type: "release", relationId: rel(a) } : { type: "release", relationId: rel(a), peers });
    }
  }
  // Every upsert that survives the load's own deletes must name users that exist at its end: stored
  // and not deleted by the load, or defined by it after its last delete of them.
  const stored = new Set(first ? [] : model.users.keys());
  const lastDelete = new Map<string, number>();
  records.forEach((r, i) => r.type === "user" && r.op === "delete" && lastDelete.set(r.relationId as string, i));
  const missing = new Set<string>();
  records.forEach((r, i) => {
    if (r.op === "delete") return;
    for (const x of [r.a, r.b, r.from, r.to, r.relationId, ...(Array.isArray(r.peers) ? r.peers : [])]) {
      if (typeof x !== "string" || i < (lastDelete.get(x) ?? -1)) continue;
      const after = lastDelete.get(x) ?? -1;
      const defined = records.some((d, j) => j > after && d.type === "user" && d.op !== "delete" && d.relationId === x);
      if (!defined && (!stored.has(x) || lastDelete.has(x))) missing.add(x);
    }
  });
  for (const x of missing) records.push(user(Number(x.slice(1))));
  return records;
}

/** Runs `sequences` random sequences of `loads` loads against stores of one engine. */
async function checkAgainstModel(open: () => Promise<GraphStore>, sequences: number, loads: number, seed: number): Promise<void> {
  const everyone = Array.from({ length: USERS }, (_, i) => rel(i));
  for (let sequence = 0; sequence < sequences; sequence++) {
    const random = generator(seed + sequence * 7_919);
    const model = new Model();
    const store = await open();
    try {
      for (let load = 0; load < loads; load++) {
        const records = randomLoad(random, model, load === 0);
        const context = `seed ${seed + sequence * 7_919}, load ${load}: ${records.map((r) => JSON.stringify(r)).join("\n")}`;
        await ingestRecords(store, structuredClone(records)).catch((error: unknown) => {
          throw new Error(`${(error as { errors?: string[] }).errors?.join("; ") ?? String(error)}\n${context}`);
        });
        model.applyLoad(structuredClone(records));
        expect(await dump(store, everyone), context).toEqual(model.dump(everyone));
        // Every identity names its owner, and only it; addresses are known while anything is recorded of them.
        const owners = await store.resolve(ALL_ADDRESSES.map((value) => ({ kind: "address" as const, value })));
        const ownerNames = await store.relationIds(owners.map((id) => id ?? -1));
        const expectedOwners = ALL_ADDRESSES.map((a) => [...model.users].find(([, u]) => u.addresses.includes(a))?.[0] ?? "");
        expect(ownerNames, context).toEqual(expectedOwners);
        const known = ALL_ADDRESSES.map((a) => expectedOwners[ALL_ADDRESSES.indexOf(a)] !== "" || model.assets.interaction.has(a) || model.assets.nft.has(a));
        const gotKnown = await store.addressesKnown(ALL_ADDRESSES);
        expect(gotKnown, context).toEqual(known);
        const byName = await store.resolve(everyone.map((x) => ({ kind: "social" as const, value: foldSocialUsername(`USER${x.slice(1)}`) })));
        const nameOwners = await store.relationIds(byName.map((id) => id ?? -1));
        expect(nameOwners, context).toEqual(everyone.map((x) => (model.users.get(x)?.username ? x : "")));
        await expectSetReadsAgree(store, everyone, context);
      }
    } finally {
      await store.close();
    }
  }
}

/**
 * The set reads the cache layer serves (sizes, bounded members, asset holders) agree with the sets
 * as read whole: after a change, no stale entry survives.
 */
async function expectSetReadsAgree(store: GraphStore, everyone: readonly string[], context: string): Promise<void> {
  const ids = (await store.resolveRelationIds(everyone)).filter((id): id is number => id !== null);
  const sorted = (sets: readonly (readonly number[] | null)[]) => sets.map((set) => set && [...set].sort((x, y) => x - y));
  for (const kind of ["friends", "following", "followers"] as const) {
    const sets = await Promise.all(ids.map((id) => store.userSet(kind, id)));
    expect(await store.userSetSizes(kind, ids), context).toEqual(sets.map((set) => set.length));
    expect(sorted(await store.userSetsBounded(kind, ids, USERS)), context).toEqual(sorted(sets));
  }
  for (const kind of ["contracts", "nfts"] as const) {
    const assets = await Promise.all(ids.map((id) => store.userAssets(kind, id)));
    const holders = CONTRACTS.map((contract) => ids.filter((_, i) => assets[i]!.includes(contract)));
    expect(await store.assetHolderCounts(kind, CONTRACTS), context).toEqual(holders.map((set) => set.length));
    expect(sorted(await store.assetHoldersBounded(kind, CONTRACTS, USERS)), context).toEqual(sorted(holders));
  }
}

describe("random changes against a model", () => {
  it("memory engine", async () => {
    await checkAgainstModel(async () => createMemoryStore(), 60, 5, 1);
  });
  // Behind the read caches (src/store/cache/), as createStore serves every engine.
  it("memory engine, cached", async () => {
    await checkAgainstModel(async () => createCachedStore(createMemoryStore()), 60, 5, 4);
  });

  describe("redis engine", () => {
    let server: TestRedisServer;
    beforeAll(async () => {
      server = await startRedisServer();
    });
    afterAll(async () => {
      await server?.stop();
    });
    it("standalone", async () => {
      let db = 0;
      // Each sequence starts from an empty database of its own (16 per server).
      await checkAgainstModel(async () => createRedisStore({ url: `${server.url}/${db++ % 16}` }).then(async (store) => {
        await flush(server.url, (db - 1) % 16);
        return store;
      }), 16, 5, 2);
    });
    it("standalone, cached", async () => {
      let db = 0;
      await checkAgainstModel(async () => {
        const store = await createRedisStore({ url: `${server.url}/${db++ % 16}` });
        await flush(server.url, (db - 1) % 16);
        await store.caughtUp();
        return createCachedStore(store);
      }, 8, 5, 5);
    });
  });

  describe("redis-cluster engine", () => {
    let cluster: TestRedisCluster;
    beforeAll(async () => {
      cluster = await startRedisCluster();
    });
    afterAll(async () => {
      await cluster?.stop();
    });
    it("cluster", async () => {
      await checkAgainstModel(async () => {
        await flushCluster(cluster.nodes);
        return createRedisStore({ clusterNodes: cluster.nodes });
      }, 6, 5, 3);
    });
    it("cluster, cached", async () => {
      await checkAgainstModel(async () => {
        await flushCluster(cluster.nodes);
        return createCachedStore(await createRedisStore({ clusterNodes: cluster.nodes }));
      }, 3, 5, 6);
    });
  });
});

async function flush(url: string, db: number): Promise<void> {
  const { createClient } = await import("redis");
  const client = createClient({ url: `${url}/${db}` });
  await client.connect();
  await client.flushDb();
  await client.close();
}

async function flushCluster(nodes: readonly string[]): Promise<void> {
  const { createClient } = await import("redis");
  for (const node of nodes) {
    const client = createClient({ url: `redis://${node}` });
    await client.connect();
    await client.flushAll();
    await client.close();
  }
}
