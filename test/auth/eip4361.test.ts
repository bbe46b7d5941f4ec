import fc from "fast-check";
import { Wallet } from "ethers";
import { SiweMessage } from "siwe";
import { describe, expect, it } from "vitest";
import { parseCommonEip4361, type Eip4361Fields } from "../../src/auth/eip4361.js";
import { createSiweMessage } from "../../src/client/siwe-message.js";

/**
 * The fast EIP-4361 parser against the `siwe` package's ABNF parser, the authority: whenever the fast
 * one answers, `siwe` must accept the same text and read every field the same; everything else
 * (null) goes to `siwe`. Messages are generated valid and odd, then mutated line by line.
 */

const FIELDS: (keyof Eip4361Fields)[] = [
  "scheme", "domain", "address", "statement", "uri", "version", "chainId", "nonce",
  "issuedAt", "expirationTime", "notBefore", "requestId", "resources",
];

/** What `siwe` reads, or null when it refuses the text. */
function siweFields(message: string): Record<string, unknown> | null {
  let parsed: SiweMessage;
  try {
    parsed = new SiweMessage(message);
  } catch {
    return null;
  }
  return Object.fromEntries(FIELDS.map((field) => [field, parsed[field as keyof SiweMessage]]));
}

const wallets = Array.from({ length: 4 }, () => Wallet.createRandom().address);

/**
 * Each field has common values (what wallets and relgraph's client write) and odd ones (valid or not
 * by the grammar); a message takes up to two fields odd, so most messages are near misses of the
 * common shape, the cases where a fast parser could go wrong.
 */
