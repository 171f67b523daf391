import { readFile, stat } from 'node:fs/promises';
import {
  close as fsClose,
  closeSync,
  constants,
  open as fsOpen,
  openSync,
  read as fsRead,
  readSync,
  type Stats,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from '../log.ts';
import { childUri, pathToUri, type Root } from '../uri.ts';
import { BINARY_FALLBACK_MIME, COLLECTION_MIME, TEXT_FALLBACK_MIME, extOf, mimeFromName } from '../content/mime.ts';
import { SNIFF_BYTES, detectTextEncoding } from '../content/sniff.ts';
import { EntryKind, type EntryRow } from '../entry.ts';
import { ALWAYS_EXCLUDED, type IgnoreRules } from './ignore.ts';
import { SkipReport, escapeName, invalidPathText, lstatEntry, readServableDir, type DirListing } from './servable.ts';

export interface ScanOptions {
  roots: readonly Root[];
  rules: IgnoreRules;
  log: Logger;
  /** Rows are handed over in batches of about this many. */
  batchSize?: number;
  /** Where entries that exist but cannot be served are counted (the caller warns once). */
  skips?: SkipReport;
  /** Kept up to date with the subtrees whose entries are not all handed over yet (a watermark for early pages). */
  frontier?: ScanFrontier;
}

/**
 * The directories whose subtrees may still hold entries the consumer has not
 * committed: a directory is open from the moment the walk knows of it until
 * the batch holding its entries has been taken (the generator resumes only
 * after its consumer committed the batch). Every entry not yet committed lies
 * under an open directory, so a key range that no open subtree touches is
 * complete in the index already.
 */
export class ScanFrontier {
  private readonly open = new Set<string>();

  add(uri: string): void {
    this.open.add(uri);
  }

  close(uri: string): void {
    this.open.delete(uri);
  }

  get size(): number {
    return this.open.size;
  }

  /**
   * True when no entry with a key in [from, to] (to null: unbounded) can
   * still be added by the walk. Keys of a subtree are the strings that start
   * with its directory's URI: it misses [from, to] when the directory is past
   * `to`, or before `from` without being a prefix of it.
   */
  settled(from: string, to: string | null): boolean {
    for (const dir of this.open) {
      if (to !== null && dir > to) continue;
      if (dir >= from || from.startsWith(dir)) return false;
    }
    return true;
  }
}

/** Rows in the scan's first batch; each next batch is twice as large, up to `batchSize`. */
const FIRST_BATCH = 128;

/** Directories read at once: each is a readdir and its lstats, mostly waiting on libuv's thread pool. */
const PARALLEL_DIRS = 8;

/** What the walk found in one directory: rows of its kept entries, and the subdirectories to walk. */
interface DirectoryRead {
  rows: EntryRow[];
  paths: string[];
  subdirs: { path: string; uri: string }[];
}

/**
 * Walks every root (readdir with file types, then an lstat per kept entry)
 * and yields index rows in batches. The walk is pruned as it goes: ignored
 * entries are dropped before they are stat'ed (an ignored `build/` is never
 * walked), each directory's `.gitignore` is recorded for the rules, and an
 * unreadable subdirectory is one warning.
 *
 * Our own walk, not fast-glob's: fast-glob matched every path against `**`,
 * whose regex never matches a newline (a name with one was left out), and a
 * failed lstat of one entry (a name that is not valid UTF-8, a path past
 * PATH_MAX, a file removed mid-scan) dropped its whole directory and all
 * beneath it, or failed the whole scan. Here each entry stands alone: a name
 * that cannot be a URI, or a path too long to stat, is skipped and counted
 * (one warning per scan, see SkipWarnings) and its siblings are kept.
 *
 * Symlinks are never followed: URIs are real paths, so a link adds no
 * resource that its target does not already give.
 */
export async function* scanRoots(options: ScanOptions): AsyncGenerator<EntryRow[]> {
  const { roots } = options;
  const batchSize = options.batchSize ?? 2000;
  const sniffBuffer = Buffer.alloc(SNIFF_BYTES);
  const skips = options.skips ?? new SkipReport();
  const frontier = options.frontier ?? new ScanFrontier();
  // Small batches first, so that the first pages (the smallest keys) are committed early; then full ones.
  let batchLimit = Math.min(FIRST_BATCH, batchSize);
  for (const root of roots) frontier.add(root.uri);
  for (let rootIndex = 0; rootIndex < roots.length; rootIndex++) {
    const root = roots[rootIndex]!;
    let batch: EntryRow[] = [rootRow(root, rootIndex, await statRoot(root))];
    const readDirectory = directoryReader(root, rootIndex, options, skips);
    // Sorted by URI, last first: the walk takes the smallest URI next, so the
    // index fills in key order and early pages can be answered (ScanFrontier).
    const pending = [{ path: root.path, uri: batch[0]!.uri }];
    // Directories whose entries are in `batch`: they close once it is taken.
    let batched: string[] = [];
    const running = new Set<Promise<DirectoryRead & { uri: string }>>();
    while (pending.length > 0 || running.size > 0) {
      while (running.size < PARALLEL_DIRS && pending.length > 0) {
        const dir = pending.pop()!;
        const read: Promise<DirectoryRead & { uri: string }> = readDirectory(dir).then((result) => {
          running.delete(read);
          return { ...result, uri: dir.uri };
        });
        running.add(read);
      }
      const { rows, paths, subdirs, uri } = await Promise.race(running);
      for (const subdir of subdirs) {
        frontier.add(subdir.uri);
        insertByUriDescending(pending, subdir);
      }
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i]!;
        if (row.mime === '') sniffMimeSync(paths[i]!, row, sniffBuffer);
        batch.push(row);
      }
      batched.push(uri);
      if (batch.length >= batchLimit) {
        yield batch;
        batch = [];
        batchLimit = Math.min(batchLimit * 2, batchSize);
        for (const done of batched) frontier.close(done);
        batched = [];
      }
    }
    if (batch.length > 0) yield batch;
    for (const done of batched) frontier.close(done);
  }
}

