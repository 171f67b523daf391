// The `edit` tool's text work, bounded so that no edit stalls the server:
// the replacements are applied to the file's bytes (UTF-8 is
// self-synchronising, so a byte match of valid UTF-8 is a character match),
// one at a time with the event loop free in between, and each remembers the
// span it changed. The diff is then made from those spans only: each group
// of nearby changed lines is diffed on its own (with a bound on the line
// differ's work, past which it is one hunk of removed then added lines), and
// the whole diff stops at DIFF_MAX_BYTES, saying what it left out. A 4 MiB
// file with 100 edits of 24 lines diffs 100 small regions, not 100,000 lines.
import { formatPatch, structuredPatch, type StructuredPatchHunk } from 'diff';
import { ToolFailure } from './tool.ts';

export interface Replacement {
  old_text: string;
  new_text: string;
}

/** A changed span of the edited bytes: [start, end) in the result, `beforeLength` bytes in the original. */
export interface ChangedSpan {
  start: number;
  end: number;
  beforeLength: number;
}

/**
 * Edits of files larger than this do their text work (replacements and
 * diff) one at a time per server, in arrival order: each piece of it is a
 * few milliseconds, so one such edit adds that much to another client's
 * turn; ten at once, each piece in every turn, added ten times that
 * (the queue: ServerContext.writes.largeEdits).
 */
export const LARGE_EDIT_BYTES = 256 * 1024;

/** The largest diff returned; past it the diff says how many hunks it left out. */
export const DIFF_MAX_BYTES = 256 * 1024;
/**
 * Line edits the differ may spend on one region before it gives it as one
 * hunk (Myers' diff is O(N·D)): a region is the changed lines of nearby
 * edits, so this binds only an edit that rewrites much at once.
 */
const DIFF_MAX_EDIT_LENGTH = 2000;
/** Time the differ may spend on one region (milliseconds), on top of DIFF_MAX_EDIT_LENGTH. */
const DIFF_REGION_MS = 20;
const CONTEXT = 3;

/**
 * Applies the replacements in order, each to the bytes the previous ones
 * left; each must match exactly once (overlapping occurrences count).
 * A generator: it yields after each replacement, so the caller can let the
 * event loop run (applyEditsAsync) or not (applyEdits).
 */
export function* applySteps(bytes: Buffer, edits: readonly Replacement[], shown: string): Generator<void, { after: Buffer; spans: ChangedSpan[] }> {
  const olds = edits.map((edit) => Buffer.from(edit.old_text));
  const news = edits.map((edit) => Buffer.from(edit.new_text));
  // One working buffer, as large as the text can grow, edited in place (memmove of the tail): no 4 MiB copy
  // and no 4 MiB of garbage per replacement.
  const capacity = bytes.length + news.reduce((sum, n, i) => sum + Math.max(0, n.length - olds[i]!.length), 0);
  const work = Buffer.allocUnsafe(capacity);
  bytes.copy(work);
  let length = bytes.length;
  let spans: ChangedSpan[] = [];
  for (const [i, old] of olds.entries()) {
    const text = work.subarray(0, length);
    const at = text.indexOf(old);
    const again = at < 0 ? -1 : text.indexOf(old, at + 1);
    if (at < 0 || again >= 0) {
      const count = at < 0 ? 0 : countMatches(text, old, at);
      const hint = count === 0 ? 'copy it exactly, whitespace and line breaks included' : 'add surrounding lines to make it unique';
      throw new ToolFailure(
        `Edit ${i + 1} of ${edits.length}: old_text matches ${count} times in ${shown}; it must match exactly once (${hint}). Nothing was changed.`,
      );
    }
    const replacement = news[i]!;
    work.copyWithin(at + replacement.length, at + old.length, length);
    replacement.copy(work, at);
    length += replacement.length - old.length;
    spans = recordChange(spans, at, old.length, replacement.length);
    yield;
  }
  return { after: work.subarray(0, length), spans };
}

/** applySteps to its end, at once. Pure. */
export function applyEdits(text: string, edits: readonly Replacement[], shown: string): string {
  const steps = applySteps(Buffer.from(text), edits, shown);
  for (let step = steps.next(); ; step = steps.next()) if (step.done) return step.value.after.toString();
}

