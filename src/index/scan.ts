import {
  close as fsClose,
  closeSync,
  constants,
  lstatSync,
  open as fsOpen,
  openSync,
  read as fsRead,
  readFileSync,
  readSync,
  type Stats,
} from 'node:fs';
import { dirname, join } from '../fs-path.ts';
import type { Logger } from '../log.ts';
import { childUri, pathToUri, type Root } from '../uri.ts';
import { BINARY_FALLBACK_MIME, COLLECTION_MIME, TEXT_FALLBACK_MIME, extOf, mimeFromName } from '../content/mime.ts';
import { SNIFF_BYTES, detectTextEncoding } from '../content/sniff.ts';
import { EntryKind, type EntryRow } from '../entry.ts';
import { isAlwaysExcluded, type IgnoreRules } from './ignore.ts';
import { SkipReport, escapeName, invalidPathText, lstatEntrySync, readServableDirSync, type DirListing } from './servable.ts';
import { describeError, errnoCode, isNoEntry } from '../errno.ts';

export interface ScanOptions {
  roots: readonly Root[];
  rules: IgnoreRules;
  log: Logger;
  /** Where entries that exist but cannot be served are counted (the caller warns once). */
  skips: SkipReport;
  /** Walk only this root (its position in `roots`, which rows record); default: every root. */
  onlyRoot?: number;
  /** Called with each directory just before it is read (its ScanObserver: the live layer's watches). */
  beforeRead?: (dir: string) => void;
}

/** A directory the walk has read: its `.gitignore` text (null: none), or why it could not be read. */
export interface DirectoryRead {
  path: string;
  uri: string;
  gitignore: string | null;
  /** `gone`: vanished since its parent was read; `unreadable`: there but not listable (its entries are unknown, not none). */
  failed?: 'gone' | 'unreadable';
}

/** Where a walk stands: enough to go on with it on another thread (see scan-thread.ts). */
export interface WalkState {
  /** The root being walked (roots.length: done). */
  rootIndex: number;
  /** Its directories still to read, by descending URI; null: the root itself is not read yet. */
  pending: { path: string; uri: string }[] | null;
  /** Directories with a .gitignore of their own or above them (see Walk.readDirectory). */
  ruled: string[];
}

/** What the walk hands over at a time: rows, and what the consumer needs to keep a ScanFrontier. */
export interface ScanBatch<Rows = EntryRow[]> {
  rows: Rows;
  /** URIs of the directories found by this batch (listed in `rows`; their own entries come later). */
  opened: string[];
  /** The directories whose entries are all in `rows`, with their `.gitignore` text (null: none). */
  read: DirectoryRead[];
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

/**
 * Walks every root (readdir with file types, then an lstat per kept entry)
 * and hands over index rows a batch at a time, with what a ScanFrontier
 * needs to know. The walk is pruned as it goes: ignored entries are dropped
 * before they are stat'ed (an ignored `build/` is never walked), each
 * directory's `.gitignore` is recorded for the rules, and an unreadable
 * subdirectory is one warning.
 *
 * Synchronous: a sync walk costs half the CPU of an async one (no promise or
 * thread-pool round trip per entry; measured at 100k entries: 0.9 s against
 * 1.9 s), and it runs on a worker thread (scan-thread.ts), which leaves the
 * main thread free to commit batches and answer requests. Its state can move
 * there mid-walk (`state`).
 *
 * Directories are taken smallest URI first, so the index fills in key order
 * and early pages can be answered (ScanFrontier).
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
export class Walk {
  private rootIndex: number;
  private readonly endIndex: number;
  private pending: { path: string; uri: string }[] | null;
  /**
   * Directories with a .gitignore of their own or above them (within the
   * root): only under those can a rule ignore anything, so elsewhere the
   * per-entry isIgnored call (about a fifth of the scan's CPU on a tree
   * without .gitignore files) is skipped. A parent is always read before its
   * children.
   */
  private readonly ruled: Set<string>;
  private readonly sniffBuffer = Buffer.alloc(SNIFF_BYTES);

