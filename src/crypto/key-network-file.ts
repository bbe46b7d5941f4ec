import { readFile } from "node:fs/promises";
import { KeyNetworkError, parseKeyShare, parsePublicKeyNetwork, type KeyShare, type PublicKeyNetwork } from "./key-network.js";

/** Reading key-network files from disk; apart from key-network.ts, which browsers share. */

/** Reads and validates a key-network.json. */
export async function readPublicKeyNetwork(file: string): Promise<PublicKeyNetwork> {
  return parsePublicKeyNetwork(await readJson(file));
}

/** Reads and validates a node-<i>.share.json. */
export async function readKeyShare(file: string): Promise<KeyShare> {
  return parseKeyShare(await readJson(file));
}

async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new KeyNetworkError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? "error"}`, { cause: error });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new KeyNetworkError(`${file} is not JSON`);
  }
}
