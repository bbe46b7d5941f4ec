import { createServer, type AddressInfo, type Socket } from "node:net";

/**
 * What a SIGSTOPped or hung redis-server looks like from outside: a loopback port that takes
 * connections and never says anything.
 */
export interface SilentSeed {
  /** host:port, as a cluster seed. */
  address: string;
  /** Drops the connections it holds and stops listening. */
  close(): Promise<void>;
}

export async function startSilentSeed(): Promise<SilentSeed> {
  const held = new Set<Socket>();
  const silent = createServer((socket) => void held.add(socket));
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  return {
    address: `127.0.0.1:${(silent.address() as AddressInfo).port}`,
    close: async () => {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    },
  };
}
