import { lstatSync, realpathSync, watch, type Dirent, type FSWatcher, type Stats } from 'node:fs';
import { every, realClock, type ClockTimer } from '../clock.ts';
import { basename, dirname, join, outermostDirs, toSlashPath } from '../fs-path.ts';
import { describeError, isNoEntry } from '../errno.ts';
import { isAlwaysExcluded } from '../index/ignore.ts';
import { fsWatchDirectory, type WatchDirectory } from './scan-watch.ts';
import { readServableDir } from '../index/servable.ts';
import { isResourceExhausted, type StartWatcher, type Watcher, type WatchStart } from './watcher.ts';
import { isPathInside } from '../uri.ts';

/** Directories watched per turn of the event loop at start-up: requests are answered while 50k watches are set up. */
const START_SLICE = 2000;
/** Directories of a new subtree read at once while watching it. */
const PARALLEL_READDIR = 8;
/**
 * How often a served folder that went away (deleted, moved) is looked for:
 * its parent is not watched, so no event says it is back (rm -rf and mkdir,
 * a checkout that re-made it). Once back it is watched and walked whole.
 */
export const ROOT_RETURN_POLL_MS = 500;

/** The `dirs` backend as running: how many directories it watches, for tests and the probe. */
export interface DirsWatcher extends Watcher {
  readonly backend: 'dirs' | 'recursive';
  /** Directories with a watch of their own (Linux); the roots elsewhere. */
  readonly watching: number;
  isWatching(dir: string): boolean;
}

export interface DirsWatcherOptions {
  watchDirectory?: WatchDirectory;
  /** One recursive fs.watch per root instead of one watch per directory (the default off Linux). */
  recursive?: boolean;
}

/**
 * `dirs`: Node's own fs.watch, non-recursive, on every served directory (on
 * Linux one inotify watch per directory and no state per file: measured at
 * 50,001 directories, ~1 s and a few MiB, where parcel keeps a native tree of
 * every file). Events only name a path; the sync layer stats it.
 *
 * The directory list comes from the index (the scan's baseline, ignored
 * directories already left out), so start-up walks nothing; without one
 * (the probe) the roots are walked. New directories are watched when an event
 * names them, with their subtree (`mkdir -p`), and when the sync layer hints
 * them (`rewatch`). A directory that went away, or was replaced by another of
 * the same name, loses its watch (and its watched subdirectories theirs), so
 * the count of watches follows the tree.
 *
 * Off Linux (macOS, Windows) recursive watching is native, and libuv handles
 * thousands of per-directory handles badly there: one `fs.watch(root,
 * {recursive: true})` per root instead. Only the Linux path is tested here.
 *
 * Node does not report an inotify queue overflow (IN_Q_OVERFLOW): events are
 * lost silently. The sync layer's periodic diff of the whole tree bounds how
 * long that can leave the index wrong.
 */
export function dirsWatcher(options: DirsWatcherOptions = {}): StartWatcher {
  const watchDirectory = options.watchDirectory ?? fsWatchDirectory;
  const recursive = options.recursive ?? process.platform !== 'linux';
  return (start) => (recursive ? startRecursive(start, 'dirs') : startPerDirectory(start, watchDirectory));
}

export const startDirsWatcher: StartWatcher = dirsWatcher();

/**
 * `recursive`: one recursive fs.watch per root on every platform, what `dirs`
 * is on macOS and Windows. On Linux Node emulates it (a watch per file and
 * folder, kept by Node itself), so the e2e watch tests and the fuzzer run the
 * code path that macOS and Windows users run, here; for tests, not for use
 * (docs/live-updates.md says what the emulation cannot follow).
 */
export const startRecursiveWatcher: StartWatcher = (start) => startRecursive(start, 'recursive');

/** `recursive` as it runs on `platform` (tests: macOS's second diff, on Linux). */
export function recursiveWatcherAs(platform: NodeJS.Platform): StartWatcher {
  return (start) => startRecursive(start, 'recursive', platform);
}

