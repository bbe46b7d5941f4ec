import { InvalidArgumentError } from "../domain/errors.js";
import { IDENTITY_PARAM, normalizeAddress, foldSocialUsername } from "../domain/identity.js";
import type { Identity, IdentityKind } from "../domain/model.js";
import type { PageRequest } from "../graph/queries.js";

/**
 * Validation of request messages, shared by every protocol: the REST facade only decodes query
 * strings into these messages, so gRPC, Connect and REST enforce identical rules. Error messages
 * name the parameter at fault by its query/JSON name.
 */

/** Most items a list parameter may carry. */
export const MAX_LIST_ITEMS = 50;
/** Largest page size. */
export const MAX_LIMIT = 100;
const MAX_ID_LENGTH = 256;

/** A request naming one user with exactly one of its three identity fields. */
export interface SingleIdentityFields {
  address: string;
  socialUsername: string;
  gameId: string;
}

/** A request naming users with three lists of identities. */
export interface IdentityListFields {
  address: string[];
  socialUsername: string[];
  gameId: string[];
}

/** Exactly one of address, socialUsername and gameId, normalized. Empty values count as absent. */
export function singleIdentity(req: SingleIdentityFields): Identity {
  const given = (["address", "social", "game"] as const).filter((kind) => req[IDENTITY_PARAM[kind]].trim() !== "");
  if (given.length !== 1) {
    const problem = given.length === 0 ? "none was given" : `got ${given.map((k) => IDENTITY_PARAM[k]).join(" and ")}`;
    throw new InvalidArgumentError(`exactly one of address, socialUsername and gameId is required; ${problem}`);
  }
  const kind = given[0]!;
  return identity(kind, req[IDENTITY_PARAM[kind]].trim());
}

/** Every identity of the three lists, normalized; at least `min` distinct identities are required. */
export function identityList(req: IdentityListFields, min: number): Identity[] {
  const identities: Identity[] = [];
  for (const kind of ["address", "social", "game"] as const) {
    for (const item of listItems(IDENTITY_PARAM[kind], req[IDENTITY_PARAM[kind]])) identities.push(identity(kind, item));
  }
  const distinct = new Set(identities.map((i) => `${i.kind}:${i.value}`));
  if (distinct.size < min) {
    throw new InvalidArgumentError(
      `at least ${min} distinct users are required across address, socialUsername and gameId; got ${distinct.size}`,
    );
  }
  return identities;
}

/** At least `min` distinct normalized addresses from a list parameter named `address`. */
export function addressList(values: readonly string[], min: number): string[] {
  const addresses = [...new Set(listItems("address", values).map((item) => address("address", item)))];
  if (addresses.length < min) {
    throw new InvalidArgumentError(`address must list at least ${min} distinct addresses; got ${addresses.length}`);
  }
  return addresses;
}

/** A validated page request: limit 1..100 and any cursor (the cursor codec checks its content). */
export function pageRequest(req: { limit: number; cursor: string }): PageRequest {
  if (!Number.isInteger(req.limit) || req.limit < 1 || req.limit > MAX_LIMIT) {
    throw new InvalidArgumentError(`limit is required and must be an integer from 1 to ${MAX_LIMIT}`);
  }
  return { limit: req.limit, cursor: req.cursor.trim() };
}

/** Trimmed items of a list parameter: none may be empty, at most MAX_LIST_ITEMS. */
function listItems(param: string, values: readonly string[]): string[] {
  if (values.length > MAX_LIST_ITEMS) {
    throw new InvalidArgumentError(`${param} lists ${values.length} items; at most ${MAX_LIST_ITEMS} are allowed`);
  }
  return values.map((value) => {
    const item = value.trim();
    if (item === "") throw new InvalidArgumentError(`${param} has an empty item`);
    return item;
  });
}

function identity(kind: IdentityKind, value: string): Identity {
  const param = IDENTITY_PARAM[kind];
  if (kind === "address") return { kind, value: address(param, value) };
  if (value.length > MAX_ID_LENGTH) throw new InvalidArgumentError(`${param} is longer than ${MAX_ID_LENGTH} characters`);
  return { kind, value: kind === "social" ? foldSocialUsername(value) : value };
}

function address(param: string, value: string): string {
  const normalized = normalizeAddress(value);
  if (normalized === null) {
    throw new InvalidArgumentError(
      `${param} "${value.slice(0, 64)}" is not an EOA address (0x and 40 hex digits; mixed case must match its EIP-55 checksum)`,
    );
  }
  return normalized;
}
