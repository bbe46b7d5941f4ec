import { Wallet, getAddress, id } from "ethers";
import type { IngestRecord, UserLine } from "../../src/ingest/format.js";

/*
 * A small hand-written graph whose every answer can be worked out on paper. The expected answers
 * below were computed by hand from the records, not by running relgraph; the comments show the work.
 *
 * Friends (undirected):
 *   alice–bob, and both alice and bob are friends of carol, dave, erin, frank, grace, heidi, ivan;
 *   carol–dave, carol–erin, judy–carol, judy–dave, mallory–heidi.
 * Follows: alice→bob, alice→rupert, alice→victor, sybil→rupert, sybil→victor, trent→rupert,
 *   carol→bob, walter→alice, walter→xena, walter→rupert.
 * Contracts (per address): alice#1 C1 C3; alice#2 C2; niaj C1 C2; olivia C3; bob C1 C4 C5 C6;
 *   carol C4 C5 C6 C7; "stranger" (an EOA of no user) C1 C4 C6 C7.
 * NFTs: alice#1 N1; alice#2 N2; peggy N1; olivia N1; bob N2.
 * Releases: alice → [bob, carol, erin, mallory] (mallory is no friend, so it releases nothing);
 *   bob → "*"; carol releases nothing.
 */

/** A fixed wallet derived from a label: the same key on every run, useless for anything real. */
export function fixtureWallet(label: string): Wallet {
  return new Wallet(id(`relgraph-fixture:${label}`));
}

/** Every user of the fixture, in ascending relationId order. */
export const USER_NAMES = [
  "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
  "mallory", "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter", "xena", "yuri",
] as const;

/** A fixture user's relationId. */
export type UserName = (typeof USER_NAMES)[number];

/** Wallets of the users (alice has two; ivan has none) and of an EOA that belongs to no user. */
export const WALLETS = {
  ...Object.fromEntries(USER_NAMES.filter((n) => n !== "ivan").map((n) => [n, fixtureWallet(n)])),
  alice2: fixtureWallet("alice-2"),
  stranger: fixtureWallet("stranger"),
} as Record<Exclude<UserName, "ivan"> | "alice2" | "stranger", Wallet>;

/** The lowercase address of a fixture wallet. */
export function addr(wallet: keyof typeof WALLETS): string {
  return WALLETS[wallet].address.toLowerCase();
}

/** An address no record mentions. */
export const UNKNOWN_ADDRESS = fixtureWallet("nobody").address.toLowerCase();

// Contract addresses are ingested in mixed spellings: relgraph stores and answers them lowercase.
const C1 = "0x1111111111111111111111111111111111111111";
const C2 = "0x2222222222222222222222222222222222222222";
const C3 = "0x3333333333333333333333333333333333333333";
const C4 = "0x4444444444444444444444444444444444444444";
const C5 = getAddress("0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb5"); // EIP-55 mixed case
const C6 = "0xAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA6"; // all upper case
const C7 = "0x7777777777777777777777777777777777777777";
const N1 = "0x9999999999999999999999999999999999999991";
const N2 = "0x9999999999999999999999999999999999999992";

/** The fixture's contract addresses as relgraph answers them (lowercase). */
export const CONTRACTS = {
  C1, C2, C3, C4, C5: C5.toLowerCase(), C6: C6.toLowerCase(), C7,
} as const;

const SOCIAL: Partial<Record<UserName, string>> = {
  alice: "alice", bob: "bob_social", carol: "carol", judy: "judy", niaj: "niaj",
};
/** Game ids of the users that have one. */
export const GAME_ID: Partial<Record<UserName, string>> = {
  alice: "76561198000000001", bob: "76561198000000002", dave: "76561198000000004",
};

function userLine(name: UserName): UserLine {
  const addresses =
    name === "ivan" ? [] : name === "alice" ? [WALLETS.alice.address, WALLETS.alice2.address] : [WALLETS[name].address];
  const social = SOCIAL[name];
  const game = GAME_ID[name];
  return {
    type: "user",
    relationId: name,
    name: name[0]!.toUpperCase() + name.slice(1),
    avatar: `https://avatars.example/${name}.png`,
    addresses,
    social: social ? { username: social, name: `${name} on social`, avatar: `https://social.example/${social}.png` } : null,
    game: game ? { gameId: game, name: `${name}_g`, avatar: `https://game.example/${game}.png` } : null,
  };
}

const AROUND_ALICE_AND_BOB: UserName[] = ["carol", "dave", "erin", "frank", "grace", "heidi", "ivan"];

/** Descriptions of the friend relations that have a specific one; every other relation is "Same guild". */
export const FRIEND_DESCRIPTIONS: Record<string, string> = {
  "alice-bob": "Followed each other on social",
  "alice-carol": "Played together in game",
  "alice-erin": "Met at a hackathon",
};

const FRIENDS: [UserName, UserName][] = [
  ["alice", "bob"],
  ...AROUND_ALICE_AND_BOB.flatMap((n): [UserName, UserName][] => [["alice", n], ["bob", n]]),
  ["carol", "dave"], ["carol", "erin"], ["judy", "carol"], ["judy", "dave"], ["mallory", "heidi"],
];

const FOLLOWS: [UserName, UserName][] = [
  ["alice", "bob"], ["alice", "rupert"], ["alice", "victor"], ["sybil", "rupert"], ["sybil", "victor"],
  ["trent", "rupert"], ["carol", "bob"], ["walter", "alice"], ["walter", "xena"], ["walter", "rupert"],
];

