import { lstat, lstatSync, readdir, readdirSync, type Dirent, type Stats } from 'node:fs';
import { childPrefix } from '../fs-path.ts';
import type { Logger } from '../log.ts';

/**
 * Why an entry on disk is not served although no rule ignores it:
 * - `name`: its name is not valid UTF-8. Node reads it as a string with
 *   U+FFFD in place of the bad bytes, so no string path (hence no file URI)
 *   names it: an lstat or open of the decoded path misses it or, worse, hits
 *   a different file whose name has a real U+FFFD.
 * - `deep`: its path is longer than the OS allows (PATH_MAX, ENAMETOOLONG),
 *   so it cannot be stat'ed, listed or read by path.
 */
export type SkipReason = 'name' | 'deep';

const REASON_TEXT: Record<SkipReason, string> = {
  name: 'names that are not valid UTF-8 (no file URI can name them)',
  deep: 'paths longer than the OS path limit (ENAMETOOLONG)',
};

/** Example paths kept per reason (the count stays exact). */
const EXAMPLES_KEPT = 100;
/** Longest example shown in a warning; a too-deep path is thousands of bytes. */
const EXAMPLE_CHARS = 200;

/** The skips of one walk (a cold scan, or one reconcile): counted, with a few examples. */
export class SkipReport {
  readonly counts: Record<SkipReason, number> = { name: 0, deep: 0 };
  readonly examples: Record<SkipReason, string[]> = { name: [], deep: [] };

  /** `path` is already escaped (see escapeName) when it came from raw bytes. */
  add(reason: SkipReason, path: string): void {
    this.counts[reason]++;
    if (this.examples[reason].length < EXAMPLES_KEPT) this.examples[reason].push(path);
  }

  get total(): number {
    return this.counts.name + this.counts.deep;
  }
}

/**
 * Turns skip reports into stderr warnings: one line per reason per walk (a
 * count and one example), never one per entry, and nothing again for skips
 * already reported (the poll watcher walks the whole tree every few seconds).
 */
export class SkipWarnings {
  private readonly seen = new Set<string>();

  constructor(private readonly log: Logger) {}

  report(skips: SkipReport, during: string): void {
    for (const reason of ['name', 'deep'] as const) {
      const count = skips.counts[reason];
      if (count === 0) continue;
      const fresh = skips.examples[reason].filter((path) => !this.seen.has(path));
      if (fresh.length === 0) continue;
      // Bounded: a folder full of bad names must not grow this set without end.
      if (this.seen.size < 10_000) for (const path of fresh) this.seen.add(path);
      this.log.warn(
        `${during}: skipped ${count} ${count === 1 ? 'entry' : 'entries'} with ${REASON_TEXT[reason]}, e.g. ${shorten(fresh[0]!)}`,
      );
    }
  }
}

function shorten(text: string): string {
  return text.length <= EXAMPLE_CHARS ? text : `${text.slice(0, EXAMPLE_CHARS / 2)}…${text.slice(-EXAMPLE_CHARS / 2)}`;
}

/**
 * A name (or path) as text safe for one log line: valid UTF-8 stays as it is,
 * every byte of an invalid sequence becomes `\xNN`, and control characters
 * are escaped (`\n`, `\t`, `\x1b`), so a name can neither forge a log line
 * nor send a terminal escape.
 */
export function escapeName(bytes: Uint8Array | string): string {
  const buffer = typeof bytes === 'string' ? Buffer.from(bytes) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  let out = '';
  let i = 0;
  while (i < buffer.length) {
    const length = utf8SequenceLength(buffer, i);
    if (length === 0) {
      out += `\\x${buffer[i]!.toString(16).padStart(2, '0')}`;
      i++;
      continue;
    }
    const char = buffer.toString('utf8', i, i + length);
    out += escapeControl(char);
    i += length;
  }
  return out;
}

function escapeControl(char: string): string {
  const code = char.codePointAt(0)!;
  if (char === '\\') return '\\\\';
  if (char === '\n') return '\\n';
  if (char === '\r') return '\\r';
  if (char === '\t') return '\\t';
  if (code < 0x20 || (code >= 0x7f && code < 0xa0)) return `\\x${code.toString(16).padStart(2, '0')}`;
  return char;
}

