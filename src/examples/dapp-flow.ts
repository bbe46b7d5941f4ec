/**
 * The flow a dApp follows for the two encrypted operations, with relgraph/client (the same client a
 * browser dApp bundles, and the one /demo uses): sign a SIWE authorization with the user's wallet,
 * call relgraph with it, and decrypt the result through the key network.
 *
 *   npx relgraph serve                       # in another terminal (demo data, dev key network)
 *   node dist/src/examples/dapp-flow.js [SERVER_URL] [API_KEY] [rest|connect|grpc-web]
 *
 * It signs as demo user u1 (Alice), whose private key is public by design (src/ingest/demo-wallet.ts).
 */
import { Wallet } from "ethers";
import { createRelgraphClient, type Protocol } from "../client/index.js";
import { demoWallet } from "../synthetic/demo-wallet.js";

const server = process.argv[2] ?? "http://127.0.0.1:8080";
const apiKey = process.argv[3] ?? process.env.RELGRAPH_API_KEY ?? "relgraph-dev-key";
const protocol = (process.argv[4] ?? "rest") as Protocol;

async function main() {
  // An ethers Wallet is a MessageSigner; in a browser, eip1193Signer(window.ethereum) is one too.
  const wallet = new Wallet(demoWallet(1).privateKey);
  const client = createRelgraphClient({ baseUrl: server, apiKey, protocol });
  const me = { address: wallet.address };

  const profileAuth = await client.authorize("profile", wallet);
  console.log("profile:", await client.decryptedProfile(me, profileAuth));

  // One authorization serves every page of the chain until it expires.
  const graphAuth = await client.authorize("relationshipGraph", wallet);
  let cursor = "";
  let page = 0;
  do {
    const answer = await client.decryptedRelationshipGraph(me, graphAuth, { limit: 25, cursor });
    page += 1;
    console.log(`relationship graph page ${page}: ${answer.data.length} entries, first ${answer.data[0]?.relation.relationId ?? "-"}`);
    cursor = answer.cursor;
  } while (cursor !== "");

  const recommendations = await client.multiDimensionalRecommendation(me, { limit: 3 });
  for (const user of recommendations.data) console.log(`recommended: ${user.relationId.name}: ${user.description}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
