import type { AssetKind, Identity, IdentityKind, Release, UserId, UserRecord, UserSetKind } from "../../domain/model.js";
import type { ApiKeyRecord, GraphStore, IngestBatch, UserInput, WriteProgress } from "../store.js";
import { identitiesOf, recordCount, referencedRelationIds, staleIdentities, UnknownRelationIdError } from "../batch.js";

/**
 * The embedded engine: the whole graph in Maps of Sets, for zero-setup serving, the demo dataset
 * and tests. Its semantics mirror the redis engine exactly (the acceptance suite runs on both):
 * ids are allocated in order of first appearance in a batch, the last write of an identity wins,
 * an address moved to another user leaves its former owner, and user asset sets always equal the
 * union of their addresses' sets.
 */
export function createMemoryStore(): GraphStore {
  let lastId = 0;
  const idByRelationId = new Map<string, UserId>();
  const userById = new Map<UserId, UserRecord>();
  const identityIndex: Record<IdentityKind, Map<string, UserId>> = {
    address: new Map(),
    social: new Map(),
    game: new Map(),
  };
  const userSets: Record<UserSetKind, Map<UserId, Set<UserId>>> = {
    friends: new Map(),
    following: new Map(),
    followers: new Map(),
  };
  const friendDescription = new Map<UserId, Map<UserId, string>>();
  const addressAssets: Record<AssetKind, Map<string, Set<string>>> = { contracts: new Map(), nfts: new Map() };
  const userAssetSets: Record<AssetKind, Map<UserId, Set<string>>> = { contracts: new Map(), nfts: new Map() };
  const assetHolders: Record<AssetKind, Map<string, Set<UserId>>> = { contracts: new Map(), nfts: new Map() };
  const releases = new Map<UserId, { all: boolean; peers: Set<UserId> }>();
  const pagingState = new Map<string, { value: string; expiresAt: number }>();
  const apiKeyById = new Map<string, ApiKeyRecord>();
  const apiKeyIdByHash = new Map<string, string>();

  const idOf = (relationId: string): UserId => {
    const id = idByRelationId.get(relationId);
    if (id === undefined) throw new UnknownRelationIdError(relationId);
    return id;
  };

  function linkAsset(kind: AssetKind, owner: UserId, asset: string): void {
    addTo(userAssetSets[kind], owner, asset);
    addTo(assetHolders[kind], asset, owner);
  }

  /** Rebuilds a user's asset sets from its current addresses, after it lost some. */
  function recomputeAssets(id: UserId): void {
    const addresses = userById.get(id)?.addresses ?? [];
    for (const kind of ["contracts", "nfts"] as const) {
      const wanted = new Set<string>();
      for (const address of addresses) for (const asset of addressAssets[kind].get(address) ?? []) wanted.add(asset);
      const current = userAssetSets[kind].get(id);
      for (const asset of current ?? []) {
        if (wanted.has(asset)) continue;
        current?.delete(asset);
        removeFrom(assetHolders[kind], asset, id);
      }
    }
  }

  function writeUsers(users: UserInput[]): void {
    // Re-ingesting a relationId within one batch: the last record wins, as in the redis engine.
    const latest = new Map(users.map((user) => [user.relationId, user]));
    for (const relationId of latest.keys()) {
      if (!idByRelationId.has(relationId)) idByRelationId.set(relationId, ++lastId);
    }
    const lostAddresses = new Set<UserId>();
    // Stale identity entries go first, judged against the state before the batch, so that a value
    // handed from one batch user to another ends up with its new owner.
    for (const user of latest.values()) {
      const id = idOf(user.relationId);
      const old = userById.get(id);
      if (!old) continue;
      for (const [kind, value] of staleIdentities(old, user)) {
        if (identityIndex[kind].get(value) === id) identityIndex[kind].delete(value);
        if (kind === "address") lostAddresses.add(id);
      }
    }
    for (const user of latest.values()) {
      const id = idOf(user.relationId);
      userById.set(id, { id, ...user, addresses: [...user.addresses] });
      for (const [kind, value] of identitiesOf(user)) {
        const previous = identityIndex[kind].get(value);
        if (kind === "address" && previous !== undefined && previous !== id) {
          const former = userById.get(previous);
          if (former) userById.set(previous, { ...former, addresses: former.addresses.filter((a) => a !== value) });
          lostAddresses.add(previous);
        }
        identityIndex[kind].set(value, id);
      }
      // Assets recorded against the user's addresses before the user itself (or in an earlier load).
      for (const kind of ["contracts", "nfts"] as const) {
        for (const address of user.addresses) {
          for (const asset of addressAssets[kind].get(address) ?? []) linkAsset(kind, id, asset);
        }
      }
    }
    for (const id of lostAddresses) recomputeAssets(id);
  }

  function writeAssets(kind: AssetKind, records: { address: string; contract: string }[]): void {
    for (const { address, contract } of records) {
      addTo(addressAssets[kind], address, contract);
      const owner = identityIndex.address.get(address);
      if (owner !== undefined) linkAsset(kind, owner, contract);
    }
  }

  function writeRelations(batch: IngestBatch): void {
    for (const { a, b, description } of batch.friends) {
      const [ia, ib] = [idOf(a), idOf(b)];
      addTo(userSets.friends, ia, ib);
      addTo(userSets.friends, ib, ia);
      // "" is what reads return when nothing is recorded, so it never replaces a description.
      if (description !== "") {
        setIn(friendDescription, ia, ib, description);
        setIn(friendDescription, ib, ia, description);
      }
    }
    for (const { from, to } of batch.follows) {
      const [ifrom, ito] = [idOf(from), idOf(to)];
      addTo(userSets.following, ifrom, ito);
      addTo(userSets.followers, ito, ifrom);
    }
    for (const { relationId, peers } of batch.releases) {
      const id = idOf(relationId);
      const release = releases.get(id) ?? { all: false, peers: new Set<UserId>() };
      releases.set(id, release);
      if (peers === "*") release.all = true;
      else for (const peer of peers) release.peers.add(idOf(peer));
    }
  }

  return {
    engine: "memory",
    async ping() {},
    async close() {},

    async resolve(identities: readonly Identity[]) {
      return identities.map(({ kind, value }) => identityIndex[kind].get(value) ?? null);
    },
    async resolveRelationIds(relationIds: readonly string[]) {
      return relationIds.map((relationId) => idByRelationId.get(relationId) ?? null);
    },
    async users(ids: readonly UserId[]) {
      return ids.map((id) => copyUser(userById.get(id)));
    },
    async relationIds(ids: readonly UserId[]) {
      return ids.map((id) => userById.get(id)?.relationId ?? "");
    },

    async userSet(kind: UserSetKind, id: UserId) {
      return [...(userSets[kind].get(id) ?? [])];
    },
    async userSetSizes(kind: UserSetKind, ids: readonly UserId[]) {
      return ids.map((id) => userSets[kind].get(id)?.size ?? 0);
    },
    async userSetsBounded(kind: UserSetKind, ids: readonly UserId[], maxSize: number) {
      return ids.map((id) => {
        const set = userSets[kind].get(id);
        if (!set) return [];
        return set.size > maxSize ? null : [...set];
      });
    },
    async userSetIntersection(kind: UserSetKind, ids: readonly UserId[]) {
      return intersect(ids.map((id) => userSets[kind].get(id)));
    },

    async userAssets(kind: AssetKind, id: UserId) {
      return [...(userAssetSets[kind].get(id) ?? [])];
    },
    async assetHolderCounts(kind: AssetKind, assets: readonly string[]) {
      return assets.map((asset) => assetHolders[kind].get(asset)?.size ?? 0);
    },
    async assetHoldersBounded(kind: AssetKind, assets: readonly string[], maxSize: number) {
      return assets.map((asset) => {
        const holders = assetHolders[kind].get(asset);
        if (!holders) return [];
        return holders.size > maxSize ? null : [...holders];
      });
    },
    async contractIntersection(addresses: readonly string[]) {
      return intersect(addresses.map((address) => addressAssets.contracts.get(address)));
    },
    async addressesKnown(addresses: readonly string[]) {
      return addresses.map(
        (address) =>
          identityIndex.address.has(address) || addressAssets.contracts.has(address) || addressAssets.nfts.has(address),
      );
    },

    async release(id: UserId): Promise<Release> {
      const release = releases.get(id);
      if (!release) return [];
      return release.all ? "*" : [...release.peers];
    },
    async friendDescriptions(id: UserId, peers: readonly UserId[]) {
      const descriptions = friendDescription.get(id);
      return peers.map((peer) => descriptions?.get(peer) ?? "");
    },

    async write(batch: IngestBatch, onProgress?: (progress: WriteProgress) => void) {
      const total = recordCount(batch);
      // Checked before any change, so that a bad batch leaves the store untouched (as in redis).
      const inBatch = new Set(batch.users.map((user) => user.relationId));
      for (const relationId of referencedRelationIds(batch)) {
        if (!inBatch.has(relationId) && !idByRelationId.has(relationId)) throw new UnknownRelationIdError(relationId);
      }
      writeUsers(batch.users);
      writeAssets("contracts", batch.interactions);
      writeAssets("nfts", batch.nfts);
      writeRelations(batch);
      onProgress?.({ written: total, total });
    },

    async putApiKey(record: ApiKeyRecord) {
      const previous = apiKeyById.get(record.id);
      if (previous) apiKeyIdByHash.delete(previous.hash);
      apiKeyById.set(record.id, { ...record });
      apiKeyIdByHash.set(record.hash, record.id);
    },
    async apiKeyByHash(hash: string) {
      const id = apiKeyIdByHash.get(hash);
      const record = id === undefined ? undefined : apiKeyById.get(id);
      return record ? { ...record } : null;
    },
    async listApiKeys() {
      return [...apiKeyById.values()].map((record) => ({ ...record }));
    },
    async revokeApiKey(id: string, at: string) {
      const record = apiKeyById.get(id);
      if (!record) return false;
      // Revoking twice keeps the first revocation time, as the redis engine does.
      record.revokedAt ??= at;
      return true;
    },

    async putPagingState(key: string, value: string, ttlSeconds: number) {
      pagingState.set(key, { value, expiresAt: Date.now() + ttlSeconds * 1000 });
    },
    async getPagingState(key: string) {
      const entry = pagingState.get(key);
      if (!entry) return null;
      if (entry.expiresAt <= Date.now()) {
        pagingState.delete(key);
        return null;
      }
      return entry.value;
    },
  };
}

function copyUser(user: UserRecord | undefined): UserRecord | null {
  if (!user) return null;
  return {
    ...user,
    addresses: [...user.addresses],
    social: user.social && { ...user.social },
    game: user.game && { ...user.game },
  };
}

/** Members common to every set, scanning the smallest; a missing set makes the result empty. */
function intersect<T>(sets: (Set<T> | undefined)[]): T[] {
  if (sets.length === 0) return [];
  const present = sets.filter((set): set is Set<T> => set !== undefined);
  if (present.length < sets.length) return [];
  present.sort((x, y) => x.size - y.size);
  const [smallest, ...others] = present;
  return [...(smallest ?? [])].filter((member) => others.every((set) => set.has(member)));
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}

function removeFrom<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}

function setIn<K, L, V>(map: Map<K, Map<L, V>>, key: K, inner: L, value: V): void {
  let entries = map.get(key);
  if (!entries) map.set(key, (entries = new Map()));
  entries.set(inner, value);
}
