import { createHash } from "node:crypto";
// The subpath alone: all of ethers cost every command that generates records (ingest included) 0.1 s to load.
import { computeAddress } from "ethers/transaction";

/** A demo user's wallet: a private key anyone can derive, so never use it for anything real. */
export interface DemoWallet {
  /** 0x-hex secp256k1 private key: sha256("relgraph-demo-wallet-" + i). */
  privateKey: string;
  /** The key's EIP-55 checksummed address. */
  address: string;
}

/** How many users of a generated dataset (u1 … u10) own a demo wallet. */
export const DEMO_WALLETS = 10;

const cache = new Map<number, DemoWallet>();

/**
 * The wallet of demo user `u{i}` (1 ≤ i ≤ 10). The keys are public by construction, so that the
 * README can sign SIWE messages as a demo user and anyone can reproduce them.
 */
export function demoWallet(i: number): DemoWallet {
  if (!Number.isInteger(i) || i < 1 || i > DEMO_WALLETS) {
    throw new RangeError(`demo wallets are numbered 1 to ${DEMO_WALLETS}, got ${i}`);
  }
  let wallet = cache.get(i);
  if (!wallet) {
    const privateKey = `0x${createHash("sha256").update(`relgraph-demo-wallet-${i}`).digest("hex")}`;
    wallet = Object.freeze({ privateKey, address: computeAddress(privateKey) });
    cache.set(i, wallet);
  }
  return wallet;
}
