import { randomBytes } from "node:crypto";
import type { AssetKind, Identity, IdentityKind, Release, UserId, UserRecord, UserSetKind } from "../../domain/model.js";
import { PagingStateFullError, type ApiKeyRecord, type ChangedPart, type ChangeNotifier, type GraphStore, type IngestBatch, type PagingStateClaim, type PagingStateRenewal, type UserInput, type WriteOptions } from "../store.js";
import { identitiesOf, recordCount, referencedRelationIds, staleIdentities, UnknownRelationIdError } from "../batch.js";

/**
 * The embedded engine: the whole graph in Maps of Sets, for zero-setup serving, the demo dataset
 * and tests. Its semantics mirror the redis engine exactly (the acceptance suite runs on both):
 * ids are allocated in order of first appearance in a batch, the last write of an identity wins,
 * an address moved to another user leaves its former owner, and user asset sets always equal the
 * union of their addresses' sets. A write runs in one turn of the event loop, so no reader ever
 * sees part of one.
 */
export function createMemoryStore(): GraphStore & ChangeNotifier {
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
  /** Paging state keys by the user whose erasure drops them. */
  const pagingStateOf = new Map<UserId, Set<string>>();
  /** Paging state keys each holder has counted toward its share (PagingStateClaim.holder), with when each count ends. */
  const pagingStateHeld = new Map<string, Map<string, number>>();
  const listeners = new Set<(parts: readonly ChangedPart[]) => void>();
  let writerTurn: Promise<void> = Promise.resolve();
  /** State writers keep beside the graph (WriteOptions.keep): space → field → value. */
  const kept = new Map<string, Map<string, string>>();
  /** Parts the write in progress changed, told to listeners once it is complete. */
  let changed: ChangedPart[] = [];
  const changedUser = (id: UserId) => changed.push({ part: "user", id });
  const changedSet = (kind: UserSetKind, id: UserId) => changed.push({ part: "userSet", kind, id });
  const changedHolders = (kind: AssetKind, asset: string) => changed.push({ part: "assetHolders", kind, asset });
  const apiKeyById = new Map<string, ApiKeyRecord>();
  const apiKeyIdByHash = new Map<string, string>();

  const idOf = (relationId: string): UserId => {
    const id = idByRelationId.get(relationId);
    if (id === undefined) throw new UnknownRelationIdError(relationId);
    return id;
  };

  function linkAsset(kind: AssetKind, owner: UserId, asset: string): void {
    addTo(userAssetSets[kind], owner, asset);
    if (addTo(assetHolders[kind], asset, owner)) changedHolders(kind, asset);
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
        if (removeFrom(assetHolders[kind], asset, id)) changedHolders(kind, asset);
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
      changedUser(id);
      for (const [kind, value] of identitiesOf(user)) {
        const previous = identityIndex[kind].get(value);
        if (kind === "address" && previous !== undefined && previous !== id) {
          const former = userById.get(previous);
          if (former) userById.set(previous, { ...former, addresses: former.addresses.filter((a) => a !== value) });
          changedUser(previous);
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

  function deleteAssets(kind: AssetKind, records: { address: string; contract: string }[]): void {
    const owners = new Set<UserId>();
    for (const { address, contract } of records) {
      if (!removeFrom(addressAssets[kind], address, contract)) continue;
      const owner = identityIndex.address.get(address);
      if (owner !== undefined) owners.add(owner);
    }
    for (const owner of owners) recomputeAssets(owner);
  }

  function link(kind: UserSetKind, id: UserId, member: UserId): void {
    if (addTo(userSets[kind], id, member)) changedSet(kind, id);
  }

  function unlink(kind: UserSetKind, id: UserId, member: UserId): void {
    if (removeFrom(userSets[kind], id, member)) changedSet(kind, id);
  }

  function writeRelations(batch: IngestBatch): void {
    for (const { a, b, description } of batch.friends) {
      const [ia, ib] = [idOf(a), idOf(b)];
      link("friends", ia, ib);
      link("friends", ib, ia);
      // An upsert replaces the relation, description included; "" is no description.
      for (const [x, y] of [[ia, ib], [ib, ia]] as const) {
        if (description === "") friendDescription.get(x)?.delete(y);
        else setIn(friendDescription, x, y, description);
      }
    }
    for (const { from, to } of batch.follows) {
      const [ifrom, ito] = [idOf(from), idOf(to)];
      link("following", ifrom, ito);
      link("followers", ito, ifrom);
    }
    for (const { relationId, peers } of batch.releases) {
      const id = idOf(relationId);
      if (peers === "*") releases.set(id, { all: true, peers: new Set() });
      else if (peers.length === 0) releases.delete(id);
      else releases.set(id, { all: false, peers: new Set(peers.map(idOf)) });
    }
  }

  function deleteRelations(deletes: NonNullable<IngestBatch["deletes"]>): void {
    const known = (relationId: string) => idByRelationId.get(relationId);
    for (const { a, b } of deletes.friends) {
      const [ia, ib] = [known(a), known(b)];
      if (ia === undefined || ib === undefined) continue;
      unlink("friends", ia, ib);
      unlink("friends", ib, ia);
      friendDescription.get(ia)?.delete(ib);
      friendDescription.get(ib)?.delete(ia);
    }
    for (const { from, to } of deletes.follows) {
      const [ifrom, ito] = [known(from), known(to)];
      if (ifrom === undefined || ito === undefined) continue;
      unlink("following", ifrom, ito);
      unlink("followers", ito, ifrom);
    }
    deleteAssets("contracts", deletes.interactions);
    deleteAssets("nfts", deletes.nfts);
  }

  /** Erases a user: every trace of them (IngestBatch.erasures lists what). */
  function erase(relationId: string): void {
    const id = idByRelationId.get(relationId);
    if (id === undefined) return;
    const user = userById.get(id);
    idByRelationId.delete(relationId);
    userById.delete(id);
    changedUser(id);
    for (const [kind, value] of user ? identitiesOf(user) : []) {
      if (identityIndex[kind].get(value) === id) identityIndex[kind].delete(value);
    }
    for (const kind of ["contracts", "nfts"] as const) {
      for (const address of user?.addresses ?? []) addressAssets[kind].delete(address);
      for (const asset of userAssetSets[kind].get(id) ?? []) {
        if (removeFrom(assetHolders[kind], asset, id)) changedHolders(kind, asset);
      }
      userAssetSets[kind].delete(id);
    }
    const reverse: Record<UserSetKind, UserSetKind> = { friends: "friends", following: "followers", followers: "following" };
    for (const kind of ["friends", "following", "followers"] as const) {
      for (const other of userSets[kind].get(id) ?? []) unlink(reverse[kind], other, id);
      if (userSets[kind].delete(id)) changedSet(kind, id);
    }
    for (const other of friendDescription.get(id)?.keys() ?? []) friendDescription.get(other)?.delete(id);
    friendDescription.delete(id);
    releases.delete(id);
    for (const release of releases.values()) release.peers.delete(id);
    for (const key of pagingStateOf.get(id) ?? []) pagingState.delete(key);
    pagingStateOf.delete(id);
  }

  /** The store's secrets by name (sharedSecret): as long-lived as the embedded store, which is the process. */
  const sharedSecrets = new Map<string, Uint8Array>();

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

    onChange(listener: (parts: readonly ChangedPart[]) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    // Nothing else writes to it, and each write reports before it returns.
    watching: true,
    async caughtUp() {},

    exclusive<T>(work: () => Promise<T>): Promise<T> {
      // Writers of one process take turns, as the redis engine's lease makes writers of many do.
      const turn = writerTurn.then(work);
      writerTurn = turn.then(
        () => {},
        () => {},
      );
      return turn;
    },

    async write(batch: IngestBatch, options: WriteOptions = {}) {
      const total = recordCount(batch);
      // Checked before any change, so that a bad batch leaves the store untouched (as in redis).
      const inBatch = new Set(batch.users.map((user) => user.relationId));
      const erased = new Set(batch.erasures ?? []);
      for (const relationId of referencedRelationIds(batch)) {
        const stored = idByRelationId.has(relationId) && !erased.has(relationId);
        if (!inBatch.has(relationId) && !stored) throw new UnknownRelationIdError(relationId);
      }
      // No await from here on: the batch applies in one turn of the event loop.
      for (const relationId of erased) erase(relationId);
      writeUsers(batch.users);
      if (batch.deletes) deleteRelations(batch.deletes);
      writeAssets("contracts", batch.interactions);
      writeAssets("nfts", batch.nfts);
      writeRelations(batch);
      for (const { space, field, value } of options.keep ?? []) {
        let fields = kept.get(space);
        if (!fields) kept.set(space, (fields = new Map()));
        if (value === null) fields.delete(field);
        else fields.set(field, value);
      }
      // A bulk load drops every cache at once rather than entry by entry.
      const parts: readonly ChangedPart[] = changed.length > MAX_REPORTED_PARTS ? [{ part: "everything" }] : changed;
      changed = [];
      for (const listener of listeners) listener(parts);
      options.onProgress?.({ written: total, total });
    },

    async keptState(space: string, fields: readonly string[]) {
      const stored = kept.get(space);
      return fields.map((field) => stored?.get(field) ?? null);
    },
    async keptSpace(space: string) {
      return new Map(kept.get(space) ?? []);
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

    async putPagingState(key: string, value: string, ttlSeconds: number, { owner, holder, limits }: PagingStateClaim = {}) {
      const now = Date.now();
      const expiresAt = now + ttlSeconds * 1000;
      /** Whether the state is live; an expired one is dropped on the way. */
      const live = (state: string) => {
        const entry = pagingState.get(state);
        if (entry && entry.expiresAt <= now) pagingState.delete(state);
        return entry !== undefined && entry.expiresAt > now;
      };
      const retryAfter = (expiries: Iterable<number>) => {
        let soonest = Number.POSITIVE_INFINITY;
        for (const until of expiries) soonest = Math.min(soonest, until);
        return Math.max(1, Math.ceil((soonest - now) / 1000));
      };
      const expiriesOf = function* (states: Iterable<string>) {
        for (const state of states) {
          const entry = pagingState.get(state);
          if (entry) yield entry.expiresAt;
        }
      };
      let keys = owner === undefined ? undefined : pagingStateOf.get(owner);
      // Forgotten keys of expired states are dropped here, so the index stays as small as the states.
      if (keys) for (const old of keys) if (!live(old)) keys.delete(old);
      let held = holder === undefined || !limits ? undefined : pagingStateHeld.get(holder);
      if (limits) {
        // Every check comes before anything is stored: a refusal leaves the store as it was.
        if (!live(key)) {
          if (keys && keys.size >= limits.perOwner) throw new PagingStateFullError("perOwner", retryAfter(expiriesOf(keys)));
          if (pagingState.size >= limits.total) {
            for (const state of [...pagingState.keys()]) live(state);
            if (pagingState.size >= limits.total) throw new PagingStateFullError("total", retryAfter(expiriesOf(pagingState.keys())));
          }
        }
        // A live state stored for another holder still counts toward this one's share once this one holds it.
        if (held && !held.has(key) && held.size >= limits.perHolder) {
          // A holder's count of a state ends with its own time, or with the state (erased with its owner).
          for (const [state, until] of held) if (until <= now || !live(state)) held.delete(state);
          if (held.size >= limits.perHolder) throw new PagingStateFullError("perHolder", retryAfter(held.values()));
        }
      }
      pagingState.set(key, { value, expiresAt });
      if (owner !== undefined) {
        if (!keys) pagingStateOf.set(owner, (keys = new Set()));
        keys.add(key);
      }
      if (holder !== undefined && limits) {
        if (!held) pagingStateHeld.set(holder, (held = new Map()));
        held.set(key, expiresAt);
      }
    },
    async getPagingState(key: string, renew?: PagingStateRenewal) {
      const entry = pagingState.get(key);
      if (!entry) return null;
      const now = Date.now();
      if (entry.expiresAt <= now) {
        pagingState.delete(key);
        return null;
      }
      if (renew) {
        entry.expiresAt = now + renew.ttlSeconds * 1000;
        const held = renew.holder === undefined ? undefined : pagingStateHeld.get(renew.holder);
        if (held?.has(key)) held.set(key, entry.expiresAt);
      }
      return entry.value;
    },

    async sharedSecret(name: string) {
      let secret = sharedSecrets.get(name);
      if (!secret) sharedSecrets.set(name, (secret = randomBytes(32)));
      return secret;
    },
  };
}

/** Parts one write reports one by one. */
const MAX_REPORTED_PARTS = 100_000;

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

/** Adds value to the set at key; true when it was not there. */
function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): boolean {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  if (set.has(value)) return false;
  set.add(value);
  return true;
}

/** Removes value from the set at key, dropping an emptied set; true when it was there. */
function removeFrom<K, V>(map: Map<K, Set<V>>, key: K, value: V): boolean {
  const set = map.get(key);
  if (!set?.delete(value)) return false;
  if (set.size === 0) map.delete(key);
  return true;
}

function setIn<K, L, V>(map: Map<K, Map<L, V>>, key: K, inner: L, value: V): void {
  let entries = map.get(key);
  if (!entries) map.set(key, (entries = new Map()));
  entries.set(inner, value);
}
