import {
  create,
  isMessage,
  ScalarType,
  toBinary,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { isPlainMessage } from "./plain-message.js";

/**
 * Binary Protobuf of a message, or of its init shape (absent fields take their defaults): byte for
 * byte what protobuf-es's toBinary writes of the message, for plain messages (plain-message.ts).
 *
 * toBinary builds every nested message in a writer of its own and copies it into its parent, and
 * each string through a temporary array: a page of users took more than the rest of a gRPC call. Here one pass over per-message plans (planOf) builds the reply as a byte string and
 * Buffer.from copies it once. The earlier two-pass writer into a Buffer spent most of its time in
 * polymorphic reads of the descriptors and in per-byte loops, a large part of a gRPC MutualFriend call's
 * profile (bench/README.md). Any other message, a value toBinary
 * would refuse, or unknown fields take toBinary itself, so its output and its errors stay the reference.
 *
 * `reserve` bytes are left unwritten at the start, for the caller's framing (a gRPC envelope's
 * prefix), so that the message is not copied once more behind it.
 */
export function toBinaryFast<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc> | MessageInitShape<Desc>, reserve = 0): Uint8Array {
  const generic = () => {
    const bytes = toBinary(schema, isMessage(message, schema) ? message : create(schema, message as MessageInitShape<Desc>));
    if (reserve === 0) return bytes;
    const framed = Buffer.allocUnsafe(reserve + bytes.length);
    framed.set(bytes, reserve);
    return framed;
  };
  if (!isPlainMessage(schema)) return generic();
  let bytes: string;
  try {
    bytes = encode(planOf(schema), message as Fields);
  } catch (err) {
    if (err === NOT_PLAIN) return generic();
    throw err;
  }
  if (reserve === 0) return Buffer.from(bytes, "latin1");
  const framed = Buffer.allocUnsafe(reserve + bytes.length);
  framed.write(bytes, reserve, "latin1");
  return framed;
}

type Fields = Record<string, unknown> & { $unknown?: unknown[] };

/** Thrown by measure() for what only toBinary handles. */
const NOT_PLAIN = Symbol("not plain");

const enum Wire {
  Varint = 0,
  LengthDelimited = 2,
  Fixed32 = 5,
}

/** How a field is written; one kind per shape of DescField that a plain message has. */
const enum Kind {
  Scalar,
  Message,
  MessageList,
  PackedList,
  ScalarList,
}

/*
 * Each message's fields are turned once into FieldPlans, all of one class, in field-number order
 * (the order toBinary writes them in). protobuf-es's DescField objects come in several shapes (one
 * per field kind), so walking them directly made every property read in the loops below
 * polymorphic: measure() and write() were most of a gRPC call's encoding (`node --cpu-prof`, 13.6 µs
 * for a page of 8 users against 3 µs with plans).
 */
class FieldPlan {
  constructor(
    readonly localName: string,
    readonly kind: Kind,
    /** The scalar type (Scalar, PackedList, ScalarList); 0 otherwise. */
    readonly scalar: ScalarType,
    /** Implicit presence: the zero value is not written. */
    readonly implicit: boolean,
    /** The field's tag with its wire type (for a packed list: length-delimited), as bytes. */
    readonly tagBytes: string,
    /** The nested message's plan (Message, MessageList), set once every plan of a recursive message exists. */
    public nested: MessagePlan | null,
  ) {}
}

interface MessagePlan {
  fields: FieldPlan[];
}

const plans = new WeakMap<DescMessage, MessagePlan>();

/** The message's plan, made on first use; called only for plain messages (isPlainMessage). */
function planOf(schema: DescMessage): MessagePlan {
  let plan = plans.get(schema);
  if (plan !== undefined) return plan;
  plan = { fields: [] };
  // Cached before its fields are planned, so that a recursive message finds itself.
  plans.set(schema, plan);
  for (const field of [...schema.fields].sort((a, b) => a.number - b.number)) {
    let kind: Kind;
    let scalar: ScalarType = 0 as ScalarType;
    let wire: Wire = Wire.LengthDelimited;
    let nested: DescMessage | null = null;
    if (field.fieldKind === "scalar") {
      kind = Kind.Scalar;
      scalar = field.scalar;
      wire = wireOf(scalar);
    } else if (field.fieldKind === "message") {
      kind = Kind.Message;
      nested = field.message;
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      kind = Kind.MessageList;
      nested = field.message;
    } else if (field.fieldKind === "list" && field.listKind === "scalar") {
      scalar = field.scalar;
      kind = field.packed ? Kind.PackedList : Kind.ScalarList;
      if (!field.packed) wire = wireOf(scalar);
    } else {
      throw new Error(`${schema.typeName}.${field.name} is not plain`);
    }
    const tag = ((field.number << 3) | wire) >>> 0;
    const implicit = field.fieldKind === "scalar" && field.presence === FeatureSet_FieldPresence.IMPLICIT;
    plan.fields.push(new FieldPlan(field.localName, kind, scalar, implicit, varintBytes(tag), nested === null ? null : planOf(nested)));
  }
  return plan;
}

/**
 * The message's fields as a byte string: one char per byte (latin1), the order toBinary writes them
 * in. A nested message is encoded first and prefixed with its length, so one pass does it all: V8
 * joins strings without copying them, and Buffer.from(…, "latin1") copies the whole reply once.
 */