const INTERACTIONS: [keyof typeof WALLETS, string[]][] = [
  ["alice", [C1, C3]], ["alice2", [C2]], ["niaj", [C1, C2]], ["olivia", [C3]],
  ["bob", [C1, C4, C5, C6]], ["carol", [C4, C5, C6, C7]], ["stranger", [C1, C4, C6, C7]],
];

const NFTS: [keyof typeof WALLETS, string[]][] = [
  ["alice", [N1]], ["alice2", [N2]], ["peggy", [N1]], ["olivia", [N1]], ["bob", [N2]],
];

/** The fixture in the ingestion format, records deliberately out of order (relations before users). */
export function fixtureRecords(): IngestRecord[] {
  const records: IngestRecord[] = [];
  for (const [a, b] of FRIENDS) {
    records.push({ type: "friend", a, b, description: FRIEND_DESCRIPTIONS[`${a}-${b}`] ?? "Same guild" });
  }
  for (const name of USER_NAMES) records.push(userLine(name));
  for (const [from, to] of FOLLOWS) records.push({ type: "follow", from, to });
  for (const [wallet, contracts] of INTERACTIONS) {
    for (const contract of contracts) records.push({ type: "interaction", address: WALLETS[wallet].address, contract });
  }
  for (const [wallet, contracts] of NFTS) {
    for (const contract of contracts) records.push({ type: "nft", address: WALLETS[wallet].address, contract });
  }
  records.push({ type: "release", relationId: "alice", peers: ["bob", "carol", "erin", "mallory"] });
  records.push({ type: "release", relationId: "bob", peers: "*" });
  return records;
}

/** The contract's Relation JSON of a fixture user. */
function relationJson(name: UserName) {
  const user = userLine(name);
  return { relationId: user.relationId, name: user.name, avatar: user.avatar };
}

/** The contract's UserInfo JSON of a fixture user; `description` only for recommendations. */
export function userInfoJson(name: UserName, description?: string) {
  const user = userLine(name);
  return {
    relationId: relationJson(name),
    address: user.addresses.map((a) => a.toLowerCase()),
    social: user.social,
    game: user.game,
    ...(description === undefined ? {} : { description }),
  };
}

/** The contract's Relationship graph entry JSON of `peer` in `owner`'s graph. */
export function graphEntryJson(owner: UserName, peer: UserName) {
  const info = userInfoJson(peer);
  const description = FRIEND_DESCRIPTIONS[`${owner}-${peer}`] ?? FRIEND_DESCRIPTIONS[`${peer}-${owner}`] ?? "Same guild";
  return { relation: info.relationId, address: info.address, social: info.social, game: info.game, description };
}

/** Hand-computed answers. */
export const EXPECTED = {
  /** Mutual friends, in ascending relationId order. */
  mutualFriends: {
    aliceBob: ["carol", "dave", "erin", "frank", "grace", "heidi", "ivan"],
    aliceBobCarol: ["dave", "erin"],
    // carol {alice, bob, dave, erin, judy} ∩ dave {alice, bob, carol, judy}
    carolDave: ["alice", "bob", "judy"],
    rupertVictor: [],
  } satisfies Record<string, UserName[]>,

  /**
   * alice's recommendations, best first. Each occurrence weighs its signal (mutual friend 3, NFT 2,
   * contract 1, follower in common 1, followed account 0.1) discounted by the size of the set it
   * comes from (occurrenceWeight). Friends of alice (bob … ivan) are excluded.
   * - judy: friend of carol (5 friends) and dave (4): 2 mutual friends
   * - olivia: C3 (via alice#1) and N1, both with 2 holders, outweigh mallory's one mutual friend,
   *   heidi, then niaj's two contracts (C1, C2), and peggy's N1
   * - rupert, xena: followed by walter, who follows alice
   * - sybil: follows rupert and victor, as alice does; trent, walter: follow rupert
   * Not listed: victor (only followed), yuri (no signal), the stranger EOA (no user), bob (friend).
   */
  aliceRecommendations: [
    ["judy", "2 mutual friends"],
    ["olivia", "1 contract both interacted with, 1 NFT collection both hold"],
    ["mallory", "1 mutual friend"],
    ["niaj", "2 contracts both interacted with"],
    ["peggy", "1 NFT collection both hold"],
    ["rupert", "1 follower in common"],
    ["xena", "1 follower in common"],
    ["sybil", "2 accounts both follow"],
    ["trent", "1 account both follow"],
    ["walter", "1 account both follow"],
  ] satisfies [UserName, string][],

  /** Mutual contract interaction (per address, not per user), lowercase ascending. */
  mutualContracts: {
    bobCarol: [C4, C6.toLowerCase(), C5.toLowerCase()],
    bobCarolStranger: [C4, C6.toLowerCase()],
    bobStranger: [C1, C4, C6.toLowerCase()],
    // C2 is alice#2's, not alice#1's
    aliceNiaj: [C1],
    aliceOlivia: [C3],
    aliceAlice2: [],
  } satisfies Record<string, string[]>,

  /** Released 1-degree relations, ascending relationId. */
  relationshipGraph: {
    alice: ["bob", "carol", "erin"],
    bob: ["alice", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan"],
    carol: [],
  } satisfies Record<string, UserName[]>,

  /** Decrypted profiles. */
  profile: {
    alice: { relationId: "alice", name: "Alice", avatar: "https://avatars.example/alice.png", followingCount: 3, followerCount: 1 },
    rupert: { relationId: "rupert", name: "Rupert", avatar: "https://avatars.example/rupert.png", followingCount: 0, followerCount: 4 },
  },
};