/** Well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF): what decodes without U+FFFD. */
export function isValidUtf8(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; ) {
    const length = utf8SequenceLength(bytes, i);
    if (length === 0) return false;
    i += length;
  }
  return true;
}

/** Length of the well-formed UTF-8 sequence at `i` (1-4), or 0 when the byte there starts none. */
function utf8SequenceLength(b: Uint8Array, i: number): number {
  const c = b[i]!;
  if (c < 0x80) return 1;
  const cont = (k: number) => i + k < b.length && (b[i + k]! & 0xc0) === 0x80;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    const c1 = b[i + 1]!;
    if (c === 0xe0 && c1 < 0xa0) return 0; // overlong
    if (c === 0xed && c1 > 0x9f) return 0; // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    const c1 = b[i + 1]!;
    if (c === 0xf0 && c1 < 0x90) return 0; // overlong
    if (c === 0xf4 && c1 > 0x8f) return 0; // above U+10FFFF
    return 4;
  }
  return 0;
}

/** What one directory holds that may be served: its entries with valid names, and the raw bad names. */
export interface DirListing {
  entries: Dirent[];
  /** Names that are not valid UTF-8, as read (bytes). */
  invalidNames: Buffer[];
}

/**
 * readdir with file types, minus the entries whose name is not valid UTF-8.
 * Names are read as strings (the fast path); only a directory where some name
 * decoded with U+FFFD is read again as bytes to tell a bad name from a real
 * U+FFFD. Rejects with readdir's error.
 */
export function readServableDir(dir: string): Promise<DirListing> {
  return new Promise((resolve, reject) => {
    readdir(dir, { withFileTypes: true }, (error, entries) => {
      if (error) return reject(error);
      if (!entries.some((e) => e.name.includes('\uFFFD'))) return resolve({ entries, invalidNames: [] });
      readdir(dir, { withFileTypes: true, encoding: 'buffer' }, (rawError, raw) => {
        if (rawError) return reject(rawError);
        resolve(splitInvalidNames(raw));
      });
    });
  });
}

/** readServableDir, synchronous (for the scan's worker thread). Throws readdir's error. */
export function readServableDirSync(dir: string): DirListing {
  const entries = readdirSync(dir, { withFileTypes: true });
  if (!entries.some((e) => e.name.includes('\uFFFD'))) return { entries, invalidNames: [] };
  return splitInvalidNames(readdirSync(dir, { withFileTypes: true, encoding: 'buffer' }));
}

function splitInvalidNames(raw: Dirent<Buffer>[] | Dirent[]): DirListing {
  const kept: Dirent[] = [];
  const invalidNames: Buffer[] = [];
  for (const dirent of raw) {
    const name = dirent.name as unknown as Buffer;
    if (!isValidUtf8(name)) {
      invalidNames.push(name);
      continue;
    }
    // A Dirent's name is a plain field: keep the object (and its type), give it the string name.
    (dirent as unknown as { name: string }).name = name.toString('utf8');
    kept.push(dirent as unknown as Dirent);
  }
  return { entries: kept, invalidNames };
}

/** The escaped full path of a bad name in `dir`, for a warning. */
export function invalidPathText(dir: string, name: Buffer): string {
  return escapeName(Buffer.concat([Buffer.from(childPrefix(dir)), name]));
}

/**
 * lstat that says what became of the entry: its stats; `null` when it is gone
 * (removed since readdir: skipped silently); or the skip reason when the
 * path is too long. Other errors are treated as gone, as an unreadable entry
 * cannot be served anyway. Callback lstat: measurably cheaper than fs/promises.
 */
export function lstatEntry(path: string): Promise<Stats | null | 'deep'> {
  return new Promise((resolve) =>
    lstat(path, (error, stats) => resolve(error ? (error.code === 'ENAMETOOLONG' ? 'deep' : null) : stats)),
  );
}

/**
 * lstatEntry, synchronous (for the scan's worker thread), with a refusal for
 * want of permission told apart (`denied`: the folder holding it can be
 * listed but not searched, mode r--).
 */
export function lstatEntrySync(path: string): Stats | null | 'deep' | 'denied' {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENAMETOOLONG' ? 'deep' : code === 'EACCES' || code === 'EPERM' ? 'denied' : null;
  }
}
