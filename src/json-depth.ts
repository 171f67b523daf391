// How deep a JSON text nests, found without parsing it: JSON.parse takes any
// depth, at a cost, and what reads the result may recurse. Used on a client's
// messages (protocol/wire.ts) and on an embedding provider's answers.

/** Whether `text` opens more than `max` arrays or objects inside each other (strings skipped): one pass, no parse. */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
