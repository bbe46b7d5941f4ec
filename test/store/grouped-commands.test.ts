import { describe, expect, it } from "vitest";
import { encodeCommands } from "../../src/fast/resp/encoder.js";
import type { EncodedCommands } from "../../src/store/redis/own-connections.js";
import { BulkStrings, GroupedMembers, type GroupedMembersOptions } from "../../src/store/redis/grouped-commands.js";
import { ARGS_PER_COMMAND } from "../../src/store/redis/set-reads.js";
import { createPrng } from "../../src/ingest/prng.js";

/** A group of `count` random members over `subjects` keys, with values for HSET. */
function randomGroup(seed: string, command: GroupedMembersOptions["command"], subjects: number, count: number, shared?: BulkStrings): GroupedMembers {
  const rng = createPrng(seed);
  const members = Array.from({ length: 50 }, (_, i) => (i % 7 === 0 ? `é${i}✓` : String(i)));
  const values = command === "HSET" ? Array.from({ length: 9 }, (_, i) => (i === 0 ? "" : `v${i} 🛡️`)) : undefined;
  const group = new GroupedMembers({
    command,
    keyOf: (subject) => `k:${subject}`,
    subjects: { length: subjects },
    members,
    capacity: count,
    values,
    memberBulks: shared,
  });
  for (let i = 0; i < count; i++) group.add(rng.int(subjects), rng.int(members.length), values ? rng.int(values.length) : 0);
  return group;
}

/** encodeInto's whole output, and the counts it yielded. */
function encodeAll(group: GroupedMembers): { window: EncodedCommands; yielded: number[] } {
  const window: EncodedCommands = { text: "", count: 0 };
  return { window, yielded: [...group.encodeInto(window)] };
}

describe("GroupedMembers.encodeInto", () => {
  it.each([
    ["SADD", 1, 2_600], // one key past two commands' worth of members
    ["SREM", 40, 3_000],
    ["HDEL", 3, 10],
    ["HSET", 2, 1_700], // field and value pairs: 500 to a command
    ["HSET", 30, 400],
  ] as const)("encodes %s of %i keys (%i members) as RESP of exactly the commands it makes", (command, subjects, count) => {
    const seed = `${command}:${subjects}:${count}`;
    const commands = [...randomGroup(seed, command, subjects, count).commands()];
    const { window, yielded } = encodeAll(randomGroup(seed, command, subjects, count));
    expect(window.text).toBe(encodeCommands(commands));
    expect(window.count).toBe(commands.length);
    expect(yielded).toEqual(commands.map((args) => args.length - 2));
    expect(Math.max(...yielded)).toBeLessThanOrEqual(ARGS_PER_COMMAND);
  });

  it("lets the caller empty the window between commands, and shares members' bulk strings across groups", () => {
    const shared = new BulkStrings(Array.from({ length: 50 }, (_, i) => (i % 7 === 0 ? `é${i}✓` : String(i))));
    const groups = [randomGroup("a", "SADD", 20, 900, shared), randomGroup("b", "SREM", 20, 900, shared)];
    const expected = encodeCommands(groups.flatMap((group) => [...group.commands()]));
    let sent = "";
    const window: EncodedCommands = { text: "", count: 0 };
    for (const group of groups) {
      for (const args of group.encodeInto(window)) {
        expect(args).toBeGreaterThan(0);
        if (window.count === 3) {
          sent += window.text;
          window.text = "";
          window.count = 0;
        }
      }
    }
    expect(sent + window.text).toBe(expected);
  });

  it("encodes nothing for an empty group", () => {
    const { window, yielded } = encodeAll(randomGroup("empty", "SADD", 5, 0));
    expect(window).toEqual({ text: "", count: 0 });
    expect(yielded).toEqual([]);
  });
});
