import { Wallet } from "ethers";
import { describe, expect, it } from "vitest";
import { decryptResult } from "../../src/crypto/client.js";
import * as sourceEncryptor from "../../src/crypto/encryptor.js";
import { signAuthorization, startKeyNodes } from "../support/keynodes.js";

/**
 * Prints what encryption and decryption cost here; asserts only that the work succeeded, never a
 * duration.
 */
const signer = Wallet.createRandom();
const plaintext = new TextEncoder().encode(JSON.stringify({ relationId: "u1", name: "Alice", followerCount: 5 }));

async function timed<T>(rounds: number, work: () => Promise<T>): Promise<{ ms: number; last: T }> {
  let last: T | undefined;
  const start = performance.now();
  for (let i = 0; i < rounds; i++) last = await work();
  return { ms: (performance.now() - start) / rounds, last: last as T };
}

describe("cost (printed, not asserted)", () => {
  for (const [t, n] of [
    [2, 3],
    [3, 5],
  ] as const) {
    it(`${t}-of-${n}: encryption per payload and decryption per client`, async () => {
      const nodes = await startKeyNodes({ threshold: t, nodes: n });
      try {
        const inline = sourceEncryptor.createThresholdEncryptor(nodes.network, { workers: 0 });
        const encryption = await timed(10, () => inline.encryptFor(signer.address, plaintext));
        const { createThresholdEncryptor } = (await import(
          new URL("../../dist/src/crypto/encryptor.js", import.meta.url).href
        )) as typeof sourceEncryptor;
        const pooled = createThresholdEncryptor(nodes.network);
        await pooled.encryptFor(signer.address, plaintext); // starts a worker
        const batch = 20;
        const start = performance.now();
        await Promise.all(Array.from({ length: batch }, () => pooled.encryptFor(signer.address, plaintext)));
        const pooledMs = (performance.now() - start) / batch;
        await pooled.close();

        const auth = await signAuthorization(signer);
        const decryption = await timed(5, () => decryptResult(encryption.last, { network: nodes.network, ...auth }));
        expect(decryption.last).toEqual(plaintext);
        console.log(
          `[measure] ${t}-of-${n}: encrypt ${encryption.ms.toFixed(1)} ms/payload on the calling thread, ` +
            `${pooledMs.toFixed(1)} ms/payload through the worker pool (${batch} concurrent); ` +
            `decrypt ${decryption.ms.toFixed(1)} ms per client (nodes in separate processes)`,
        );
      } finally {
        await nodes.close();
      }
    }, 60_000);
  }
});