/** applySteps with the event loop free between replacements. */
export async function applyEditsAsync(bytes: Buffer, edits: readonly Replacement[], shown: string): Promise<{ after: Buffer; spans: ChangedSpan[] }> {
  const steps = applySteps(bytes, edits, shown);
  for (let step = steps.next(); ; step = steps.next()) {
    if (step.done) return step.value;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Occurrences of `needle` from `from` on, overlapping ones included (`aa` is twice in `aaa`). */
function countMatches(haystack: Buffer, needle: Buffer, from: number): number {
  let count = 0;
  for (let at = haystack.indexOf(needle, from); at >= 0; at = haystack.indexOf(needle, at + 1)) count++;
  return count;
}

/**
 * The spans after replacing `removed` bytes at `at` (in the current bytes)
 * with `inserted` bytes: spans it touches merge with it, spans after it
 * shift. Sorted, disjoint, never touching. Pure.
 */
export function recordChange(spans: readonly ChangedSpan[], at: number, removed: number, inserted: number): ChangedSpan[] {
  const delta = inserted - removed;
  const before: ChangedSpan[] = [];
  const later: ChangedSpan[] = [];
  let start = at;
  let end = at + removed;
  // Bytes of the union that are no span's are the original's; each span brings its own original length.
  let spanned = 0;
  let original = 0;
  for (const span of spans) {
    if (span.end < at) before.push(span);
    else if (span.start > at + removed) later.push({ start: span.start + delta, end: span.end + delta, beforeLength: span.beforeLength });
    else {
      start = Math.min(start, span.start);
      end = Math.max(end, span.end);
      spanned += span.end - span.start;
      original += span.beforeLength;
    }
  }
  return [...before, { start, end: end + delta, beforeLength: end - start - spanned + original }, ...later];
}

export interface EditDiff {
  diff: string;
  /** Hunks left out past DIFF_MAX_BYTES (0: the diff is whole). */
  omittedHunks: number;
}

/** One group of nearby changes, as byte ranges of whole lines on both sides, and the line each starts at (1-based). */
interface Region {
  before: [number, number];
  after: [number, number];
  beforeLine: number;
  afterLine: number;
}

/**
 * The unified diff (`--- a/<shown>`, `+++ b/<shown>`, 3 lines of context) of
 * `before` -> `after`, given the spans that changed. A generator that yields
 * after each region, as applySteps does.
 */
export function* diffSteps(shown: string, before: Buffer, after: Buffer, spans: readonly ChangedSpan[], maxBytes = DIFF_MAX_BYTES): Generator<void, EditDiff> {
  const regions = regionsOf(before, after, spans);
  const hunks: StructuredPatchHunk[] = [];
  let bytes = 0;
  let omittedHunks = 0;
  for (const region of regions) {
    if (omittedHunks > 0) {
      omittedHunks++;
      continue;
    }
    const found = regionHunks(region, before, after);
    const size = found.reduce((sum, h) => sum + h.lines.reduce((n, line) => n + line.length + 1, 24), 0);
    if (bytes + size > maxBytes && hunks.length > 0) {
      omittedHunks += found.length;
      continue;
    }
    hunks.push(...found);
    bytes += size;
    yield;
  }
  if (hunks.length === 0 && regions.length === 0) return { diff: '', omittedHunks: 0 };
  const text = formatPatch({ oldFileName: `a/${shown}`, newFileName: `b/${shown}`, oldHeader: undefined, newHeader: undefined, hunks }, { includeIndex: false, includeUnderline: false, includeFileHeaders: true });
  return { diff: text, omittedHunks };
}

/** diffSteps to its end, at once. */
export function editDiff(shown: string, before: Buffer, after: Buffer, spans: readonly ChangedSpan[], maxBytes?: number): EditDiff {
  const steps = diffSteps(shown, before, after, spans, maxBytes);
  for (let step = steps.next(); ; step = steps.next()) if (step.done) return step.value;
}

/** diffSteps with the event loop free between regions. */
export async function editDiffAsync(shown: string, before: Buffer, after: Buffer, spans: readonly ChangedSpan[], maxBytes?: number): Promise<EditDiff> {
  const steps = diffSteps(shown, before, after, spans, maxBytes);
  for (let step = steps.next(); ; step = steps.next()) {
    if (step.done) return step.value;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The whole-file diff of two texts (one span: from the first byte that differs to the last). Pure. */
export function unifiedDiff(shown: string, before: string, after: string): string {
  const a = Buffer.from(before);
  const b = Buffer.from(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const spans = a.equals(b) ? [] : [{ start: head, end: b.length - tail, beforeLength: a.length - tail - head }];
  return editDiff(shown, a, b, spans, Number.MAX_SAFE_INTEGER).diff;
}

const NL = 0x0a;

/** Start of the line holding byte `at`. */
function lineStart(buf: Buffer, at: number): number {
  return at <= 0 ? 0 : buf.lastIndexOf(NL, at - 1) + 1;
}

/** End (after its newline) of the line holding byte `at - 1`, i.e. the first line boundary at or after `at`. */
function lineEnd(buf: Buffer, at: number): number {
  if (at > 0 && buf[at - 1] === NL) return at;
  const nl = buf.indexOf(NL, at);
  return nl < 0 ? buf.length : nl + 1;
}

/** Moves `n` whole lines back from a line start (clamped at 0). */
function linesBack(buf: Buffer, at: number, n: number): number {
  let pos = at;
  for (let i = 0; i < n && pos > 0; i++) pos = lineStart(buf, pos - 1);
  return pos;
}

/** Moves `n` whole lines on from a line boundary (clamped at the end). */
function linesOn(buf: Buffer, at: number, n: number): number {
  let pos = at;
  for (let i = 0; i < n && pos < buf.length; i++) {
    const nl = buf.indexOf(NL, pos);
    pos = nl < 0 ? buf.length : nl + 1;
  }
  return pos;
}

function countLines(buf: Buffer, from: number, to: number): number {
  let count = 0;
  for (let at = buf.indexOf(NL, from); at >= 0 && at < to; at = buf.indexOf(NL, at + 1)) count++;
  return count;
}

/**
 * The regions to diff: each span widened to whole lines plus CONTEXT lines
 * either side, on both sides at once (the bytes between spans are the same
 * in both), merged when they meet. Line numbers counted as it goes.
 */
function regionsOf(before: Buffer, after: Buffer, spans: readonly ChangedSpan[]): Region[] {
  const regions: Region[] = [];
  let shift = 0; // after offset - before offset, for bytes before the current span
  for (const span of spans) {
    const bStart = span.start - shift;
    const bEnd = bStart + span.beforeLength;
    // Widen in `before` (the same bytes as in `after` outside the span): to line starts, CONTEXT lines more.
    const from = linesBack(before, lineStart(before, bStart), CONTEXT);
    const toBefore = linesOn(before, lineEnd(before, bEnd), CONTEXT);
    const afterFrom = from + shift;
    const afterShift = shift + (span.end - span.start) - span.beforeLength;
    const toAfter = toBefore + afterShift;
    const last = regions.at(-1);
    if (last && from <= last.before[1]) {
      // The merged end lies past this span (in bytes both sides share), so this span's shift maps it.
      last.before[1] = Math.max(last.before[1], toBefore);
      last.after[1] = last.before[1] + afterShift;
    } else {
      regions.push({ before: [from, toBefore], after: [afterFrom, toAfter], beforeLine: 0, afterLine: 0 });
    }
    shift = afterShift;
  }
  let bLine = 1;
  let aLine = 1;
  let bAt = 0;
  let aAt = 0;
  for (const region of regions) {
    bLine += countLines(before, bAt, region.before[0]);
    aLine += countLines(after, aAt, region.after[0]);
    bAt = region.before[0];
    aAt = region.after[0];
    region.beforeLine = bLine;
    region.afterLine = aLine;
  }
  return regions;
}

/** The hunks of one region, with file line numbers: the line differ's, or past its bound one hunk of removed then added lines. */
function regionHunks(region: Region, before: Buffer, after: Buffer): StructuredPatchHunk[] {
  const a = before.toString('utf8', region.before[0], region.before[1]);
  const b = after.toString('utf8', region.after[0], region.after[1]);
  const patch = structuredPatch('a', 'b', a, b, undefined, undefined, { context: CONTEXT, maxEditLength: DIFF_MAX_EDIT_LENGTH, timeout: DIFF_REGION_MS });
  const hunks = patch?.hunks ?? [oneHunk(a, b)];
  return hunks.map((h) => ({ ...h, oldStart: h.oldStart + region.beforeLine - 1, newStart: h.newStart + region.afterLine - 1 }));
}

/** The region as one hunk: the lines between the common head and tail, all removed, then all added. */
function oneHunk(before: string, after: string): StructuredPatchHunk {
  const split = (text: string) => {
    const lines = text.split('\n');
    const noNewline = lines.at(-1) !== '';
    if (!noNewline) lines.pop();
    return { lines, noNewline };
  };
  const a = split(before);
  const b = split(after);
  let head = 0;
  while (head < a.lines.length && head < b.lines.length && a.lines[head] === b.lines[head] && (head < a.lines.length - 1 || !a.noNewline)) head++;
  let tail = 0;
  while (tail < a.lines.length - head && tail < b.lines.length - head && a.lines[a.lines.length - 1 - tail] === b.lines[b.lines.length - 1 - tail] && a.noNewline === b.noNewline) tail++;
  const marker = '\\ No newline at end of file';
  const side = (s: { lines: string[]; noNewline: boolean }, sign: string) => {
    const out: string[] = [];
    const end = s.lines.length - tail;
    for (let i = head; i < end; i++) {
      out.push(`${sign}${s.lines[i]}`);
      if (i === s.lines.length - 1 && s.noNewline) out.push(marker);
    }
    return out;
  };
  const lines = [
    ...a.lines.slice(0, head).map((l) => ` ${l}`),
    ...side(a, '-'),
    ...side(b, '+'),
    ...a.lines.slice(a.lines.length - tail).map((l, i, all) => (i === all.length - 1 && a.noNewline ? [` ${l}`, marker] : [` ${l}`])).flat(),
  ];
  return { oldStart: 1, oldLines: a.lines.length, newStart: 1, newLines: b.lines.length, lines };
}
