import { createRequire } from "node:module";
import { createServer as createHttpServer } from "node:http";
import { createServer, type AddressInfo } from "node:net";
import { ContractFactory, JsonRpcProvider, Wallet } from "ethers";
import ganache from "ganache";
import { SiweMessage } from "siwe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROFILE_STATEMENT, createSiweVerifier } from "../../src/auth/siwe.js";
import { AuthorizationExpiredError, InvalidAuthorizationError, UpstreamUnavailableError } from "../../src/domain/errors.js";

const CHAIN_ID = 1337;

// solc-js ships no type declarations; this is the one entry point used.
const solc = createRequire(import.meta.url)("solc") as { compile(input: string): string };

/**
 * The smallest EIP-1271 wallet: it accepts a 65-byte signature of the hash by its owner. A signature
 * that recovers to nobody reverts, so that both failure shapes (a wrong value, a revert) are exercised.
 */
const WALLET_SOURCE = `
// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.0;

contract OwnedWallet {
    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        require(signature.length == 65, "bad length");
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        address signer = ecrecover(hash, v, r, s);
        require(signer != address(0), "unrecoverable");
        return signer == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
}
`;

function compileWallet(): { abi: unknown[]; bytecode: string } {
  const input = {
    language: "Solidity",
    sources: { "OwnedWallet.sol": { content: WALLET_SOURCE } },
    settings: {
      // ganache 7 implements the EVM up to Shanghai; solc 0.8.28 would otherwise target Cancun.
      evmVersion: "shanghai",
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((error) => error.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((error) => error.formattedMessage).join("\n"));
  const contract = output.contracts["OwnedWallet.sol"]?.["OwnedWallet"];
  if (!contract) throw new Error("solc produced no OwnedWallet");
  return { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
}

/** A loopback port nobody listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A JSON-RPC endpoint on loopback for the chain CHAIN_ID: `answer` gives each method's result, or null
 * to fail the call with HTTP 503, as a node that is down or overloaded does.
 */
async function startRpcStub(answer: (method: string) => string | null): Promise<{ url: string; close(): void }> {
  const stub = createHttpServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const { id, method } = JSON.parse(body) as { id: number; method: string };
      const result = method === "eth_chainId" ? `0x${CHAIN_ID.toString(16)}` : answer(method);
      if (result === null) return res.writeHead(503).end("unavailable");
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id, result }));
    });
  });
  await new Promise<void>((resolve) => stub.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(stub.address() as AddressInfo).port}`, close: () => stub.close() };
}

function siweMessage(address: string, fields: { chainId?: number; issuedAt?: string; expirationTime?: string } = {}) {
  return new SiweMessage({
    domain: "app.example.com",
    address,
    statement: PROFILE_STATEMENT,
    uri: "https://app.example.com",
    version: "1",
    chainId: fields.chainId ?? CHAIN_ID,
    nonce: "nonce12345678",
    issuedAt: fields.issuedAt ?? new Date(Date.now() - 60_000).toISOString(),
    expirationTime: fields.expirationTime,
  }).prepareMessage();
}

describe("createSiweVerifier with EIP-1271 contract wallets on a local ganache chain", () => {
  const deployer = Wallet.createRandom();
  const owner = Wallet.createRandom();
  let server: ReturnType<typeof ganache.server>;
  let rpcUrl: string;
  let walletAddress: string;

  beforeAll(async () => {
    // @ts-expect-error ganache 7.9's bundled typings resolve the server options to `undefined`.
    server = ganache.server({
      logging: { quiet: true },
      chain: { chainId: CHAIN_ID },
      wallet: { accounts: [{ secretKey: deployer.privateKey, balance: 10n ** 20n }] },
    });
    await server.listen(0, "127.0.0.1");
    rpcUrl = `http://127.0.0.1:${server.address().port}`;

    const { abi, bytecode } = compileWallet();
    const provider = new JsonRpcProvider(rpcUrl, CHAIN_ID, { staticNetwork: true });
    try {
      const factory = new ContractFactory(abi as never, bytecode, deployer.connect(provider));
      const contract = await factory.deploy(owner.address);
      await contract.waitForDeployment();
      walletAddress = await contract.getAddress();
    } finally {
      provider.destroy();
    }
  });

  afterAll(async () => {
    await server?.close();
  });

  const verify = (sig: string, message: string, ethRpcUrl: string | null = rpcUrl) =>
    createSiweVerifier({ domains: [], maxAgeSeconds: 3600, ethRpcUrl }).verify({
      sig,
      message,
      statement: PROFILE_STATEMENT,
    });

  it("accepts a message whose address is the contract, signed by its owner", async () => {
    const message = siweMessage(walletAddress);
    const result = await verify(await owner.signMessage(message), message);
    expect(result.address).toBe(walletAddress.toLowerCase());
  });

  it("rejects a message for the contract signed by someone else", async () => {
    const message = siweMessage(walletAddress);
    const stranger = Wallet.createRandom();
    await expect(verify(await stranger.signMessage(message), message)).rejects.toThrow(InvalidAuthorizationError);
  });

  it("rejects a signature the contract reverts on", async () => {
    const message = siweMessage(walletAddress);
    await expect(verify(`0x${"11".repeat(64)}05`, message)).rejects.toThrow(InvalidAuthorizationError);
  });

  it("rejects the owner's signature when no ETH_RPC_URL is configured", async () => {
    const message = siweMessage(walletAddress);
    await expect(verify(await owner.signMessage(message), message, null)).rejects.toThrow(InvalidAuthorizationError);
  });

  it("rejects a message for another chain than the RPC endpoint serves", async () => {
    const message = siweMessage(walletAddress, { chainId: 1 });
    await expect(verify(await owner.signMessage(message), message)).rejects.toThrow(InvalidAuthorizationError);
  });

  it("rejects a wrong signature for an address with no code", async () => {
    const message = siweMessage(owner.address);
    await expect(verify(await Wallet.createRandom().signMessage(message), message)).rejects.toThrow(
      InvalidAuthorizationError,
    );
  });

  it("reports 10100 for an expired message correctly signed through the contract", async () => {
    const message = siweMessage(walletAddress, {
      issuedAt: new Date(Date.now() - 120_000).toISOString(),
      expirationTime: new Date(Date.now() - 60_000).toISOString(),
    });
    await expect(verify(await owner.signMessage(message), message)).rejects.toThrow(AuthorizationExpiredError);
  });

  it("reports 50300 when the RPC endpoint cannot be reached", async () => {
    const message = siweMessage(walletAddress);
    const unreachable = `http://127.0.0.1:${await closedPort()}`;
    await expect(verify(await owner.signMessage(message), message, unreachable)).rejects.toThrow(
      UpstreamUnavailableError,
    );
  });
});

