import { createHash } from "node:crypto";
import { Wallet } from "ethers";
import { describe, expect, it } from "vitest";
import { demoWallet, DEMO_WALLETS } from "../../src/synthetic/demo-wallet.js";
import { DEMO_DATASET, loadDemoDataset } from "../../src/synthetic/demo.js";
import type { IngestRecord, UserLine } from "../../src/ingest/format.js";
import { generateJsonLines, generateRecords, type GenerateOptions } from "../../src/synthetic/generate.js";
import { ingestRecords } from "../../src/ingest/ingest.js";
import { createMemoryStore } from "../../src/store/memory/memory-store.js";
import { dump } from "../ingest/helpers.js";

function digest(options: GenerateOptions): string {
  const hash = createHash("sha256");
  for (const line of generateJsonLines(options)) hash.update(line);
  return hash.digest("hex");
}

/** Friend lists by user index (u1 is 0), from the generated friend records. */
function friendLists(records: Iterable<IngestRecord>, users: number): Set<number>[] {
  const lists = Array.from({ length: users }, () => new Set<number>());
  for (const record of records) {
    if (record.type !== "friend") continue;
    const a = Number(record.a.slice(1)) - 1;
    const b = Number(record.b.slice(1)) - 1;
    lists[a]!.add(b);
    lists[b]!.add(a);
  }
  return lists;
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)]!;
}

describe("generator", () => {
  it("gives the same output for the same seed and a different one for another seed", () => {
    const options = { users: 500, seed: 7, meanDegree: 10 };
    expect(digest(options)).toBe(digest({ ...options }));
    expect(digest({ ...options, seed: "7" })).toBe(digest(options));
    expect(digest({ ...options, seed: 8 })).not.toBe(digest(options));
  });

  it("produces records that pass validation, down to a single user", async () => {
    for (const users of [1, 2, 11, 300]) {
      const store = createMemoryStore();
      const result = await ingestRecords(store, generateRecords({ users, seed: "tiny", meanDegree: Math.min(5, users - 1) }));
      expect(result.users).toBe(users);
      await store.close();
    }
  });

  it("rejects unusable options at once", () => {
    expect(() => generateRecords({ users: 0, seed: 1 })).toThrow(RangeError);
    expect(() => generateRecords({ users: 10, seed: 1, meanDegree: 10 })).toThrow(RangeError);
    expect(() => generateRecords({ users: 10, seed: 1, meanDegree: 2, triadicClosure: 1.5 })).toThrow(RangeError);
  });

  it("has hubs, many mutual friends, and a contract most users share", () => {
    const users = 20_000;
    const records = [...generateRecords({ users, seed: "structure", meanDegree: 30 })];
    const lists = friendLists(records, users);
    const degrees = lists.map((list) => list.size);
    const mean = degrees.reduce((sum, d) => sum + d, 0) / users;
    expect(mean).toBeGreaterThan(25);
    expect(Math.max(...degrees)).toBeGreaterThan(30 * median(degrees));

    // Triadic closure: most sampled edges have at least one mutual friend.
    let closed = 0;
    let sampled = 0;
    for (let u = 0; u < users && sampled < 2000; u += 7) {
      for (const v of lists[u]!) {
        if (v < u) continue;
        sampled++;
        const [small, large] = lists[u]!.size < lists[v]!.size ? [lists[u]!, lists[v]!] : [lists[v]!, lists[u]!];
        if ([...small].some((w) => large.has(w))) closed++;
        break;
      }
    }
    expect(closed / sampled).toBeGreaterThan(0.5);

    // Zipf popularity: the top contract is touched by more than half of the users.
    const addressOwner = new Map<string, string>();
    for (const record of records) {
      if (record.type === "user") for (const address of record.addresses) addressOwner.set(address, record.relationId);
    }
    const usersByContract = new Map<string, Set<string>>();
    for (const record of records) {
      if (record.type !== "interaction") continue;
      const owner = addressOwner.get(record.address);
      if (owner === undefined) continue;
      if (!usersByContract.has(record.contract)) usersByContract.set(record.contract, new Set());
      usersByContract.get(record.contract)!.add(owner);
    }
    const shares = [...usersByContract.values()].map((set) => set.size / users).sort((x, y) => y - x);
    expect(shares[0]).toBeGreaterThan(0.5);
    expect(shares[Math.floor(shares.length / 2)]).toBeLessThan(0.01);

    // Follows follow friendship: most follows are of friends.
    const follows = records.filter((record) => record.type === "follow");
    const ofFriends = follows.filter((f) => lists[Number(f.from.slice(1)) - 1]!.has(Number(f.to.slice(1)) - 1));
    expect(ofFriends.length / follows.length).toBeGreaterThan(0.7);

    // Releases: mostly "*", some lists, some users without any.
    const releases = records.filter((record) => record.type === "release");
    const all = releases.filter((release) => release.peers === "*").length;
    expect(all / users).toBeGreaterThan(0.7);
    expect(releases.length - all).toBeGreaterThan(0);
    expect(releases.length).toBeLessThan(users);
  });

  it("gives hubs of at least 5,000 friends at 100,000 users and mean degree 50 (the bench size)", () => {
    const degrees = new Uint32Array(100_000);
    for (const record of generateRecords({ users: 100_000, seed: "bench", meanDegree: 50 })) {
      if (record.type !== "friend") continue;
      degrees[Number(record.a.slice(1)) - 1]!++;
      degrees[Number(record.b.slice(1)) - 1]!++;
    }
    expect(Math.max(...degrees)).toBeGreaterThanOrEqual(5000);
  });
});

