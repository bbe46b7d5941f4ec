import { randomBytes } from "node:crypto";
import type { Wallet } from "ethers";
import { SiweMessage } from "siwe";
import { PROFILE_STATEMENT, RELATIONSHIP_GRAPH_STATEMENT } from "../../src/auth/siwe.js";

/** A signed SIWE authorization, as the `sig` and `message` query parameters carry it. */
export interface Authorization {
  sig: string;
  message: string;
}

/** How long the bench's authorizations stay valid: longer than any run. */
const VALIDITY_MS = 6 * 3600 * 1000;

/**
 * Signs one EIP-4361 message per wallet for an operation's statement. A valid authorization may be
 * reused until it expires (contract.md), so each sampled user signs once and the load reuses it.
 */
export async function signAuthorizations(wallets: readonly Wallet[], operation: "profile" | "relationshipGraph"): Promise<Authorization[]> {
  const statement = operation === "profile" ? PROFILE_STATEMENT : RELATIONSHIP_GRAPH_STATEMENT;
  const now = Date.now();
  return Promise.all(
    wallets.map(async (wallet) => {
      const message = new SiweMessage({
        domain: "bench.relgraph.example",
        address: wallet.address,
        statement,
        uri: "https://bench.relgraph.example/login",
        version: "1",
        chainId: 1,
        nonce: randomBytes(8).toString("hex"),
        issuedAt: new Date(now).toISOString(),
        expirationTime: new Date(now + VALIDITY_MS).toISOString(),
      }).prepareMessage();
      return { sig: await wallet.signMessage(message), message };
    }),
  );
}
