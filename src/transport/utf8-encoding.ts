import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";

/** Strings up to this length are tried as ASCII first; longer ones go straight to Buffer. */
const ASCII_FAST_PATH_MAX = 64;

/**
 * Makes protobuf-es encode strings to UTF-8 without TextEncoder. On Node 20, TextEncoder.encode
 * crosses into C++ for every string, and relgraph's replies are dozens of short strings (ids, names,
 * URLs, addresses): with it, toBinary of a small MutualFriend reply took several times as long as
 * without. Decoding and UTF-8 validation stay protobuf-es's own. The bytes are identical:
 * Buffer, like TextEncoder, writes a lone surrogate as U+FFFD. Process-wide, and idempotent.
 */
export function useFastUtf8Encoding(): void {
  configureTextEncoding({ ...getTextEncoding(), encodeUtf8 });
}

function encodeUtf8(text: string): Uint8Array<ArrayBuffer> {
  const length = text.length;
  if (length > ASCII_FAST_PATH_MAX) return viaBuffer(text);
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code > 0x7f) return viaBuffer(text);
    bytes[i] = code;
  }
  return bytes;
}

/** Node's own UTF-8 encoder. Small strings come from Buffer's shared pool, never a SharedArrayBuffer. */
function viaBuffer(text: string): Uint8Array<ArrayBuffer> {
  return Buffer.from(text, "utf8") as Uint8Array<ArrayBuffer>;
}