  constructor(
    private readonly options: ScanOptions,
    state: WalkState = { rootIndex: 0, pending: null, ruled: [] },
  ) {
    this.rootIndex = Math.max(state.rootIndex, options.onlyRoot ?? 0);
    this.endIndex = options.onlyRoot === undefined ? options.roots.length : options.onlyRoot + 1;
    this.pending = state.pending;
    this.ruled = new Set(state.ruled);
  }

  get done(): boolean {
    return this.rootIndex >= this.endIndex;
  }

  get state(): WalkState {
    return { rootIndex: this.rootIndex, pending: this.pending, ruled: [...this.ruled] };
  }

  /**
   * Reads directories until the batch holds at least `rows` rows, the clock
   * (performance.now()) passes `until`, or the walk ends; null once it has
   * ended. Throws when a root cannot be read.
   */
  next(rows: number, until = Infinity): ScanBatch | null {
    const batch: ScanBatch = { rows: [], opened: [], read: [] };
    const { roots } = this.options;
    while (this.rootIndex < this.endIndex && batch.rows.length < rows) {
      const root = roots[this.rootIndex]!;
      if (this.pending === null) {
        const st = statRoot(root.path);
        if (st === null) {
          // Gone (deleted, moved away, being re-made): nothing of it is indexed, and the scan goes
          // on with the other roots; the live sync looks at every root after the scan (Reconciler.paths).
          this.options.log.warn(`served folder ${escapeName(root.path)} is gone or not a folder: nothing of it is indexed until it is back`);
          this.rootIndex++;
          continue;
        }
        const rootEntry = rootRow(root, this.rootIndex, st);
        batch.rows.push(rootEntry);
        this.pending = [{ path: root.path, uri: rootEntry.uri }];
      }
      const dir = this.pending.pop();
      if (dir === undefined) {
        this.rootIndex++;
        this.pending = null;
        continue;
      }
      batch.read.push(this.readDirectory(root, dir, batch));
      if (performance.now() >= until) break;
    }
    return batch.rows.length === 0 && batch.read.length === 0 ? null : batch;
  }