interface Watched {
  watcher: FSWatcher;
  /** Which directory this watch is on: the same path may later name another one. */
  ino: number;
  born: number;
  /** Names of the watched subdirectories (none for most: leaves), to release them with it. */
  children: Set<string> | undefined;
}

async function startPerDirectory(start: WatchStart, watchDirectory: WatchDirectory): Promise<DirsWatcher> {
  const watcher = new PerDirectoryWatcher(start, watchDirectory);
  await watcher.begin();
  return watcher;
}

/** Linux: one non-recursive fs.watch per served directory, kept in step with the tree (see dirsWatcher). */
class PerDirectoryWatcher implements DirsWatcher {
  readonly backend = 'dirs' as const;
  private readonly watched = new Map<string, Watched>();
  private ready = false;
  private closed = false;
  /** Out of watches: before ready the start fails, after it the sync layer degrades to the next backend. */
  private failure: Error | undefined;

  // New subtrees are read here, a few directories at once; each is watched before it is read,
  // so a subdirectory created after the read is reported by that watch.
  private readonly toRead: string[] = [];
  /** Subtrees newly watched since the reads last ran dry (see watchTree). */
  private watchedTops: string[] = [];
  private reading = 0;
  /** Told when the reads run dry: the start's walk of the roots (without the index's list) is done. */
  private idle: (() => void) | undefined;

  private readonly rootPaths: Set<string>;
  /** Served folders not there now (see ROOT_RETURN_POLL_MS), and the timer that looks for them. */
  private readonly missingRoots = new Set<string>();
  private rootPoll: { stop(): void } | undefined;

  constructor(
    private readonly start: WatchStart,
    private readonly watchDirectory: WatchDirectory,
  ) {
    this.rootPaths = new Set(start.roots.map((root) => root.path));
  }

  get watching(): number {
    return this.watched.size;
  }

  isWatching(dir: string): boolean {
    return this.watched.has(dir);
  }

  rewatch(dir: string): void {
    // Every reason means the same here: a directory that may have no watch yet.
    if (!this.closed) this.check(dir);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.rootPoll?.stop();
    for (const entry of this.watched.values()) entry.watcher.close();
    this.watched.clear();
    this.toRead.length = 0;
  }

  /**
   * The start: the roots, then every directory the index holds (parents come
   * before children in URI order), or, without a list, a walk of the roots.
   * Resolves once all are watched; on any failure nothing stays watched.
   */
  async begin(): Promise<void> {
    for (const root of this.start.roots) {
      const st = lstatOrNull(root.path);
      if (st?.isDirectory()) this.watchOne(root.path, st);
      else this.rootMissing(root.path);
    }
    try {
      if (this.start.directories) await this.watchIndexed(this.start.directories());
      else await this.walkRoots();
      if (this.failure) throw this.failure;
      if (this.stopped()) throw new Error('closed while starting');
    } catch (error) {
      // Whatever ended the start (out of watches, the caller closed, the index's list failing): no watch outlives it.
      await this.close();
      throw error;
    }
    this.ready = true;
  }

  private stopped(): boolean {
    return this.start.signal?.aborted === true;
  }

  /** Watches the index's directories, a slice per turn, telling the caller of each slice watched. */
  private async watchIndexed(directories: Iterable<string>): Promise<void> {
    const { rules } = this.start;
    let count = 0;
    let slice = this.start.roots.map((r) => r.path).filter((p) => this.watched.has(p));
    for (const dir of directories) {
      if (this.failure || this.closed || this.stopped()) break;
      if (this.watched.has(dir) || rules.isIgnored(dir, true)) continue;
      const st = lstatOrNull(dir);
      if (st?.isDirectory() && this.watchOne(dir, st)) slice.push(dir);
      if (++count % START_SLICE === 0) {
        this.start.watching?.(slice);
        slice = [];
        await new Promise((resolve) => setImmediate(resolve));
      }
      await this.start.turn?.();
    }
    if (!this.failure && !this.closed) this.start.watching?.(slice);
  }