const pick = <T>(...values: T[]) => fc.constantFrom(...values);
const wallet = pick(...wallets);
const host = fc.oneof(
  pick("localhost", "example.com", "relgraph.example", "127.0.0.1", "1.2.3.256", "01.2.3.4", "a-b.c-d", "EXAMPLE.COM", "xn--bcher-kva.example", "-"),
  fc.stringMatching(/^[a-z0-9.-]{1,12}$/),
);
const commonAuthority = fc.tuple(host, fc.option(fc.stringMatching(/^[0-9]{1,5}$/), { freq: 2 })).map(([h, p]) => (p === null ? h : `${h}:${p}`));
const oddAuthority = fc.oneof(
  fc.tuple(host, fc.stringMatching(/^[0-9]{0,7}$/)).map(([h, p]) => `${h}:${p}`),
  pick("user@example.com", "[::1]:8080", "[v1.x]", "ex ample.com", "example.com/", "", "a_b.com", "é.com", "exa%41mple.com", "a..b", ".a", "a:b"),
);
const authority = fc.oneof({ weight: 4, arbitrary: commonAuthority }, oddAuthority);
const path = fc.stringMatching(/^(\/[A-Za-z0-9._~-]{0,6}){0,3}$/);
const statementChar = pick(..."aZ9 .!#$%&'()*+,-/:;<=>?@[\\]^_`{|}~\"\té");
const isoDate = fc.date({ min: new Date("1970-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true }).map((d) => d.toISOString());
const oddDate = fc.oneof(
  isoDate.map((d) => d.replace(/\.\d+Z$/, "Z")),
  isoDate.map((d) => d.replace("T", "t")),
  isoDate.map((d) => d.replace("Z", "z")),
  isoDate.map((d) => d.replace("Z", "+02:00")),
  isoDate.map((d) => d.replace("Z", "123456789Z")),
  isoDate.map((d) => d.replace("Z", "1234567890Z")),
  isoDate.map((d) => d.replace("T", " ")),
  isoDate.map((d) => d.replace(/\.\d+Z$/, ".Z")),
  isoDate.map((d) => d.replace(/T\d\d/, "T24")),
  {
    weight: 7,
    arbitrary: pick(
    "2026-02-30T00:00:00Z", "2024-02-29T00:00:00Z", "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z",
    "2026-11-27T24:00:00Z", "2026-11-27T23:60:00Z", "2026-11-27T23:59:60Z", "2026-11-27T23:59:59.Z", "2026-11-27", "0000-01-01T00:00:00Z",
      "2026-04-31T00:00:00Z", "2026-11-27T19:00:00.5Z", "tomorrow",
    ),
  },
);
const resourceList = fc.array(fc.oneof(pick("ipfs://bafy", "https://example.com/a", "bad uri", ""), path.map((p) => `https://x.org${p}`)), { maxLength: 3 });

const common = {
  scheme: fc.constant(null as string | null),
  domain: commonAuthority,
  address: wallet,
  statement: pick<string | null>("Access to Profile.", "Access to Relationship Graph.", "Sign in."),
  uri: fc.tuple(pick("http", "https"), commonAuthority, path).map(([s, a, p]) => `${s}://${a}${p}`),
  version: fc.constant("1"),
  chainId: fc.oneof(pick("1", "137", "8453"), fc.stringMatching(/^[1-9][0-9]{0,14}$/)),
  nonce: fc.stringMatching(/^[A-Za-z0-9]{8,20}$/),
  issuedAt: isoDate,
  expirationTime: fc.option(isoDate, { freq: 2 }),
  notBefore: fc.option(isoDate, { freq: 3 }),
  requestId: fc.constant(null as string | null),
  resources: fc.constant(null as string[] | null),
};
const odd: Record<keyof typeof common, fc.Arbitrary<unknown>> = {
  scheme: pick("https", "http", "x+y-z.w"),
  domain: fc.oneof(oddAuthority, commonAuthority.map((a) => `https://${a}`)),
  address: fc.oneof(
    wallet.map((a) => a.toLowerCase()),
    wallet.map((a) => `0x${a.slice(2).toUpperCase()}`),
    fc.tuple(wallet, fc.nat(39)).map(([a, i]) => {
      const c = a[i + 2] as string;
      return a.slice(0, i + 2) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + a.slice(i + 3);
    }),
    wallet.map((a) => a.slice(0, 41)),
    wallet.map((a) => `${a}0`),
    wallet.map((a) => a.replace(/^0x/, "0X")),
    wallet.map((a) => `${a.slice(0, 10)}g${a.slice(11)}`),
  ),
  statement: fc.oneof(fc.string({ unit: statementChar, maxLength: 24 }), fc.constant(null)),
  uri: fc.oneof(
    fc.tuple(pick("http", "https"), oddAuthority, path).map(([s, a, p]) => `${s}://${a}${p}`),
    pick("https://example.com/?q=1", "https://example.com/#top", "urn:example:x", "did:pkh:eip155:1:0x1", "https://", "ftp://x.org/a", "HTTPS://EXAMPLE.COM", "example.com", "https://ex ample.com", "mailto:a@b.c", "https://x.org/a%20b", "https://x.org//a"),
  ),
  version: pick("2", "01", "1.0", ""),
  chainId: pick("00001", "0", "9999999999999999", "9".repeat(400), "", "1a", "-1", "0x1", " 1"),
  nonce: pick("short", "abc-defgh1", "", "abcdefg", "abcdefgh ", "ääääääääää", "a".repeat(200)),
  issuedAt: oddDate,
  expirationTime: oddDate,
  notBefore: oddDate,
  requestId: pick("abc-123", "", "a b", "%41"),
  resources: resourceList,
};
const fieldNames = Object.keys(common) as (keyof typeof common)[];

const message = fc
  .tuple(fc.record(common), fc.record(odd), fc.subarray(fieldNames, { maxLength: 2 }))
  .map(([base, oddValues, oddFields]) => {
    const m = { ...base } as Record<string, unknown>;
    for (const field of oddFields) m[field] = oddValues[field];
    return m as { [K in keyof typeof common]: K extends "resources" ? string[] | null : string | null };
  })
  .map((m) => {
    const lines = [`${m.scheme === null ? "" : `${m.scheme}://`}${m.domain} wants you to sign in with your Ethereum account:`, m.address as string, ""];
    if (m.statement !== null) lines.push(m.statement, "");
    lines.push(`URI: ${m.uri}`, `Version: ${m.version}`, `Chain ID: ${m.chainId}`, `Nonce: ${m.nonce}`, `Issued At: ${m.issuedAt}`);
    if (m.expirationTime !== null) lines.push(`Expiration Time: ${m.expirationTime}`);
    if (m.notBefore !== null) lines.push(`Not Before: ${m.notBefore}`);
    if (m.requestId !== null) lines.push(`Request ID: ${m.requestId}`);
    if (m.resources !== null) lines.push("Resources:", ...m.resources.map((r) => `- ${r}`));
    return lines;
  });

type Mutation = (lines: string[], i: number, j: number) => string;
const mutations: Mutation[] = [
  (lines) => lines.join("\n"),
  (lines, i, j) => {
    const copy = [...lines];
    [copy[i], copy[j]] = [copy[j] as string, copy[i] as string];
    return copy.join("\n");
  },
  (lines, i) => lines.filter((_, k) => k !== i).join("\n"),
  (lines, i) => [...lines.slice(0, i + 1), lines[i], ...lines.slice(i + 1)].join("\n"),
  (lines, i) => lines.map((line, k) => (k === i ? `${line} ` : line)).join("\n"),
  (lines, i) => lines.map((line, k) => (k === i ? ` ${line}` : line)).join("\n"),
  (lines, i) => lines.map((line, k) => (k === i ? line.replace(": ", ":  ") : line)).join("\n"),
  (lines, i) => lines.map((line, k) => (k === i ? line.replace(": ", ":\t") : line)).join("\n"),
  (lines, i) => lines.map((line, k) => (k === i ? line.toLowerCase() : line)).join("\n"),
  (lines) => lines.join("\r\n"),
  (lines) => `${lines.join("\n")}\n`,
  (lines) => `\n${lines.join("\n")}`,
  (lines, i) => [...lines.slice(0, i), "", ...lines.slice(i)].join("\n"),
  (lines, i) => [...lines.slice(0, i), "Request ID: x", ...lines.slice(i)].join("\n"),
  (lines, i) => [...lines.slice(0, i), "Expiration Time: 2030-01-01T00:00:00Z", ...lines.slice(i)].join("\n"),
  (lines) => lines.join("\n").replace("\n", "\u2028"),
];
const mutated = fc
  .tuple(message, fc.nat(mutations.length - 1), fc.nat(20), fc.nat(20))
  .map(([lines, m, i, j]) => (mutations[m] as Mutation)(lines, i % lines.length, j % lines.length));

describe("parseCommonEip4361", () => {
  it("reads relgraph's own messages, exactly as siwe does", () => {
    for (const operation of ["profile", "relationshipGraph"] as const) {
      for (const [domain, uri] of [["localhost:3000", "http://localhost:3000"], ["relgraph.example", "https://relgraph.example/demo"]] as const) {
        const text = createSiweMessage({ operation, address: (wallets[0] as string).toLowerCase(), domain, uri });
        const fast = parseCommonEip4361(text);
        expect(fast).not.toBeNull();
        expect(fast).toEqual(siweFields(text));
      }
    }
  });

  it("never accepts what siwe refuses, never reads a field differently (generated messages and mutations)", () => {
    let answered = 0;
    let refusedBySiwe = 0;
    fc.assert(
      fc.property(fc.oneof(message.map((lines) => lines.join("\n")), mutated), (text) => {
        const fast = parseCommonEip4361(text);
        const reference = siweFields(text);
        if (reference === null) refusedBySiwe++;
        if (fast === null) return;
        answered++;
        expect(reference).not.toBeNull();
        expect(fast).toEqual(reference);
      }),
      { numRuns: 2000 },
    );
    // The generators reach both sides: messages the fast path reads, and messages siwe refuses.
    expect(answered).toBeGreaterThan(50);
    expect(refusedBySiwe).toBeGreaterThan(300);
  });
});