/** Inserts `item` into `list`, kept sorted by descending URI (so that pop() is the smallest). */
function insertByUriDescending<T extends { uri: string }>(list: T[], item: T): void {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.uri > item.uri) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, item);
}

/**
 * One row for a path, from its stats; `mime` is '' when the name cannot tell
 * and content must. `name` is the basename of `path`, and `parentUri` the URI
 * of its directory (null only for a root).
 */
export function entryRow(
  path: string,
  name: string,
  isDirectory: boolean,
  stats: Pick<Stats, 'size' | 'mtimeMs'>,
  parentUri: string | null,
  rootIndex: number,
): EntryRow {
  const ext = extOf(name);
  return {
    uri: parentUri === null ? pathToUri(path, isDirectory) : childUri(parentUri, name, isDirectory),
    parent: parentUri,
    root: rootIndex,
    name,
    ext,
    kind: isDirectory ? EntryKind.collection : EntryKind.document,
    size: isDirectory ? 0 : stats.size,
    mtime: stats.mtimeMs,
    mime: isDirectory ? COLLECTION_MIME : (mimeFromName(name, ext) ?? ''),
  };
}

export function rootRow(root: Root, rootIndex: number, stats: Pick<Stats, 'mtimeMs'>): EntryRow {
  return entryRow(root.path, root.name, true, { size: 0, mtimeMs: stats.mtimeMs }, null, rootIndex);
}

function statRoot(root: Root): Promise<Stats> {
  return stat(root.path);
}

/**
 * The scan's sniff: synchronous on purpose. The first bytes of a local file
 * cost microseconds, while three async calls per file (open, read, close)
 * cost far more main-thread time than they save (the scan of a 100k tree with
 * 10% such files spent ~0.9 s of CPU in them), and a sync sniff keeps no file
 * open across an await (so no EMFILE, which would call a text file binary).
 */