  /** Without the index's list (the probe): the roots are read, every directory beneath watched. */
  private async walkRoots(): Promise<void> {
    const walked = new Promise<void>((resolve) => (this.idle = resolve));
    this.toRead.push(...this.start.roots.map((r) => r.path).filter((p) => this.watched.has(p)));
    this.pump();
    await walked;
    this.idle = undefined;
  }

  private exhausted(error: Error): void {
    if (this.closed || this.failure) return;
    this.failure = error;
    if (this.ready) this.start.sink.fatal(error);
  }

  /** Watches `dir` (a directory as `st` says); false when it cannot (gone, unreadable, out of watches). */
  private watchOne(dir: string, st: Stats): boolean {
    if (this.closed || this.failure) return false;
    let watcher: FSWatcher;
    try {
      watcher = this.watchDirectory(dir, (event, filename) => this.onEvent(dir, event, filename));
    } catch (error) {
      if (isResourceExhausted(error)) this.exhausted(error as Error);
      else if (!isNoEntry(error)) this.start.log.warn(`watcher (dirs): cannot watch ${dir}: ${describeError(error)}`);
      return false;
    }
    watcher.on('error', (error) => this.onError(dir, watcher, error));
    this.watched.set(dir, { watcher, ino: st.ino, born: st.birthtimeMs, children: undefined });
    this.link(dir);
    return true;
  }

  private link(dir: string): void {
    const parent = this.watched.get(dirname(dir));
    if (parent && dirname(dir) !== dir) (parent.children ??= new Set()).add(basename(dir));
  }

  /** Releases the watch of `dir` and of every watched directory beneath it. */
  private unwatch(dir: string): void {
    const entry = this.watched.get(dir);
    if (!entry) return;
    this.watched.delete(dir);
    entry.watcher.close();
    this.watched.get(dirname(dir))?.children?.delete(basename(dir));
    for (const name of entry.children ?? []) this.unwatch(join(dir, name));
  }

  /** Reads the subtrees waiting to be read, PARALLEL_READDIR at once; when they run dry, diffs what was newly watched. */
  private pump(): void {
    while (this.reading < PARALLEL_READDIR && this.toRead.length > 0 && !this.closed) {
      const dir = this.toRead.pop()!;
      this.reading++;
      // The scan's reader: a subdirectory whose name cannot be served is not watched either.
      readServableDir(dir).then(
        (listing) => {
          this.reading--;
          this.watchSubdirectories(dir, listing.entries);
          this.pump();
        },
        () => {
          // A directory gone or unreadable since it was watched: its own events (or its parent's) say so.
          this.reading--;
          this.pump();
        },
      );
    }
    if (this.reading === 0 && this.toRead.length === 0) {
      this.idle?.();
      const tops = this.watchedTops;
      this.watchedTops = [];
      if (this.ready && !this.closed) for (const top of outermostDirs(tops)) void this.start.sink.rescan(top);
    }
  }

  private watchSubdirectories(dir: string, entries: Dirent[]): void {
    if (this.closed || !this.watched.has(dir)) return;
    for (const entry of entries) {
      if (!entry.isDirectory() || isAlwaysExcluded(entry.name)) continue;
      const path = join(dir, entry.name);
      if (this.watched.has(path)) {
        this.link(path); // watched before its parent (a hint came first): released with it from now on
        continue;
      }
      if (this.start.rules.isIgnored(path, true)) continue;
      const st = lstatOrNull(path);
      if (st?.isDirectory() && this.watchOne(path, st)) this.toRead.push(path);
    }
  }

  /**
   * Watches `dir` and, once read, the subdirectories beneath it that are not
   * watched yet. Once every directory of it is watched, the subtree is
   * diffed again (sink.rescan): the sync layer may have listed it before
   * the watches existed, and what changed in between (a file made, or one
   * written again in place, which moves no directory's mtime) was told by
   * no event.
   */
  private watchTree(dir: string, st: Stats): void {
    if (!this.watchOne(dir, st)) return;
    this.watchedTops.push(dir);
    this.toRead.push(dir);
    this.pump();
  }

