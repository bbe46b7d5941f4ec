/** The checks of one record's fields, each failing with the reason the record is rejected. */
import type { Game, Social } from "../../domain/model.js";
import { RELATION_ID_PATTERN, normalizeAddress } from "../../domain/identity.js";
import { DELETE, UPSERT } from "./load-state.js";

export const USER_FIELDS = ["op", "type", "relationId", "name", "avatar", "addresses", "social", "game"];
export const FRIEND_FIELDS = ["op", "type", "a", "b", "description"];
export const FOLLOW_FIELDS = ["op", "type", "from", "to"];
export const ASSET_FIELDS = ["op", "type", "address", "contract"];
export const RELEASE_FIELDS = ["op", "type", "relationId", "peers"];
export const USER_DELETE_FIELDS = ["op", "type", "relationId"];
export const RELEASE_DELETE_FIELDS = ["op", "type", "relationId"];
const SOCIAL_FIELDS = ["username", "name", "avatar"];
const GAME_FIELDS = ["gameId", "name", "avatar"];
const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const IDENTIFIER_MAX = 256;

/** Thrown inside a record's checks with the reason it is rejected. */
export class RecordError extends Error {}

export function fail(reason: string): never {
  throw new RecordError(reason);
}

export type Json = Record<string, unknown>;

export function opOf(value: unknown): typeof UPSERT | typeof DELETE {
  if (value === undefined || value === "upsert") return UPSERT;
  if (value === "delete") return DELETE;
  return fail(`"op" must be "upsert" or "delete", got ${show(value)}`);
}

export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function checkFields(record: Json, allowed: readonly string[], what: string): void {
  for (const key in record) {
    if (!allowed.includes(key)) fail(`unknown field ${show(key)} in ${what}`);
  }
}

export function relationIdOf(value: unknown, field: string): string {
  if (typeof value !== "string" || !RELATION_ID_PATTERN.test(value)) {
    fail(`"${field}" must be a relationId (1 to 64 of A-Z a-z 0-9 _ -), got ${show(value)}`);
  }
  return value;
}

export function addressOf(value: unknown, field: string): string {
  if (typeof value !== "string") fail(`"${field}" must be an address string, got ${show(value)}`);
  const address = normalizeAddress(value);
  if (address !== null) return address;
  return fail(
    HEX_ADDRESS.test(value)
      ? `"${field}" ${show(value)} has a wrong EIP-55 checksum`
      : `"${field}" ${show(value)} is not an address (0x and 40 hex digits)`,
  );
}

export function textOf(value: unknown, field: string): string {
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") fail(`"${field}" must be a string, got ${show(value)}`);
  return value;
}

/** A username or game id: what callers pass as a query parameter, so it must survive list parsing. */
function identifierOf(value: unknown, field: string): string {
  if (typeof value !== "string" || value === "" || value.length > IDENTIFIER_MAX || value.trim() !== value || value.includes(",")) {
    fail(`"${field}" must be a non-empty string of at most ${IDENTIFIER_MAX} characters without commas or surrounding spaces, got ${show(value)}`);
  }
  return value;
}

export function socialOf(value: unknown): Social | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) fail(`"social" must be an object or null, got ${show(value)}`);
  checkFields(value, SOCIAL_FIELDS, '"social"');
  return {
    username: identifierOf(value.username, "social.username"),
    name: textOf(value.name, "social.name"),
    avatar: textOf(value.avatar, "social.avatar"),
  };
}

export function gameOf(value: unknown): Game | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) fail(`"game" must be an object or null, got ${show(value)}`);
  checkFields(value, GAME_FIELDS, '"game"');
  return {
    gameId: identifierOf(value.gameId, "game.gameId"),
    name: textOf(value.name, "game.name"),
    avatar: textOf(value.avatar, "game.avatar"),
  };
}

/** A value as JSON, cut short so that a report line stays readable. */
export function show(value: unknown): string {
  const text = value === undefined ? "undefined" : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}