function encode(messagePlan: MessagePlan, message: Fields): string {
  if (message.$unknown !== undefined && message.$unknown.length > 0) throw NOT_PLAIN;
  let out = "";
  const fields = messagePlan.fields;
  for (let f = 0; f < fields.length; f++) {
    const field = fields[f]!;
    const value = message[field.localName];
    switch (field.kind) {
      case Kind.Scalar:
        if (!isSet(field, value)) break;
        out += field.tagBytes + scalarBytes(field.scalar, value);
        break;
      case Kind.Message:
        if (value == null) break;
        out += field.tagBytes + lengthDelimited(encode(field.nested!, value as Fields));
        break;
      case Kind.MessageList: {
        const items = (value ?? EMPTY) as unknown[];
        for (let i = 0; i < items.length; i++) out += field.tagBytes + lengthDelimited(encode(field.nested!, items[i] as Fields));
        break;
      }
      case Kind.PackedList: {
        const items = (value ?? EMPTY) as unknown[];
        if (items.length === 0) break;
        let inner = "";
        for (let i = 0; i < items.length; i++) inner += scalarBytes(field.scalar, items[i]);
        out += field.tagBytes + lengthDelimited(inner);
        break;
      }
      case Kind.ScalarList: {
        const items = (value ?? EMPTY) as unknown[];
        for (let i = 0; i < items.length; i++) out += field.tagBytes + scalarBytes(field.scalar, items[i]);
        break;
      }
    }
  }
  return out;
}

const EMPTY: readonly unknown[] = [];

/** A length-delimited payload: its byte length as a varint, then the bytes. */
function lengthDelimited(bytes: string): string {
  return varintBytes(bytes.length) + bytes;
}

/** Whether toBinary writes a singular scalar: implicit presence skips the zero value. */
function isSet(field: FieldPlan, value: unknown): boolean {
  if (value === undefined) return false;
  if (!field.implicit) return true;
  return value !== "" && value !== 0 && value !== false;
}

function wireOf(type: ScalarType): Wire {
  if (type === ScalarType.STRING) return Wire.LengthDelimited;
  return type === ScalarType.FIXED32 || type === ScalarType.SFIXED32 ? Wire.Fixed32 : Wire.Varint;
}

const INT32_MIN = -0x80000000;
const INT32_MAX = 0x7fffffff;
const UINT32_MAX = 0xffffffff;

/** One scalar value's bytes (a string: length-delimited); throws NOT_PLAIN for what toBinary must judge. */
function scalarBytes(type: ScalarType, value: unknown): string {
  switch (type) {
    case ScalarType.STRING:
      if (typeof value !== "string") throw NOT_PLAIN;
      return lengthDelimited(utf8Bytes(value));
    case ScalarType.BOOL:
      if (typeof value !== "boolean") throw NOT_PLAIN;
      return value ? "\x01" : "\x00";
    case ScalarType.INT32:
      if (!Number.isInteger(value) || (value as number) < INT32_MIN || (value as number) > INT32_MAX) throw NOT_PLAIN;
      return (value as number) < 0 ? negativeInt32Bytes(value as number) : varintBytes(value as number);
    case ScalarType.UINT32:
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > UINT32_MAX) throw NOT_PLAIN;
      return varintBytes(value as number);
    case ScalarType.SINT32:
      if (!Number.isInteger(value) || (value as number) < INT32_MIN || (value as number) > INT32_MAX) throw NOT_PLAIN;
      return varintBytes(zigzag(value as number));
    case ScalarType.FIXED32:
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > UINT32_MAX) throw NOT_PLAIN;
      return fixed32Bytes(value as number);
    case ScalarType.SFIXED32:
      if (!Number.isInteger(value) || (value as number) < INT32_MIN || (value as number) > INT32_MAX) throw NOT_PLAIN;
      return fixed32Bytes((value as number) >>> 0);
    default:
      throw NOT_PLAIN;
  }
}

/**
 * A string's UTF-8 bytes, one char per byte. ASCII (its UTF-8 length is its UTF-16 length only
 * then) is its own encoding; anything else goes through Node's encoder, which writes a lone
 * surrogate as U+FFFD, as TextEncoder does.
 */
function utf8Bytes(text: string): string {
  if (Buffer.byteLength(text, "utf8") === text.length) return text;
  return Buffer.from(text, "utf8").toString("latin1");
}

/** One-char strings of every byte value, so that small varints cost no allocation. */
const BYTE = Array.from({ length: 256 }, (_, b) => String.fromCharCode(b));

/** An unsigned 32-bit varint. */
function varintBytes(value: number): string {
  let v = value >>> 0;
  if (v < 0x80) return BYTE[v]!;
  let out = "";
  while (v > 0x7f) {
    out += BYTE[(v & 0x7f) | 0x80]!;
    v >>>= 7;
  }
  return out + BYTE[v]!;
}

/** A negative int32 as protobuf writes it: the two's complement 64-bit value as a ten-byte varint. */
function negativeInt32Bytes(value: number): string {
  let low = value >>> 0;
  let out = "";
  for (let i = 0; i < 4; i++) {
    out += BYTE[(low & 0x7f) | 0x80]!;
    low >>>= 7;
  }
  // The high 32 bits are all ones: four low bits of `low` and three of them make the fifth byte.
  return out + BYTE[low | 0x70 | 0x80]! + "\xff\xff\xff\xff\x01";
}

/** Little-endian four bytes. */
function fixed32Bytes(value: number): string {
  return BYTE[value & 0xff]! + BYTE[(value >>> 8) & 0xff]! + BYTE[(value >>> 16) & 0xff]! + BYTE[value >>> 24]!;
}

function zigzag(value: number): number {
  return ((value << 1) ^ (value >> 31)) >>> 0;
}
