import type { UserId } from "../../domain/model.js";

/**
 * SCARD and SMEMBERS of sets whose members are UserIds (friend, follow and asset-holder sets): the
 * reads a recommendation makes by the hundred. Callers bound the sets they read by SCARD first, so a
 * single SMEMBERS reply is never unbounded; a writer reads first SSCAN pages, bounded by their COUNT.
 */
export interface IdSetReads {
  /** SCARD of each key, in one round trip. */
  sizes(keys: readonly string[]): Promise<number[]>;
  /** SMEMBERS of each key as UserIds, in one round trip ([] for a missing key). */
  members(keys: readonly string[]): Promise<UserId[][]>;
  /**
   * The first SSCAN page of each key, COUNT `count`, in one round trip: a set that Redis keeps
   * compact (a few hundred members) comes whole, with cursor "0"; a larger one comes in part, about
   * `count` members, with the cursor to go on from.
   */
  firstPages(keys: readonly string[], count: number): Promise<IdPage[]>;
  /** SISMEMBER of each key and the UserId at the same position, in one round trip. */
  contains(keys: readonly string[], members: readonly UserId[]): Promise<boolean[]>;
  close(): Promise<void>;
}

/** An SSCAN page of a set of UserIds: the cursor to go on from ("0" at the end), and the members. */
export interface IdPage {
  cursor: string;
  ids: UserId[];
}

/** A command sender, as node-redis's client or cluster offers it. */
export type SendCommand = <T>(key: string, args: string[]) => Promise<T>;

/** IdSetReads through node-redis: for a cluster (which routes by slot) and for TLS URLs. */
export function commandIdSetReads(send: SendCommand): IdSetReads {
  return {
    sizes: (keys) => Promise.all(keys.map((key) => send<number>(key, ["SCARD", key]))),
    members: (keys) => Promise.all(keys.map(async (key) => (await send<string[]>(key, ["SMEMBERS", key])).map(Number))),
    firstPages: (keys, count) =>
      Promise.all(
        keys.map(async (key) => {
          const [cursor, members] = await send<[string, string[]]>(key, ["SSCAN", key, "0", "COUNT", String(count)]);
          return { cursor, ids: members.map(Number) };
        }),
      ),
    contains: (keys, members) => Promise.all(keys.map(async (key, i) => (await send<number>(key, ["SISMEMBER", key, String(members[i])])) === 1)),
    close: async () => {},
  };
}
