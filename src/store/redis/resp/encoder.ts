/** Commands in RESP's array-of-bulk-strings form, as one string: one socket write per batch. */
export function encodeCommands(commands: readonly string[][]): string {
  let text = "";
  for (const args of commands) {
    text += `*${args.length}\r\n`;
    for (const arg of args) text += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
  }
  return text;
}

/** A RESP bulk string: `$`, the text's length in UTF-8 bytes, the text; encodeCommands writes each argument so. */
export function bulkString(text: string): string {
  return `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
}