  /**
   * Reads one directory into `batch`: its entries that no rule ignores and
   * whose names are valid UTF-8, each lstat'ed, files of unknown type
   * sniffed; its subdirectories join the pending ones.
   */
  private readDirectory(root: Root, dir: { path: string; uri: string }, batch: ScanBatch): DirectoryRead {
    const { rules, log, skips } = this.options;
    let listing: DirListing;
    this.options.beforeRead?.(dir.path);
    try {
      listing = readServableDirSync(dir.path);
    } catch (error) {
      if (isNoEntry(error)) return { ...dir, gitignore: null, failed: 'gone' };
      if (dir.path === root.path) throw error;
      if (errnoCode(error) === 'ENAMETOOLONG') skips.add('deep', escapeName(dir.path));
      else log.warn(`skipping unreadable directory ${escapeName(dir.path)}: ${describeError(error)}`);
      return { ...dir, gitignore: null, failed: 'unreadable' };
    }
    for (const name of listing.invalidNames) skips.add('name', invalidPathText(dir.path, name));
    const { entries } = listing;
    const ownIgnoreFile = entries.some((e) => e.name === '.gitignore' && e.isFile());
    if (ownIgnoreFile || (dir.path !== root.path && this.ruled.has(dirname(dir.path)))) this.ruled.add(dir.path);
    let gitignore: string | null = null;
    if (ownIgnoreFile) {
      try {
        gitignore = readFileSync(join(dir.path, '.gitignore'), 'utf8');
      } catch (readError) {
        log.warn(`cannot read ${escapeName(join(dir.path, '.gitignore'))}: ${(readError as NodeJS.ErrnoException).code}`);
      }
    }
    rules.setDirRules(dir.path, gitignore);
    const mayIgnore = rules.hasExcludes || this.ruled.has(dir.path);
    // Where this directory's rows start: dropped if it is not a folder once read (see below).
    const rowsBefore = batch.rows.length;
    const openedBefore = batch.opened.length;
    for (const e of entries) {
      // Links and special files are never served; an unknown type (some file systems) is left to lstat.
      if (e.isSymbolicLink() || e.isFIFO() || e.isSocket() || e.isCharacterDevice() || e.isBlockDevice()) continue;
      if (isAlwaysExcluded(e.name)) continue;
      const path = join(dir.path, e.name);
      if (mayIgnore && rules.isIgnored(path, e.isDirectory())) continue;
      const st = lstatEntrySync(path);
      if (st === 'deep') {
        skips.add('deep', escapeName(path));
        continue;
      }
      // Listable but not searchable (mode r--): its names are known, nothing else, and nothing in it can be read.
      // It is an unreadable folder (its row kept, its entries unknown, re-listed once its mode changes), not an
      // empty one: as empty, giving it back its x bit changed its ctime only, and nothing listed it again.
      if (st === 'denied') {
        const dropped = new Set(batch.opened.slice(openedBefore));
        batch.rows.length = rowsBefore;
        batch.opened.length = openedBefore;
        this.pending = this.pending!.filter((d) => !dropped.has(d.uri));
        log.warn(`skipping unsearchable directory ${escapeName(dir.path)} (its names can be listed, not its entries)`);
        return { ...dir, gitignore: null, failed: 'unreadable' };
      }
      // Gone since readdir, or not a regular file or directory (symlinks, sockets, fifos, devices).
      if (st === null) continue;
      const isDirectory = st.isDirectory();
      if (!isDirectory && !st.isFile()) continue;
      const row = entryRow(path, e.name, isDirectory, st, dir.uri, this.rootIndex);
      if (row.mime === '') sniffMimeSync(path, row, this.sniffBuffer);
      batch.rows.push(row);
      if (isDirectory) {
        batch.opened.push(row.uri);
        insertByUriDescending(this.pending!, { path, uri: row.uri });
      }
    }
    // Swapped for a link since its parent was read (a checkout can do it): what was read is the link's
    // target, named as if it were in here. None of it is kept; the folder is gone as far as this walk goes.
    // (A folder above it swapped after it was read is not seen here: the watcher's event for it removes it.)
    if (!isFolderNow(dir.path)) {
      const dropped = new Set(batch.opened.slice(openedBefore));
      batch.rows.length = rowsBefore;
      batch.opened.length = openedBefore;
      this.pending = this.pending!.filter((d) => !dropped.has(d.uri));
      return { ...dir, gitignore: null, failed: 'gone' };
    }
    return { ...dir, gitignore };
  }
}

/**
 * A root's stats; null when it is not there, or not a folder (a link
 * included: the served path was resolved at start, so a link there now is a
 * folder swapped for one). Other failures (EACCES) are thrown: the scan
 * reports them.
 */
function statRoot(path: string): Stats | null {
  try {
    const st = lstatSync(path);
    return st.isDirectory() ? st : null;
  } catch (error) {
    if (isNoEntry(error)) return null;
    throw error;
  }
}

/** Whether `path` is a folder now (not a link, not gone); a path too long to lstat counts as one (it was just read). */
function isFolderNow(path: string): boolean {
  const st = lstatEntrySync(path);
  return st === 'deep' || (st !== null && st !== 'denied' && st.isDirectory());
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
  stats: Pick<Stats, 'size' | 'mtimeMs' | 'ino' | 'dev'>,
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
    ino: stats.ino,
    dev: stats.dev,
  };
}

export function rootRow(root: Root, rootIndex: number, stats: Pick<Stats, 'mtimeMs' | 'ino' | 'dev'>): EntryRow {
  return entryRow(root.path, root.name, true, { size: 0, mtimeMs: stats.mtimeMs, ino: stats.ino, dev: stats.dev }, null, rootIndex);
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