describe("demo wallets and the demo dataset", () => {
  it("derives each demo wallet's address from its documented private key", () => {
    for (let i = 1; i <= DEMO_WALLETS; i++) {
      const { privateKey, address } = demoWallet(i);
      expect(privateKey).toBe(`0x${createHash("sha256").update(`relgraph-demo-wallet-${i}`).digest("hex")}`);
      expect(new Wallet(privateKey).address).toBe(address);
    }
    expect(() => demoWallet(0)).toThrow(RangeError);
    expect(() => demoWallet(11)).toThrow(RangeError);
  });

  it("gives u1 … u10 the demo wallets' addresses, and u1 the documented identities", () => {
    const users = [...generateRecords({ users: 50, seed: "any", meanDegree: 4 })].filter((r): r is UserLine => r.type === "user");
    for (let i = 1; i <= DEMO_WALLETS; i++) expect(users[i - 1]!.addresses[0]).toBe(demoWallet(i).address);
    expect(users[0]).toMatchObject({ relationId: "u1", name: "Alice", social: { username: "alice" }, game: { gameId: "76561198000000001" } });
  });

  it("loads the demo dataset, in which u1 has an answer for every operation", async () => {
    const store = createMemoryStore();
    const result = await loadDemoDataset(store);
    expect(result.users).toBe(DEMO_DATASET.users);
    const [byAddress, bySocial, byGame] = await store.resolve([
      { kind: "address", value: demoWallet(1).address.toLowerCase() },
      { kind: "social", value: "alice" },
      { kind: "game", value: "76561198000000001" },
    ]);
    expect(new Set([byAddress, bySocial, byGame]).size).toBe(1);
    const { u1, u2 } = (await dump(store, ["u1", "u2"])) as Record<string, Record<string, string[]>>;
    expect(u1!.friends!.length).toBeGreaterThan(20);
    expect(u1!.friends).toEqual(expect.arrayContaining(["u2", "u3", "u4"]));
    expect(u1!.release).toBe("*");
    expect(u2!.release).toEqual(["u1", "u3"]);
    expect(u1!.following).toEqual(expect.arrayContaining(["u2", "u5"]));
    expect(u1!.followers).toEqual(expect.arrayContaining(["u6", "u7"]));
    expect(u1!.contracts!.length).toBeGreaterThanOrEqual(2);
    expect(u1!.nfts!.length).toBeGreaterThanOrEqual(1);
    const [id1, id2] = await store.resolveRelationIds(["u1", "u2"]);
    expect(await store.relationIds(await store.userSetIntersection("friends", [id1!, id2!]))).toEqual(expect.arrayContaining(["u3", "u4"]));
    const [address2] = (await store.users([id2!]))[0]!.addresses;
    expect((await store.contractIntersection([demoWallet(1).address.toLowerCase(), address2!])).length).toBeGreaterThanOrEqual(2);
    await store.close();
  });
});
