import { sortedByKey } from "../batch.js";
import type { UserKeys } from "./keys.js";
import { BulkStrings, type CommandBuffer } from "./resp/command-buffer.js";
import { bulkString } from "./resp/encoder.js";
import { ARGS_PER_COMMAND } from "./command-chunks.js";

/*
 * Writes grouped by key. A unit of changes touches keys all over the graph, and sending one command
 * per member made per-command costs (encoding and queueing here, parsing and dispatch in Redis) most
 * of the work. Both classes here turn many (key, member) changes into one command per key, split
 * every ARGS_PER_COMMAND arguments. ARGS_PER_COMMAND is even, so HSET field/value pairs never
 * straddle two commands.
 */

/**
 * How GroupedMembers names a subject's key: a function of its index, or, for a family of per-user
 * keys, the family and the subjects' UserIds, from which encodeInto writes the keys' bytes without
 * making their texts.
 */
export type GroupKeys = { keyOf: (subject: number) => string; userKeys?: undefined } | { keyOf?: undefined; userKeys: { family: UserKeys; ids: ArrayLike<number> } };

/** Options of GroupedMembers. */
export type GroupedMembersOptions = GroupKeys & {
  command: "SADD" | "SREM" | "HSET" | "HDEL";
  /** The subjects, by index; read when commands are made, so it may still grow while members are added. */
  subjects: { readonly length: number };
  /** Member texts (SADD members, HSET fields), by index; read when commands are made. */
  members: readonly string[];
  /** How many members will be added, at most. */
  capacity: number;
  /** HSET value texts, by index. */
  values?: readonly string[];
  /** The members' bulk strings, when shared with other groups over the same member texts (encodeInto). */
  memberBulks?: BulkStrings;
};

/**
 * Members of one family of keys (SADD or SREM members, HDEL fields, or HSET fields with their
 * values), in typed columns of indexes: the bulk path, for the millions of relation and asset
 * records of a load, and the edge deletes of a unit.
 * Entries of one key keep their order, so a field set twice ends with its last value, as if the
 * records were sent one by one.
 */
export class GroupedMembers {
  private readonly subjects: Uint32Array;
  private readonly members: Uint32Array;
  private readonly valueIndexes: Uint32Array;
  private length = 0;

  constructor(private readonly options: GroupedMembersOptions) {
    this.subjects = new Uint32Array(options.capacity);
    this.members = new Uint32Array(options.capacity);
    this.valueIndexes = new Uint32Array(options.values ? options.capacity : 0);
  }

  /** Arguments the commands will carry besides command names and keys. */
  get args(): number {
    return this.options.values ? 2 * this.length : this.length;
  }

  /** Adds a member, or for HSET a field with the value values[value]. */
  add(subject: number, member: number, value = 0): void {
    if (this.options.values) this.valueIndexes[this.length] = value;
    this.subjects[this.length] = subject;
    this.members[this.length++] = member;
  }

  /** The key of a subject, by index. */
  private keyOf(subject: number): string {
    const { keyOf, userKeys } = this.options;
    return keyOf ? keyOf(subject) : userKeys.family.key(userKeys.ids[subject]!);
  }

  *commands(): Generator<string[]> {
    const { subjects, members, valueIndexes, length } = this;
    const { command, values } = this.options;
    const memberTexts = this.options.members;
    const order = sortedByKey(subjects.subarray(0, length), this.options.subjects.length);
    for (let start = 0; start < length; ) {
      const subject = subjects[order[start]!]!;
      const key = this.keyOf(subject);
      let args = [command, key];
      let k = start;
      for (; k < length && subjects[order[k]!] === subject; k++) {
        const entry = order[k]!;
        args.push(memberTexts[members[entry]!]!);
        if (values) args.push(values[valueIndexes[entry]!]!);
        if (args.length - 2 >= ARGS_PER_COMMAND) {
          yield args;
          args = [command, key];
        }
      }
      if (args.length > 2) yield args;
      start = k;
    }
  }

