import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RelationshipGraphEntrySchema } from "../../gen/relgraph/v1/relation_service_pb.js";
import type { UserRecord } from "../../src/domain/model.js";
import { relationshipGraphText } from "../../src/rpc/relation-service.js";
import { toContractJson } from "../../src/transport/contract-json.js";

/** What the page's plaintext was before its text was kept per record: each entry built and stringified whole. */
function reference(items: readonly { user: UserRecord; description: string }[]): string {
  return JSON.stringify(
    items.map(({ user, description }) =>
      toContractJson(RelationshipGraphEntrySchema, {
        relation: { relationId: user.relationId, name: user.name, avatar: user.avatar },
        address: user.addresses,
        social: user.social ?? undefined,
        game: user.game ?? undefined,
        description,
      }),
    ),
  );
}

// Any UTF-16 (lone surrogates, quotes, control characters included): JSON.stringify escapes them, and so must the text.
const text = fc.oneof(fc.string(), fc.string({ unit: "binary" }), fc.constantFrom("", '"', "\\", "\n", "\u2028", "\ud800", "名🦊"));
const user: fc.Arbitrary<UserRecord> = fc.record({
  id: fc.nat(),
  relationId: text,
  name: text,
  avatar: text,
  addresses: fc.array(text, { maxLength: 3 }),
  social: fc.option(fc.record({ username: text, name: text, avatar: text }), { nil: null }),
  game: fc.option(fc.record({ gameId: text, name: text, avatar: text }), { nil: null }),
});

describe("relationshipGraphText", () => {
  it("writes what stringifying each entry whole writes, for any records and descriptions", () => {
    fc.assert(
      fc.property(fc.array(fc.record({ user, description: text }), { maxLength: 8 }), (items) => {
        expect(relationshipGraphText(items)).toBe(reference(items));
        // Again with the same record objects, now with their text kept, and other descriptions.
        const again = items.map(({ user: peer }, i) => ({ user: peer, description: `${i}` }));
        expect(relationshipGraphText(again)).toBe(reference(again));
        expect(JSON.parse(relationshipGraphText(again))).toEqual(JSON.parse(reference(again)));
      }),
      { seed: 20261127, numRuns: 500 },
    );
  });

  it("shows a changed user as changed: a new record object gets a text of its own", () => {
    const before: UserRecord = { id: 1, relationId: "u1", name: "Before", avatar: "", addresses: ["0xa"], social: null, game: null };
    expect(relationshipGraphText([{ user: before, description: "d" }])).toContain('"name":"Before"');
    const after: UserRecord = { ...before, name: "After", social: { username: "x", name: "X", avatar: "" } };
    const page = relationshipGraphText([{ user: after, description: "d" }]);
    expect(page).toContain('"name":"After"');
    expect(page).not.toContain("Before");
    expect(page).toBe(reference([{ user: after, description: "d" }]));
  });
});
