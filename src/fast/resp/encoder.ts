/** Commands in RESP's array-of-bulk-strings form, as one string: one socket write per batch. */
export function encodeCommands(commands: readonly string[][]): string {
  let text = "";
  for (const args of commands) {
    text += `*${args.length}\r\n`;
    for (const arg of args) text += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
  }
  return text;
}