  /**
   * The same commands, in the same order and split alike, appended to `window` in RESP form; yields
   * each command's argument count (members, and values for HSET) as it is appended, so that the
   * caller can send the window when it is full (CommandBuffer.take). The path of a writer that takes
   * encoded bytes (BulkWriter.writeEncoded): a member's bulk string is encoded once however many keys
   * it goes to and copied from there, and no argument array, string or rope is built per member
   * (bench/README.md, "The writer, third pass" and "fourth pass").
   */
  *encodeInto(window: CommandBuffer): Generator<number> {
    const { subjects, members, valueIndexes, length } = this;
    const { command, values } = this.options;
    const memberBulks = this.options.memberBulks ?? new BulkStrings(this.options.members);
    const valueBulks = values ? new BulkStrings(values) : null;
    const perMember = values ? 2 : 1;
    const head = Buffer.from(bulkString(command));
    const userKeys = this.options.userKeys;
    const keyPrefix = userKeys ? Buffer.from(userKeys.family.prefix) : null;
    const order = sortedByKey(subjects.subarray(0, length), this.options.subjects.length);
    for (let start = 0; start < length; ) {
      const subject = subjects[order[start]!]!;
      let end = start + 1;
      while (end < length && subjects[order[end]!] === subject) end++;
      const key = keyPrefix ? null : this.keyOf(subject);
      for (let at = start; at < end; ) {
        const stop = Math.min(end, at + ARGS_PER_COMMAND / perMember);
        window.appendArrayHeader(2 + (stop - at) * perMember);
        window.appendBytes(head);
        if (key === null) window.appendPrefixedDecimal(keyPrefix!, userKeys!.ids[subject]!);
        else window.appendBulkString(key);
        for (let k = at; k < stop; k++) {
          const entry = order[k]!;
          memberBulks.appendTo(window, members[entry]!);
          if (valueBulks) valueBulks.appendTo(window, valueIndexes[entry]!);
        }
        window.count++;
        yield (stop - at) * perMember;
        at = stop;
      }
      start = end;
    }
  }
}

/**
 * Set and hash member changes of any keys, added one at a time: the path for the scattered changes
 * of a unit (edge deletes, erasures, the reverse index of releases). Only for changes whose order
 * across keys, and across commands on one key, does not matter: a unit never adds and removes the
 * same member of a key here.
 */
export class KeyedCommands {
  /** Per command, each key's arguments so far (command and key first). */
  private readonly groups = { SADD: new Map<string, string[]>(), SREM: new Map<string, string[]>(), HDEL: new Map<string, string[]>() };
  /** Per command and family of per-user keys, each user's members so far. */
  private readonly families = { SADD: new Map<KeyOf, Map<number, string[]>>(), SREM: new Map<KeyOf, Map<number, string[]>>(), HDEL: new Map<KeyOf, Map<number, string[]>>() };

  /** SADD, SREM or HDEL of one member (field) of a key. */
  add(command: Command, key: string, member: string): void {
    const groups = this.groups[command];
    const args = groups.get(key);
    if (args) args.push(member);
    else groups.set(key, [command, key, member]);
  }

  /**
   * The same for the key keyOf(id) of a family of per-user keys (keyOf is one function for the
   * whole family): the key's text is made once per key rather than once per member.
   */
  addFor(command: Command, keyOf: KeyOf, id: number, member: string): void {
    let family = this.families[command].get(keyOf);
    if (!family) this.families[command].set(keyOf, (family = new Map()));
    const members = family.get(id);
    if (members) members.push(member);
    else family.set(id, [member]);
  }

  /** The commands, one per key and command (more for very large groups). */
  commands(): string[][] {
    const result: string[][] = [];
    const emit = (command: string, key: string, members: readonly string[]) => {
      for (let at = 0; at < members.length; at += ARGS_PER_COMMAND) result.push([command, key, ...members.slice(at, at + ARGS_PER_COMMAND)]);
    };
    for (const command of COMMANDS) {
      for (const [key, args] of this.groups[command]) {
        if (args.length - 2 <= ARGS_PER_COMMAND) result.push(args);
        else emit(command, key, args.slice(2));
      }
      for (const [keyOf, family] of this.families[command]) {
        for (const [id, members] of family) emit(command, keyOf(id), members);
      }
    }
    return result;
  }
}

type Command = "SADD" | "SREM" | "HDEL";
type KeyOf = (id: number) => string;
const COMMANDS: readonly Command[] = ["SADD", "SREM", "HDEL"];
