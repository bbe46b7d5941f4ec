/**
 * `npm run bench:crypto`: what encrypted results cost. Encryption per response (the server's share of
 * Profile and Relationship graph), on the calling thread and through the worker pool, and decryption
 * per client (share requests to key nodes running as separate processes, share checks, combination).
 * Prints figures; the machine's 2 cores are shared by the key nodes and this process.
 */
import { Wallet } from "ethers";
import { decryptResult } from "../../src/client/decrypt.js";
import { createThresholdEncryptor } from "../../src/crypto/encryptor.js";
import { signAuthorization, startKeyNodes } from "../../test/support/keynodes.js";

const ROUNDS = { inline: 10, pooled: 20, decrypt: 5 };

async function timed<T>(rounds: number, work: () => Promise<T>): Promise<{ ms: number; last: T }> {
  let last: T | undefined;
  const start = performance.now();
  for (let i = 0; i < rounds; i++) last = await work();
  return { ms: (performance.now() - start) / rounds, last: last as T };
}

async function measure(threshold: number, nodes: number) {
  const network = await startKeyNodes({ threshold, nodes });
  try {
    const signer = Wallet.createRandom();
    // A relationship-graph page of 20 entries is about 6 KB of JSON.
    const plaintext = new TextEncoder().encode(JSON.stringify({ entries: "x".repeat(6_000) }));
    const inline = createThresholdEncryptor(network.network, { workers: 0 });
    const encryption = await timed(ROUNDS.inline, () => inline.encryptFor(signer.address, plaintext));
    await inline.close();

    const pooled = createThresholdEncryptor(network.network);
    await pooled.encryptFor(signer.address, plaintext); // starts the workers
    const start = performance.now();
    await Promise.all(Array.from({ length: ROUNDS.pooled }, () => pooled.encryptFor(signer.address, plaintext)));
    const pooledMs = (performance.now() - start) / ROUNDS.pooled;
    await pooled.close();

    const auth = await signAuthorization(signer);
    const decryption = await timed(ROUNDS.decrypt, () => decryptResult(encryption.last, { network: network.network, ...auth }));
    if (Buffer.compare(Buffer.from(decryption.last), Buffer.from(plaintext)) !== 0) throw new Error("decryption mismatch");
    return { network: `${threshold}-of-${nodes}`, encryptInlineMs: encryption.ms, encryptPooledMs: pooledMs, decryptPerClientMs: decryption.ms };
  } finally {
    await network.close();
  }
}

async function main() {
  console.log("Encrypted results: cost per response (server) and per client (decryption); 2 shared cores.\n");
  const rows = [await measure(2, 3), await measure(3, 5)];
  console.log("network | encrypt, one thread (ms/response) | encrypt, worker pool, 20 concurrent (ms/response) | decrypt (ms/client)");
  console.log("---|---|---|---");
  for (const r of rows) {
    console.log(`${r.network} | ${r.encryptInlineMs.toFixed(1)} | ${r.encryptPooledMs.toFixed(1)} | ${r.decryptPerClientMs.toFixed(1)}`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