describe("EIP-1271 is asked only of addresses that hold code", () => {
  let rpcUrl: string;
  let stub: { close(): void } | undefined;
  let calls: string[] = [];
  let down = false;
  beforeAll(async () => {
    // Every address is an EOA, and the endpoint can be taken down.
    const started = await startRpcStub((method) => {
      calls.push(method);
      return down ? null : "0x";
    });
    stub = started;
    rpcUrl = started.url;
  });
  afterAll(() => stub?.close());

  it("refuses a bad EOA signature with 10101, asking the chain only once per address, even once it is down", async () => {
    const verifier = createSiweVerifier({ domains: [], maxAgeSeconds: 3600, ethRpcUrl: rpcUrl });
    const eoa = Wallet.createRandom();
    const message = siweMessage(eoa.address);
    const forged = await Wallet.createRandom().signMessage(message);
    calls = [];
    await expect(verifier.verify({ sig: forged, message, statement: PROFILE_STATEMENT })).rejects.toThrow(InvalidAuthorizationError);
    expect(calls).toEqual(["eth_getCode"]);

    down = true;
    calls = [];
    for (let i = 0; i < 3; i++) {
      await expect(verifier.verify({ sig: forged, message, statement: PROFILE_STATEMENT })).rejects.toThrow(InvalidAuthorizationError);
    }
    expect(calls).toEqual([]);
    down = false;
  });
});


describe("a failed EIP-1271 call keeps the signature out of what is logged", () => {
  let rpcUrl: string;
  let stub: { close(): void } | undefined;
  beforeAll(async () => {
    // Every address holds code, and every eth_call fails as an overloaded node's would.
    const started = await startRpcStub((method) => (method === "eth_call" ? null : "0x6080"));
    stub = started;
    rpcUrl = started.url;
  });
  afterAll(() => stub?.close());

  it("reports 50300 with a cause that names the failure but holds no part of the request", async () => {
    const verifier = createSiweVerifier({ domains: [], maxAgeSeconds: 3600, ethRpcUrl: rpcUrl });
    // A contract account's address, and a signature its owner (not the address) made: EIP-1271 is asked.
    const account = Wallet.createRandom();
    const message = siweMessage(account.address);
    const sig = await Wallet.createRandom().signMessage(message);
    const failure = await verifier.verify({ sig, message, statement: PROFILE_STATEMENT }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(UpstreamUnavailableError);
    const cause = (failure as Error).cause as Error;
    // Whatever a logger would print of the error and its cause: no r, s or v of the signature.
    const printed = JSON.stringify({ message: (failure as Error).message, cause: { ...cause, message: cause.message, stack: cause.stack } });
    expect(printed).not.toContain(sig.slice(2, 66).toLowerCase());
    expect(printed).not.toContain("isValidSignature");
    expect(cause.message).toMatch(/^SERVER_ERROR: /);
  });
});
