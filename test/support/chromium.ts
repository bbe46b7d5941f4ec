import { existsSync } from "node:fs";
import { getBytes, type Wallet } from "ethers";
import { chromium, type Browser, type Page } from "playwright-core";

/**
 * Headless Chromium for the browser tests: Debian's `chromium` package (never a downloaded browser),
 * driven by playwright-core, with an EIP-1193 wallet whose keys stay in the test process.
 */

/** Where Debian installs Chromium; CHROMIUM_PATH overrides. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Starts headless Chromium; fails with how to install it when it is missing. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`no Chromium at ${CHROMIUM_PATH}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }
  // Tests run as root in CI, where Chromium's sandbox cannot start.
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
}

/** Everything that went wrong on a page: failed or refused requests, HTTP errors, script errors. */
export interface PageProblems {
  list: string[];
}

/** Records every failed request, every 4xx/5xx answer and every page error on `page`. */
export function watchProblems(page: Page): PageProblems {
  const problems: PageProblems = { list: [] };
  page.on("requestfailed", (request) => {
    const why = request.failure()?.errorText ?? "";
    // The client cancels the key nodes it no longer needs once a threshold of shares has come back.
    if (why === "net::ERR_ABORTED" && /\/v1\/decryption-share$/.test(request.url())) return;
    problems.list.push(`request failed: ${request.method()} ${request.url()}: ${why}`);
  });
  page.on("response", (response) => {
    if (response.status() >= 400) problems.list.push(`HTTP ${response.status()}: ${response.request().method()} ${response.url()}`);
  });
  page.on("pageerror", (error) => problems.list.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.list.push(`console error: ${message.text()}`);
  });
  return problems;
}

/**
 * Gives `page` a `window.ethereum` (EIP-1193) for `wallet`: eth_requestAccounts answers its
 * address and personal_sign signs in the test process with ethers, as a wallet extension would.
 * Records every message signed.
 */
export async function injectWallet(page: Page, wallet: Wallet): Promise<string[]> {
  const signed: string[] = [];
  await page.exposeFunction("__testWalletSign", async (hexMessage: string, address: string) => {
    if (address.toLowerCase() !== wallet.address.toLowerCase()) throw new Error(`asked to sign for ${address}`);
    const bytes = getBytes(hexMessage);
    signed.push(new TextDecoder().decode(bytes));
    return wallet.signMessage(bytes);
  });
  await page.addInitScript((address: string) => {
    const sign = (window as unknown as { __testWalletSign: (m: string, a: string) => Promise<string> }).__testWalletSign;
    (window as unknown as { ethereum: unknown }).ethereum = {
      isTestWallet: true,
      async request({ method, params }: { method: string; params?: unknown[] }) {
        switch (method) {
          case "eth_requestAccounts":
          case "eth_accounts":
            return [address.toLowerCase()];
          case "eth_chainId":
            return "0x1";
          case "personal_sign":
            return sign(params![0] as string, params![1] as string);
          default:
            throw Object.assign(new Error(`unsupported method ${method}`), { code: 4200 });
        }
      },
    };
  }, wallet.address);
  return signed;
}
