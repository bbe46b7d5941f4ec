import type { UserRecord } from "../domain/model.js";

/**
 * The ingestion format (contract.md, "Ingestion format"): JSON Lines, one record per line. These
 * types describe well-formed records as the generator writes them; validate.ts accepts the looser
 * spellings the format allows (absent optional fields, mixed-case addresses) and normalizes them.
 */
export type IngestRecord = UserLine | FriendLine | FollowLine | InteractionLine | NftLine | ReleaseLine;

/** A user, its addresses and its optional social and game accounts: a UserRecord without its id. */
export type UserLine = { type: "user" } & Omit<UserRecord, "id">;

/** An undirected friend relation; its description is the relationship's description. */
export interface FriendLine {
  type: "friend";
  a: string;
  b: string;
  description: string;
}

/** A directed follow. */
export interface FollowLine {
  type: "follow";
  from: string;
  to: string;
}

/** An EOA address interacted with a contract. */
export interface InteractionLine {
  type: "interaction";
  address: string;
  contract: string;
}

/** An address holds a token of an NFT contract. */
export interface NftLine {
  type: "nft";
  address: string;
  contract: string;
}

/** A user releases their 1-degree relations with these peers, or with everyone. */
export interface ReleaseLine {
  type: "release";
  relationId: string;
  peers: "*" | string[];
}
