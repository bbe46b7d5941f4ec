import { describe, expect, it } from "vitest";
import { encodeCommands } from "../../src/store/redis/resp/encoder.js";
import { GroupedMembers, type GroupedMembersOptions } from "../../src/store/redis/grouped-commands.js";
import { FRIEND_DESCRIPTIONS, USER_SETS } from "../../src/store/redis/keys.js";
import { BulkStrings, CommandBuffer } from "../../src/store/redis/resp/command-buffer.js";
import { ARGS_PER_COMMAND } from "../../src/store/redis/command-chunks.js";
import { createPrng } from "../../src/synthetic/prng.js";

/** A group of `count` random members over `subjects` keys, with values for HSET. */
function randomGroup(seed: string, command: GroupedMembersOptions["command"], subjects: number, count: number, shared?: BulkStrings): GroupedMembers {
  const rng = createPrng(seed);
  const members = Array.from({ length: 50 }, (_, i) => (i % 7 === 0 ? `é${i}✓` : String(i)));
  // Value 8 is longer than the bulk strings copied byte by byte.
  const values = command === "HSET" ? Array.from({ length: 9 }, (_, i) => (i === 0 ? "" : i === 8 ? `${"long ".repeat(40)}✓` : `v${i} 🛡️`)) : undefined;
  const group = new GroupedMembers({
    command,
    // Every fifth key is not ASCII: CommandBuffer writes the others byte by byte, these as UTF-8.
    keyOf: (subject) => (subject % 5 === 4 ? `clé:${subject}` : `k:${subject}`),
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
function encodeAll(group: GroupedMembers): { text: string; count: number; yielded: number[] } {
  // A small window, so that encoding grows it many times.
  const window = new CommandBuffer(16);
  const yielded = [...group.encodeInto(window)];
  const { bytes, count } = window.take();
  return { text: Buffer.from(bytes).toString("utf8"), count, yielded };
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
    const { text, count: encoded, yielded } = encodeAll(randomGroup(seed, command, subjects, count));
    expect(text).toBe(encodeCommands(commands));
    expect(encoded).toBe(commands.length);
    expect(yielded).toEqual(commands.map((args) => args.length - 2));
    expect(Math.max(...yielded)).toBeLessThanOrEqual(ARGS_PER_COMMAND);
  });

  it("writes a family of per-user keys from its prefix and the ids, as the keys' texts spell them", () => {
    const rng = createPrng("user keys");
    // Ids of every length a UserId may have, 0 and powers of ten among them.
    const ids = [0, 1, 9, 10, 99, 100, 12_345, 999_999, 1_000_000, 2 ** 31, 2 ** 53 - 1, ...Array.from({ length: 40 }, () => 1 + rng.int(250_000))];
    const members = ids.map(String);
    for (const [family, values] of [[USER_SETS.friends, undefined], [FRIEND_DESCRIPTIONS, ["", "desc ✓"]]] as const) {
      const make = (userKeys: boolean) => {
        const group = new GroupedMembers({
          command: values ? "HSET" : "SADD",
          ...(userKeys ? { userKeys: { family, ids } } : { keyOf: (subject: number) => family.key(ids[subject]!) }),
          subjects: ids,
          members,
          capacity: 600,
          values,
        });
        const picks = createPrng(family.prefix);
        for (let i = 0; i < 600; i++) group.add(picks.int(ids.length), picks.int(ids.length), values ? picks.int(values.length) : 0);
        return group;
      };
      const expected = encodeCommands([...make(false).commands()]);
      expect(expected).toContain(`$${family.prefix.length + 16}\r\n${family.prefix}9007199254740991\r\n`);
      expect(encodeAll(make(true)).text).toBe(expected);
    }
  });

  it("lets the caller empty the window between commands, and shares members' bulk strings across groups", () => {
    const shared = new BulkStrings(Array.from({ length: 50 }, (_, i) => (i % 7 === 0 ? `é${i}✓` : String(i))));
    const groups = [randomGroup("a", "SADD", 20, 900, shared), randomGroup("b", "SREM", 20, 900, shared)];
    const expected = encodeCommands(groups.flatMap((group) => [...group.commands()]));
    const taken: Uint8Array[] = [];
    const window = new CommandBuffer(64);
    for (const group of groups) {
      for (const args of group.encodeInto(window)) {
        expect(args).toBeGreaterThan(0);
        if (window.count === 3) {
          const { bytes, count } = window.take();
          expect(count).toBe(3);
          taken.push(bytes);
        }
      }
    }
    taken.push(window.take().bytes);
    // Each window's bytes stay as they were taken while the next ones are written.
    expect(Buffer.concat(taken).toString("utf8")).toBe(expected);
  });

  it("encodes nothing for an empty group", () => {
    const { text, count, yielded } = encodeAll(randomGroup("empty", "SADD", 5, 0));
    expect({ text, count }).toEqual({ text: "", count: 0 });
    expect(yielded).toEqual([]);
  });
});

describe("CommandBuffer", () => {
  it("appends commands of texts as resp/encoder.ts spells them: any length, count, or character", () => {
    const rng = createPrng("resp-window");
    const pieces = ["a", "0", " ", "é", "✓", "🛡️", "\r\n", "rg:friends:"];
    const text = () => Array.from({ length: [0, 1, 9, 10, 99, 100, 1_000][rng.int(7)]! }, () => pieces[rng.int(rng.int(3) === 0 ? pieces.length : 3)]).join("");
    const commands = Array.from({ length: 300 }, () => Array.from({ length: 1 + [0, 2, 8, 9, 10, 120][rng.int(6)]! }, text));
    const window = new CommandBuffer(8);
    for (const command of commands) window.appendCommand(command);
    const { bytes, count } = window.take();
    expect(count).toBe(commands.length);
    expect(Buffer.from(bytes).toString("utf8")).toBe(encodeCommands(commands));
  });

  it("appends a command whose last argument is bytes, any bytes, as RESP; take() hands them over and starts empty", () => {
    const window = new CommandBuffer(8);
    const value = Uint8Array.from({ length: 300 }, (_, i) => i % 256);
    window.appendCommandWithBytes(["SET", "kéy"], value);
    window.appendCommandWithBytes(["SET", "k2"], new Uint8Array(0));
    const { bytes, count } = window.take();
    expect(count).toBe(2);
    const expected = Buffer.concat([Buffer.from("*3\r\n$3\r\nSET\r\n$4\r\nkéy\r\n$300\r\n"), value, Buffer.from("\r\n*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$0\r\n\r\n")]);
    expect(Buffer.from(bytes).equals(expected)).toBe(true);
    const next = window.take();
    expect([next.bytes.byteLength, next.count]).toEqual([0, 0]);
    // What was taken is not written again by what comes next.
    window.appendText("*1\r\n$4\r\nPING\r\n");
    expect(Buffer.from(bytes).equals(expected)).toBe(true);
  });
});
