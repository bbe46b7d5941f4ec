/** Internal numeric id of a user. Stores keep ids small integers so Redis encodes sets as intsets. */
export type UserId = number;

/** A social-network account. */
export interface Social {
  username: string;
  name: string;
  avatar: string;
}

/** A gaming-platform account. */
export interface Game {
  gameId: string;
  name: string;
  avatar: string;
}

/** A user as stored: the `user` ingestion record, plus its internal id. */
export interface UserRecord {
  id: UserId;
  relationId: string;
  name: string;
  avatar: string;
  /** Lowercase 0x addresses; each belongs to at most one user. */
  addresses: string[];
  social: Social | null;
  game: Game | null;
}

/** The three ways a caller names a user. Values are already normalized (see domain/identity.ts). */
export type IdentityKind = "address" | "social" | "game";

/** One identity named by a caller. */
export interface Identity {
  kind: IdentityKind;
  value: string;
}

/** Directed or undirected user-to-user relations kept as id sets. */
export type UserSetKind = "friends" | "following" | "followers";

/** Asset relations kept per user: contracts interacted with (over all addresses) and NFTs held. */
export type AssetKind = "contracts" | "nfts";

/** A user's release record: everyone, or a list of peers. */
export type Release = "*" | UserId[];
