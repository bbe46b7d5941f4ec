/**
 * The flow a dApp follows for the two encrypted operations: sign a SIWE authorization with the
 * user's wallet, call relgraph with it, and decrypt the result through the key network.
 *
 *   npx relgraph serve                       # in another terminal (demo data, dev key network)
 *   node dist/src/examples/dapp-flow.js [SERVER_URL] [API_KEY]
 *
 * It signs as demo user u1 (Alice), whose private key is public by design (src/ingest/demo-wallet.ts).
 */
import { SiweMessage } from "siwe";
import { Wallet } from "ethers";
import { decryptResult, fetchKeyNetwork } from "../client/decrypt.js";
import { demoWallet } from "../ingest/demo-wallet.js";

const server = process.argv[2] ?? "http://127.0.0.1:8080";
const apiKey = process.argv[3] ?? process.env.RELGRAPH_API_KEY ?? "relgraph-dev-key";

/** Signs an EIP-4361 message with `statement` for `wallet`, valid for one hour. */
async function authorize(wallet: Wallet, statement: string) {
  const now = new Date();
  const message = new SiweMessage({
    domain: new URL(server).host,
    address: wallet.address,
    statement,
    uri: server,
    version: "1",
    chainId: 1,
    nonce: Math.random().toString(36).slice(2, 12).padEnd(10, "0"),
    issuedAt: now.toISOString(),
    expirationTime: new Date(now.getTime() + 3600_000).toISOString(),
  }).prepareMessage();
  return { sig: await wallet.signMessage(message), message };
}

/** Calls a REST operation and returns the envelope, failing loudly on an error code. */
async function call(path: string, params: Record<string, string>) {
  const response = await fetch(`${server}/api/v1/${path}?${new URLSearchParams(params)}`, { headers: { ApiKey: apiKey } });
  const envelope = (await response.json()) as { code: string; desc: string; data: unknown; cursor?: string };
  if (envelope.code !== "0") throw new Error(`${path}: ${envelope.code} ${envelope.desc}`);
  return envelope;
}

async function main() {
  const wallet = new Wallet(demoWallet(1).privateKey);
  const network = await fetchKeyNetwork(server);
  const decrypt = async (data: unknown, auth: { sig: string; message: string }) =>
    JSON.parse(new TextDecoder().decode(await decryptResult(data as never, { network, serverUrl: server, ...auth })));

  const profileAuth = await authorize(wallet, "Access to User Profile.");
  const profile = await call("profile", { address: wallet.address, ...profileAuth });
  console.log("profile:", await decrypt(profile.data, profileAuth));

  // One authorization serves every page of the chain until it expires.
  const graphAuth = await authorize(wallet, "Access to Relationship Graph.");
  let cursor = "";
  let page = 0;
  do {
    const envelope = await call("relationshipGraph", { address: wallet.address, ...graphAuth, limit: "25", cursor });
    const entries = (await decrypt(envelope.data, graphAuth)) as { relation: { relationId: string }; description: string }[];
    page += 1;
    console.log(`relationship graph page ${page}: ${entries.length} entries, first ${entries[0]?.relation.relationId ?? "-"}`);
    cursor = envelope.cursor ?? "";
  } while (cursor !== "");
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
