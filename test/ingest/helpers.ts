import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { GraphStore } from "../../src/store/store.js";

/** A temporary directory for JSONL files; remove() deletes it. */
export interface FileBox {
  dir: string;
  /** Writes a file of the given lines (objects are JSON-encoded, strings written as they are); returns its path. */
  write(name: string, lines: (string | object)[]): Promise<string>;
  /** An error report with the directory prefix removed, so that lines read "a.jsonl:3: reason". */
  relative(lines: readonly string[]): string[];
  remove(): Promise<void>;
}

export async function createFileBox(): Promise<FileBox> {
  const dir = await mkdtemp(join(tmpdir(), "relgraph-ingest-"));
  return {
    dir,
    async write(name, lines) {
      const path = join(dir, name);
      await writeFile(path, lines.map((line) => (typeof line === "string" ? line : JSON.stringify(line))).join("\n") + "\n");
      return path;
    },
    relative: (lines) => lines.map((line) => line.split(`${dir}/`).join("")),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Lowercase test address: 0x + tag left-padded with zeros to 40 hex digits. */
export function addr(tag: string): string {
  return `0x${tag.padStart(40, "0")}`;
}

/** A user record of the ingestion format, with defaults. */
export function userLine(relationId: string, addresses: string[], extra: object = {}): object {
  return { type: "user", relationId, name: `name of ${relationId}`, avatar: `https://a.example/${relationId}.png`, addresses, ...extra };
}

/** Everything the store holds about the given users, by relationId, for comparing states. */
export async function dump(store: GraphStore, relationIds: readonly string[]): Promise<Record<string, unknown>> {
  const ids = await store.resolveRelationIds(relationIds);
  const state: Record<string, unknown> = {};
  for (const [k, id] of ids.entries()) {
    const relationId = relationIds[k]!;
    if (id === null) {
      state[relationId] = null;
      continue;
    }
    const names = async (members: number[]) => (await store.relationIds(members)).sort();
    const [record] = await store.users([id]);
    const release = await store.release(id);
    const friends = await store.userSet("friends", id);
    state[relationId] = {
      user: { ...record, id: undefined },
      friends: await names(friends),
      descriptions: await descriptions(store, id, friends),
      following: await names(await store.userSet("following", id)),
      followers: await names(await store.userSet("followers", id)),
      contracts: (await store.userAssets("contracts", id)).sort(),
      nfts: (await store.userAssets("nfts", id)).sort(),
      release: release === "*" ? "*" : await names(release),
    };
  }
  return state;
}

async function descriptions(store: GraphStore, id: number, friends: number[]): Promise<Record<string, string>> {
  const [names, texts] = await Promise.all([store.relationIds(friends), store.friendDescriptions(id, friends)]);
  return Object.fromEntries(names.map((name, i) => [name, texts[i]!]).sort());
}
