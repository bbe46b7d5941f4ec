import { createPrng } from "../../src/synthetic/prng.js";

/*
 * Change records for the living-graph measurements (issue 14's "Speed" table), as JSON Lines in the
 * ingestion format. Pure and seeded: the same options give the same lines, so `relgraph ingest` and the
 * feed are measured on the same kind of work, and a test can check what is generated without Redis.
 */

/** Options of changeMix. */
export interface ChangeMixOptions {
  /** The stored generated users are u1 … u`users` (bench/dataset.ts). */
  users: number;
  count: number;
  seed: string;
  /**
   * Users the mix never touches: the bench's wallet users, whose releases the withdrawal measurement
   * narrows and restores, and whose answers would otherwise change under it.
   */
  spare?: ReadonlySet<string>;
  /**
   * Edges of the stored graph, in random order: the deletes remove these, each once, while they
   * last (then edges the mix added). Without them a delete removes an edge the mix added shortly
   * before, which one load cancels with its add, unwritten.
   */
  stored?: { friends: readonly (readonly [string, string])[]; follows: readonly (readonly [string, string])[] };
}

/**
 * Shares of the realistic mix, in percent. Edges dominate a social graph's changes; deletes are a
 * third of edge changes and remove stored edges (ChangeMixOptions.stored), so that they do real work:
 * a delete of an absent edge is a cheap no-op, and one of an edge the same load added is cancelled
 * with it. A few users are created, renamed and erased: new users, so that erasure never removes
 * the users the bench's read queries are sampled from.
 */
export const MIX = {
  friendAdd: 30,
  friendDelete: 15,
  followAdd: 25,
  followDelete: 10,
  userUpsert: 8,
  release: 10,
  userErase: 2,
} as const;

/** The kinds of record changeMix writes, for counting in tests and the report. */
export type ChangeKind = keyof typeof MIX;

/** How far back a delete looks for an edge the mix added. */
const RECENT_EDGES = 4_096;

/**
 * Yields `count` change records about the stored users: friend and follow adds and deletes among
 * random users, user upserts (new users, then updates of them), release narrowings and withdrawals,
 * and a few erasures of users the mix created.
 */
export function* changeMix(options: ChangeMixOptions): Generator<string> {
  for (const { line } of changeMixKinds(options)) yield line;
}

