// The text the content index keeps, cut into the passages that are embedded:
// whole lines, at most CHUNK_CHARS each, overlapping by about CHUNK_OVERLAP
// characters, and never across a place (a PDF page, a notebook cell, a sheet,
// a slide), so that a hit says "page 3" or "lines 120-164" as a text hit does.
import type { Place } from '../content/converters/types.ts';

/** Characters per chunk, about 400 tokens: within the context of every common embedding model (512 and up). */
export const CHUNK_CHARS = 1500;
export const CHUNK_OVERLAP = 200;

export interface Chunk {
  text: string;
  /** Offset in the whole text (UTF-16 code units). */
  offset: number;
  /** 1-based lines of the whole text the chunk covers, first and last. */
  lineStart: number;
  lineEnd: number;
  place?: Omit<Place, 'offset'>;
}

/**
 * Cuts `text` into chunks. Lines longer than `max` are cut into pieces of
 * `max`; blank-only chunks are left out (nothing to find there).
 */
export function chunkText(text: string, places: readonly Place[] = [], max = CHUNK_CHARS, overlap = CHUNK_OVERLAP): Chunk[] {
  const chunks: Chunk[] = [];
  // Segments: the text before the first place, then each place up to the next.
  const bounds = [0, ...places.map((p) => p.offset).filter((o) => o > 0 && o < text.length), text.length];
  const starts = [...new Set(bounds)].sort((a, b) => a - b);
  // Line of the character at an offset: 1 + the newlines before it (chunks overlap, so looked up, not walked).
  const newlines: number[] = [];
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) newlines.push(at);
  const lineOf = (offset: number) => {
    let lo = 0;
    let hi = newlines.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (newlines[mid]! < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  };
  for (let s = 0; s + 1 < starts.length; s++) {
    const from = starts[s]!;
    const to = starts[s + 1]!;
    const place = placeOf(places, from);
    // Pieces: lines (with their newline), long lines cut at `max`.
    const pieces: number[] = [from];
    for (let at = from; at < to; ) {
      const nl = text.indexOf('\n', at);
      let end = nl < 0 || nl >= to ? to : nl + 1;
      if (end - at > max) end = at + max;
      pieces.push(end);
      at = end;
    }
    let i = 0;
    while (i + 1 < pieces.length) {
      const start = pieces[i]!;
      let j = i + 1;
      while (j + 1 < pieces.length && pieces[j + 1]! - start <= max) j++;
      const end = pieces[j]!;
      const body = text.slice(start, end);
      if (body.trim() !== '') {
        // The last line is the one holding the chunk's last character other than its closing newline.
        const last = end - 1 > start && text.charCodeAt(end - 1) === 10 ? end - 2 : end - 1;
        chunks.push({ text: body, offset: start, lineStart: lineOf(start), lineEnd: lineOf(last), ...(place ? { place } : {}) });
      }
      if (j + 1 >= pieces.length) break;
      // Overlap: the next chunk starts at the earliest line boundary within `overlap` characters of this one's end,
      // past this one's start, and such that it reaches further than this one.
      let next = j;
      while (next - 1 > i && end - pieces[next - 1]! <= overlap) next--;
      while (next < j && pieces[j + 1]! - pieces[next]! > max) next++;
      i = next;
    }
  }
  return chunks;
}

function placeOf(places: readonly Place[], offset: number): Omit<Place, 'offset'> | undefined {
  let found: Place | undefined;
  for (const p of places) {
    if (p.offset > offset) break;
    found = p;
  }
  if (!found) return undefined;
  return { unit: found.unit, number: found.number, ...(found.name !== undefined ? { name: found.name } : {}) };
}