  private rootMissing(root: string): void {
    this.missingRoots.add(root);
    this.rootPoll ??= every(this.start.clock ?? realClock, ROOT_RETURN_POLL_MS, () => this.lookForMissingRoots());
  }

  private lookForMissingRoots(): void {
    for (const path of this.missingRoots) {
      const st = lstatOrNull(path);
      if (!st?.isDirectory() || this.closed) continue;
      this.missingRoots.delete(path);
      this.watchTree(path, st); // and diffed once watched: whatever it holds came with no event of ours
    }
    if (this.missingRoots.size === 0 || this.closed) {
      this.rootPoll?.stop();
      this.rootPoll = undefined;
    }
  }

  /**
   * Makes the watch of `path` match what is there now: a new directory is
   * watched with its subtree, one that went away released, one replaced by
   * another directory of the same name (rm -rf, then mkdir) watched afresh.
   */
  private check(path: string): void {
    const st = lstatOrNull(path);
    const known = this.watched.get(path);
    if (st?.isDirectory()) {
      if (known && known.ino === st.ino && known.born === st.birthtimeMs) return;
      if (known) this.unwatch(path);
      // The new directory's entries came with no event of ours: watchTree diffs it once watched.
      if (!this.start.rules.isIgnored(path, true)) this.watchTree(path, st);
      else if (known) void this.start.sink.rescan(path);
    } else {
      if (known) this.unwatch(path);
      if (this.rootPaths.has(path)) this.rootMissing(path);
    }
  }

  private onEvent(dir: string, event: string, filename: string | null): void {
    if (this.closed || !this.watched.has(dir)) return;
    if (filename === null) {
      void this.start.sink.rescan(dir);
      return;
    }
    const path = join(dir, filename);
    this.start.sink.changed(path);
    // Only a 'rename' (create, delete, move) can make or unmake a directory; 'change' is content or attributes.
    if (event !== 'rename') return;
    this.check(path);
    // libuv names events on the watched directory itself (deleted, moved, its watch gone) by its own basename.
    if (filename === basename(dir) && !this.watched.get(path)) this.check(dir);
  }

  private onError(dir: string, watcher: FSWatcher, error: Error): void {
    if (this.closed || this.watched.get(dir)?.watcher !== watcher) return;
    if (isResourceExhausted(error)) return this.exhausted(error);
    this.start.log.warn(`watcher (dirs): ${dir}: ${describeError(error)}`);
    this.unwatch(dir);
    this.check(dir); // still there: watched afresh
    if (this.watched.has(dir)) void this.start.sink.rescan(dir);
  }
}

/**
 * Off Linux: one native recursive watch per root (FSEvents on macOS,
 * ReadDirectoryChangesW on Windows; on Linux, Node's emulation). An event
 * names a path below the root, with backslashes on Windows; on macOS a
 * root's path is its real path (`/private/var/...`), which is what FSEvents
 * reports under, and what URIs use.
 */
