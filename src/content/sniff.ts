/** How much of a file the sniffers look at. */
export const SNIFF_BYTES = 8192;

const utf8 = new TextDecoder('utf-8', { fatal: true });

export type TextEncodingGuess = 'utf-8' | 'utf-16le' | 'utf-16be' | null;

/**
 * Guesses whether bytes are text, by content rather than extension. UTF-16
 * needs its BOM; UTF-8 must decode strictly (a multi-byte sequence cut off by
 * the end of a sample is allowed) and contain no NUL byte.
 */
export function detectTextEncoding(bytes: Uint8Array, isWholeFile: boolean): TextEncodingGuess {
  if (bytes.length >= 2) {
    if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
    if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  }
  if (bytes.includes(0)) return null;
  let sample = bytes;
  if (!isWholeFile) sample = trimPartialUtf8(bytes);
  try {
    utf8.decode(sample);
    return 'utf-8';
  } catch {
    return null;
  }
}

/** Drops a UTF-8 sequence that a sample boundary cut in two. */
function trimPartialUtf8(bytes: Uint8Array): Uint8Array {
  let end = bytes.length;
  for (let back = 1; back <= 3 && back <= bytes.length; back++) {
    const b = bytes[bytes.length - back]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte
    if (b >= 0xc0) {
      const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
      if (back < need) end = bytes.length - back;
    }
    break;
  }
  return bytes.subarray(0, end);
}