export function sniffMimeSync(path: string, row: EntryRow, buffer: Buffer): void {
  row.mime = BINARY_FALLBACK_MIME;
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const bytesRead = readSync(fd, buffer, 0, Math.min(buffer.length, Math.max(row.size, 1)), 0);
    if (detectTextEncoding(buffer.subarray(0, bytesRead), bytesRead >= row.size) !== null) row.mime = TEXT_FALLBACK_MIME;
  } catch {
    // Unreadable right now: it stays listed as binary; a read reports the real error.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Fills in `row.mime` from the first bytes of the file. Callback fs calls, not
 * a FileHandle: a cold scan sniffs every file with an unknown extension, and
 * this saved ~7% of the scan's CPU on a 100k tree with 10% such files.
 */
export function sniffMime(path: string, row: EntryRow): Promise<void> {
  row.mime = BINARY_FALLBACK_MIME;
  return new Promise((resolve) => {
    // Unreadable right now: it stays listed as binary; a read reports the real error.
    fsOpen(path, 'r', (openError, fd) => {
      if (openError) return resolve();
      const buffer = Buffer.alloc(Math.min(SNIFF_BYTES, Math.max(row.size, 1)));
      fsRead(fd, buffer, 0, buffer.length, 0, (readError, bytesRead) => {
        if (!readError && detectTextEncoding(buffer.subarray(0, bytesRead), bytesRead >= row.size) !== null) {
          row.mime = TEXT_FALLBACK_MIME;
        }
        fsClose(fd, () => resolve());
      });
    });
  });
}

/**
 * Reads one directory of the walk: its entries that no rule ignores and
 * whose names are valid UTF-8, each lstat'ed (all at once: one directory's
 * worth of requests in the thread pool's queue).
 */
function directoryReader(root: Root, rootIndex: number, { rules, log }: ScanOptions, skips: SkipReport) {
  // Directories with a .gitignore of their own or above them (within the root):
  // only under those can a rule ignore anything, so elsewhere the per-entry
  // isIgnored call (about a fifth of the scan's CPU on a tree without
  // .gitignore files) is skipped. A parent is always read before its children.
  const ruled = new Set<string>();
  return async (dir: { path: string; uri: string }): Promise<DirectoryRead> => {
    const read: DirectoryRead = { rows: [], paths: [], subdirs: [] };
    let listing: DirListing;
    try {
      listing = await readServableDir(dir.path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (dir.path === root.path) throw error;
      if (code === 'ENAMETOOLONG') skips.add('deep', escapeName(dir.path));
      else log.warn(`skipping unreadable directory ${escapeName(dir.path)}: ${code ?? (error as Error).message}`);
      return read;
    }
    for (const name of listing.invalidNames) skips.add('name', invalidPathText(dir.path, name));
    const { entries } = listing;
    const ownIgnoreFile = entries.some((e) => e.name === '.gitignore' && e.isFile());
    if (ownIgnoreFile || (dir.path !== root.path && ruled.has(dirname(dir.path)))) ruled.add(dir.path);
    if (ownIgnoreFile) {
      const text = await readFile(join(dir.path, '.gitignore'), 'utf8').catch((readError: NodeJS.ErrnoException) => {
        log.warn(`cannot read ${escapeName(join(dir.path, '.gitignore'))}: ${readError.code}`);
        return null;
      });
      rules.setDirRules(dir.path, text);
    } else {
      rules.setDirRules(dir.path, null);
    }
    const mayIgnore = rules.hasExcludes || ruled.has(dir.path);
    const kept = entries.filter(
      (e) =>
        // Links and special files are never served; an unknown type (some file systems) is left to lstat.
        !(e.isSymbolicLink() || e.isFIFO() || e.isSocket() || e.isCharacterDevice() || e.isBlockDevice()) &&
        !ALWAYS_EXCLUDED.has(e.name) &&
        !(mayIgnore && rules.isIgnored(join(dir.path, e.name), e.isDirectory())),
    );
    const paths = kept.map((e) => join(dir.path, e.name));
    const stats = await Promise.all(paths.map(lstatEntry));
    for (let i = 0; i < kept.length; i++) {
      const st = stats[i]!;
      if (st === 'deep') {
        skips.add('deep', escapeName(paths[i]!));
        continue;
      }
      // Gone since readdir, or not a regular file or directory (symlinks, sockets, fifos, devices).
      if (st === null) continue;
      const isDirectory = st.isDirectory();
      if (!isDirectory && !st.isFile()) continue;
      const row = entryRow(paths[i]!, kept[i]!.name, isDirectory, st, dir.uri, rootIndex);
      read.rows.push(row);
      read.paths.push(paths[i]!);
      if (isDirectory) read.subdirs.push({ path: paths[i]!, uri: row.uri });
    }
    return read;
  };
}