async function startRecursive({ roots, sink, log, clock = realClock }: WatchStart, backend: 'dirs' | 'recursive', platform = process.platform): Promise<DirsWatcher> {
  let closed = false;
  let settle: ClockTimer | undefined;
  /** Each root's watch, and the identity of the folder it watches ('' while there is none at the root's path). */
  const watched = new Map<string, { watcher: FSWatcher | undefined; identity: string }>();
  const open = (root: string): FSWatcher => {
    const watcher = watch(root, { recursive: true, persistent: false }, (_event, filename) => {
      if (closed) return;
      // A null name: the OS dropped the details (a Windows buffer overflow, FSEvents' MustScanSubDirs).
      if (filename === null) return void sink.rescan(root);
      // A path below the root, with backslashes on Windows; '' is the root itself (gone, or replaced).
      const path = join(root, toSlashPath(filename));
      if (path === root) lookAtRoots();
      sink.changed(platform === 'win32' && filename.includes('~') ? longName(path, root) : path);
    });
    watcher.on('error', (error) => {
      if (closed) return;
      // The root's own watch ends with it (deleted, moved): the look at the roots watches it again once it is back.
      if (folderIdentity(root) !== watched.get(root)?.identity) return lookAtRoots();
      sink.fatal(error);
    });
    return watcher;
  };
  /**
   * A recursive watch holds the folder it was opened on, not its path: a root
   * removed and made again (`rm -rf`, a checkout), or moved away and back, has
   * no watch any more. Each root's identity is looked at twice a second (an
   * lstat each); a root that changed is watched afresh and diffed whole, and
   * one that is gone is diffed (its entries go) and looked for again.
   */
  const lookAtRoots = (): void => {
    for (const [root, entry] of watched) {
      if (closed) return;
      const now = folderIdentity(root);
      if (now === entry.identity) continue;
      entry.watcher?.close();
      entry.watcher = undefined;
      entry.identity = now;
      if (now !== '') {
        try {
          entry.watcher = open(root);
        } catch (error) {
          log.warn(`watcher (${backend}): ${root}: ${describeError(error)}; looked for again`);
          entry.identity = '';
        }
      }
      void sink.rescan(root);
    }
  };
  try {
    for (const root of roots) watched.set(root.path, { identity: folderIdentity(root.path), watcher: open(root.path) });
  } catch (error) {
    for (const entry of watched.values()) entry.watcher?.close();
    throw error;
  }
  const rootLook = every(clock, ROOT_RETURN_POLL_MS, lookAtRoots);
  // FSEvents starts some undefined time after fs.watch returns (nodejs/node#52601): a change in that gap has no
  // event, and may come after the start-up diff looked. So each root is diffed once more when FSEvents has surely
  // begun; what changed since is then in the index or in an event. Node's emulation on Linux has such a gap too:
  // it walks the tree to watch each folder after fs.watch returns (fuzzer seed 8014: two folders swapped right
  // after a start whose watcher began late, once start-up work waited for the client, were never seen).
  if (platform === 'darwin' || platform === 'linux') {
    settle = clock.setTimeout(
      () => {
        if (!closed) for (const root of roots) void sink.rescan(root.path);
      },
      FSEVENTS_SETTLE_MS,
      { background: true },
    );
  }
  return {
    backend,
    get watching() {
      return closed ? 0 : [...watched.values()].filter((entry) => entry.watcher !== undefined).length;
    },
    isWatching: (dir) => !closed && watched.get(dir)?.watcher !== undefined,
    async close() {
      closed = true;
      clock.clearTimeout(settle);
      rootLook.stop();
      for (const entry of watched.values()) entry.watcher?.close();
    },
  };
}

/**
 * Windows may name an entry in an event by its 8.3 short name
 * (`LONGFI~1.TXT`), which the index must never hold beside the long one: the
 * long name when the entry is there, else its folder (whose re-listing finds
 * what became of it by its own names).
 */
function longName(path: string, root: string): string {
  try {
    const real = toSlashPath(realpathSync.native(path));
    return isPathInside(root, real) ? real : dirname(path);
  } catch {
    return dirname(path);
  }
}

/** A folder's identity (device, inode, birth time); '' when there is no folder at `path`. */
function folderIdentity(path: string): string {
  const st = lstatOrNull(path);
  return st?.isDirectory() ? `${st.dev}:${st.ino}:${st.birthtimeMs}` : '';
}

/** How long after fs.watch returns FSEvents is taken to watch (macOS): the roots are diffed again then. */
export const FSEVENTS_SETTLE_MS = 2_000;

/** lstat, null when the path is gone or cannot be looked at (then it is not watched: the sync layer decides what it serves). */
function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