/** changeMix with each record's kind (tests count them). */
export function* changeMixKinds(options: ChangeMixOptions): Generator<{ kind: ChangeKind; line: string }> {
  const random = createPrng(`${options.seed}:changes`);
  const spare = options.spare ?? new Set<string>();
  const pick = (): string => {
    for (;;) {
      const id = `u${1 + random.int(options.users)}`;
      if (!spare.has(id)) return id;
    }
  };
  const pair = (): [string, string] => {
    const a = pick();
    let b = pick();
    while (b === a) b = pick();
    return [a, b];
  };
  const friends: [string, string][] = [];
  const follows: [string, string][] = [];
  const remember = (list: [string, string][], edge: [string, string]) => {
    if (list.length >= RECENT_EDGES) list[random.int(RECENT_EDGES)] = edge;
    else list.push(edge);
  };
  const forget = (list: [string, string][]): [string, string] => (list.length > 0 ? list.splice(random.int(list.length), 1)[0]! : pair());
  // The next stored edge of a kind that names no spare user; null once they are used up.
  const next = { friends: 0, follows: 0 };
  const storedEdge = (kind: "friends" | "follows"): readonly [string, string] | null => {
    const edges = options.stored?.[kind] ?? [];
    while (next[kind] < edges.length) {
      const edge = edges[next[kind]++]!;
      if (!spare.has(edge[0]) && !spare.has(edge[1])) return edge;
    }
    return null;
  };
  const created: string[] = [];
  let nextUser = 0;
  const thresholds = cumulative();

  for (let i = 0; i < options.count; i++) {
    const roll = random.int(100);
    const kind = thresholds.find(([, upTo]) => roll < upTo)![0];
    switch (kind) {
      case "friendAdd": {
        const [a, b] = pair();
        remember(friends, [a, b]);
        yield { kind, line: `{"type":"friend","a":"${a}","b":"${b}","description":"bench change ${i}"}` };
        break;
      }
      case "friendDelete": {
        const [a, b] = storedEdge("friends") ?? forget(friends);
        yield { kind, line: `{"op":"delete","type":"friend","a":"${a}","b":"${b}"}` };
        break;
      }
      case "followAdd": {
        const [from, to] = pair();
        remember(follows, [from, to]);
        yield { kind, line: `{"type":"follow","from":"${from}","to":"${to}"}` };
        break;
      }
      case "followDelete": {
        const [from, to] = storedEdge("follows") ?? forget(follows);
        yield { kind, line: `{"op":"delete","type":"follow","from":"${from}","to":"${to}"}` };
        break;
      }
      case "userUpsert": {
        // Half new users, half renames of one created before (the same address: nothing detached).
        const renamed = created.length > 0 && random.int(2) === 0;
        const k = renamed ? Number(created[random.int(created.length)]!.slice(CHANGE_USER.length)) : nextUser++;
        if (!renamed) created.push(`${CHANGE_USER}${k}`);
        const address = `0x${(0xbe0c0000_0000 + k).toString(16).padStart(40, "0")}`;
        yield { kind, line: `{"type":"user","relationId":"${CHANGE_USER}${k}","name":"Change ${k}.${i}","avatar":"","addresses":["${address}"]}` };
        break;
      }
      case "release": {
        // Narrowed to a few peers, or withdrawn outright (`"peers":[]`) one time in four.
        const peers = random.int(4) === 0 ? [] : Array.from({ length: 1 + random.int(3) }, pick);
        const owner = pick();
        yield { kind, line: `{"type":"release","relationId":"${owner}","peers":${JSON.stringify(peers.filter((p) => p !== owner))}}` };
        break;
      }
      case "userErase": {
        if (created.length === 0) {
          // Nothing of the mix's own to erase yet: erasing an absent user is a no-op, still a record.
          yield { kind, line: `{"op":"delete","type":"user","relationId":"${CHANGE_USER}absent-${i}"}` };
          break;
        }
        const [erased] = created.splice(random.int(created.length), 1);
        yield { kind, line: `{"op":"delete","type":"user","relationId":"${erased}"}` };
        break;
      }
    }
  }
}

/** The relationId prefix of users the mix creates (and may erase). */
export const CHANGE_USER = "bench-change-";

function cumulative(): [ChangeKind, number][] {
  let sum = 0;
  return (Object.entries(MIX) as [ChangeKind, number][]).map(([kind, share]) => [kind, (sum += share)]);
}

/**
 * Edges friendChurn keeps before its deletes begin: a delete removes an edge added at least this many
 * adds before, so never one of its own entry or unit, which the writer would cancel unwritten.
 */
export const CHURN_HOLD = 1_000;

/**
 * Friend adds and deletes only, between random users: the background load of the "while changes
 * flow" measurements (the "adds and deletes, random users"). Once CHURN_HOLD edges are
 * added, adds and deletes alternate, every delete removing an edge added earlier than the newest
 * CHURN_HOLD, so each change writes and the graph neither only grows nor only shrinks.
 */
export function* friendChurn(options: ChangeMixOptions): Generator<string> {
  const random = createPrng(`${options.seed}:churn`);
  const spare = options.spare ?? new Set<string>();
  const pick = (): string => {
    for (;;) {
      const id = `u${1 + random.int(options.users)}`;
      if (!spare.has(id)) return id;
    }
  };
  const added: [string, string][] = [];
  for (let i = 0; i < options.count; i++) {
    // (A delete of the edge just added, as this did before, cancelled it in the same unit: the
    // measurements under changes then wrote nothing.)
    if (i % 2 === 1 && added.length > CHURN_HOLD) {
      const [a, b] = added.splice(random.int(added.length - CHURN_HOLD), 1)[0]!;
      yield `{"op":"delete","type":"friend","a":"${a}","b":"${b}"}`;
      continue;
    }
    const a = pick();
    let b = pick();
    while (b === a) b = pick();
    added.push([a, b]);
    yield `{"type":"friend","a":"${a}","b":"${b}"}`;
  }
}
