import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";

/**
 * Lit's access-control conditions and the encryption identity built from them. The identity is what
 * the key nodes sign, so every byte of it must match what Lit (and our own nodes) compute.
 */

/** A Lit "evmBasic" access-control condition (proto relgraph.v1.AccessControlCondition). */
export interface AccessControlCondition {
  contractAddress: string;
  standardContractType: string;
  chain: string;
  method: string;
  parameters: string[];
  returnValueTest: { comparator: string; value: string };
}

/** The chain the conditions name, as Lit spells it. */
export const CONDITIONS_CHAIN = "ethereum";
/** Scheme prefix of Lit's access-control-condition resource, which is the identity's prefix. */
const IDENTITY_PREFIX = "lit-accesscontrolcondition://";

/**
 * "Only the signer": Lit substitutes `:userAddress` with the address that signed the authorization
 * and compares it with `value`. The address is lowercased so that one signer always yields the same
 * conditions, and so the same identity hash.
 */
export function onlySignerConditions(address: string): AccessControlCondition[] {
  return [
    {
      contractAddress: "",
      standardContractType: "",
      chain: CONDITIONS_CHAIN,
      method: "",
      parameters: [":userAddress"],
      returnValueTest: { comparator: "=", value: address.toLowerCase() },
    },
  ];
}

/**
 * Reads a condition list from JSON. Fields proto3 JSON leaves out when empty (a Connect or gRPC client
 * may have received them that way) get their defaults back, since the identity hashes them; unknown
 * keys or wrong types make it null.
 */
export function conditionsFromJson(value: unknown): AccessControlCondition[] | null {
  if (!Array.isArray(value)) return null;
  const conditions: AccessControlCondition[] = [];
  for (const item of value as unknown[]) {
    if (!isPlainObject(item) || !onlyKeys(item, CONDITION_KEYS)) return null;
    const test = item.returnValueTest ?? {};
    if (!isPlainObject(test) || !onlyKeys(test, ["comparator", "value"])) return null;
    const parameters = item.parameters ?? [];
    if (!Array.isArray(parameters) || !parameters.every((p) => typeof p === "string")) return null;
    const fields = [item.contractAddress, item.standardContractType, item.chain, item.method, test.comparator, test.value];
    if (!fields.every((field) => field === undefined || typeof field === "string")) return null;
    const text = (field: unknown) => (field as string | undefined) ?? "";
    conditions.push({
      contractAddress: text(item.contractAddress),
      standardContractType: text(item.standardContractType),
      chain: text(item.chain),
      method: text(item.method),
      parameters: parameters as string[],
      returnValueTest: { comparator: text(test.comparator), value: text(test.value) },
    });
  }
  return conditions;
}

/**
 * The signer address an "only the signer" condition list names, or null for any other shape. Key
 * nodes can evaluate nothing else, so anything else (other methods or chains, several conditions) is
 * refused rather than half-understood.
 */
export function onlySignerAddress(conditions: readonly AccessControlCondition[]): string | null {
  if (conditions.length !== 1) return null;
  const [{ contractAddress, standardContractType, chain, method, parameters, returnValueTest }] = conditions as [
    AccessControlCondition,
  ];
  if (contractAddress !== "" || standardContractType !== "" || chain !== CONDITIONS_CHAIN || method !== "") return null;
  if (parameters.length !== 1 || parameters[0] !== ":userAddress" || returnValueTest.comparator !== "=") return null;
  return /^0x[0-9a-fA-F]{40}$/.test(returnValueTest.value) ? returnValueTest.value : null;
}

/**
 * Lit's canonical JSON of a condition list (`canonicalAccessControlConditionFormatter` followed by
 * `JSON.stringify`): keys in the order contractAddress, chain, standardContractType, method,
 * parameters, returnValueTest{comparator, value}, whatever order the input had.
 */
export function canonicalConditionsJson(conditions: readonly AccessControlCondition[]): string {
  return JSON.stringify(
    conditions.map((c) => ({
      contractAddress: c.contractAddress,
      chain: c.chain,
      standardContractType: c.standardContractType,
      method: c.method,
      parameters: c.parameters,
      returnValueTest: { comparator: c.returnValueTest.comparator, value: c.returnValueTest.value },
    })),
  );
}

/** Lowercase hex SHA-256 of the canonical conditions. */
export function hashConditions(conditions: readonly AccessControlCondition[]): string {
  return bytesToHex(sha256(new TextEncoder().encode(canonicalConditionsJson(conditions))));
}

/** The identity key nodes sign: `lit-accesscontrolcondition://<hash(conditions)>/<dataToEncryptHash>`. */
export function encryptionIdentity(conditions: readonly AccessControlCondition[], dataToEncryptHash: string): string {
  return `${IDENTITY_PREFIX}${hashConditions(conditions)}/${dataToEncryptHash}`;
}

const CONDITION_KEYS = ["contractAddress", "standardContractType", "chain", "method", "parameters", "returnValueTest"];

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function onlyKeys(object: Record<string, unknown>, keys: readonly string[]): boolean {
  return Object.keys(object).every((key) => keys.includes(key));
}
