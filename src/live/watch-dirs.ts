import { lstatSync, watch, type Dirent, type FSWatcher, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { describeError, isNoEntry } from '../errno.ts';
import { ALWAYS_EXCLUDED } from '../index/ignore.ts';
import { fsWatchDirectory, type WatchDirectory } from '../index/scan-watch.ts';
import { readServableDir } from '../index/servable.ts';
import { isResourceExhausted, outermostDirs, type StartWatcher, type Watcher, type WatchStart } from './watcher.ts';

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
  return (start) => (recursive ? startRecursive(start) : startPerDirectory(start, watchDirectory));
}

export const startDirsWatcher: StartWatcher = dirsWatcher();

interface Watched {
  watcher: FSWatcher;
  /** Which directory this watch is on: the same path may later name another one. */
  ino: number;
  born: number;
  /** Names of the watched subdirectories (none for most: leaves), to release them with it. */
  children: Set<string> | undefined;
}

async function startPerDirectory(start: WatchStart, watchDirectory: WatchDirectory): Promise<DirsWatcher> {
  const { roots, rules, sink, log } = start;
  const watched = new Map<string, Watched>();
  let ready = false;
  let closed = false;
  /** Out of watches: before ready the start fails, after it the sync layer degrades to the next backend. */
  let failure: Error | undefined;

  const exhausted = (error: Error) => {
    if (closed || failure) return;
    failure = error;
    if (ready) sink.fatal(error);
  };

  /** Watches `dir` (a directory as `st` says); false when it cannot (gone, unreadable, out of watches). */
  const watchOne = (dir: string, st: Stats): boolean => {
    if (closed || failure) return false;
    let watcher: FSWatcher;
    try {
      watcher = watchDirectory(dir, (event, filename) => onEvent(dir, event, filename));
    } catch (error) {
      if (isResourceExhausted(error)) exhausted(error as Error);
      else if (!isNoEntry(error)) log.warn(`watcher (dirs): cannot watch ${dir}: ${describeError(error)}`);
      return false;
    }
    watcher.on('error', (error) => onError(dir, watcher, error));
    watched.set(dir, { watcher, ino: st.ino, born: st.birthtimeMs, children: undefined });
    link(dir);
    return true;
  };

  const link = (dir: string) => {
    const parent = watched.get(dirname(dir));
    if (parent && dirname(dir) !== dir) (parent.children ??= new Set()).add(basename(dir));
  };

  /** Releases the watch of `dir` and of every watched directory beneath it. */
  const unwatch = (dir: string) => {
    const entry = watched.get(dir);
    if (!entry) return;
    watched.delete(dir);
    entry.watcher.close();
    watched.get(dirname(dir))?.children?.delete(basename(dir));
    for (const name of entry.children ?? []) unwatch(join(dir, name));
  };

  // New subtrees are read here, a few directories at once; each is watched before it is read,
  // so a subdirectory created after the read is reported by that watch.
  const toRead: string[] = [];
  /** Subtrees newly watched since the reads last ran dry (see watchTree). */
  let watchedTops: string[] = [];
  let reading = 0;
  let idle: (() => void) | undefined;
  const pump = () => {
    while (reading < PARALLEL_READDIR && toRead.length > 0 && !closed) {
      const dir = toRead.pop()!;
      reading++;
      // The scan's reader: a subdirectory whose name cannot be served is not watched either.
      readServableDir(dir).then(
        (listing) => {
          reading--;
          watchSubdirectories(dir, listing.entries);
          pump();
        },
        () => {
          // A directory gone or unreadable since it was watched: its own events (or its parent's) say so.
          reading--;
          pump();
        },
      );
    }
    if (reading === 0 && toRead.length === 0) {
      idle?.();
      const tops = watchedTops;
      watchedTops = [];
      if (ready && !closed) for (const top of outermostDirs(tops)) void sink.rescan(top);
    }
  };

  const watchSubdirectories = (dir: string, entries: Dirent[]) => {
    if (closed || !watched.has(dir)) return;
    for (const entry of entries) {
      if (!entry.isDirectory() || ALWAYS_EXCLUDED.has(entry.name)) continue;
      const path = join(dir, entry.name);
      if (watched.has(path)) {
        link(path); // watched before its parent (a hint came first): released with it from now on
        continue;
      }
      if (rules.isIgnored(path, true)) continue;
      const st = lstatOrNull(path);
      if (st?.isDirectory() && watchOne(path, st)) toRead.push(path);
    }
  };

  /**
   * Watches `dir` and, once read, the subdirectories beneath it that are not
   * watched yet. Once every directory of it is watched, the subtree is
   * diffed again (sink.rescan): the sync layer may have listed it before
   * the watches existed, and what changed in between (a file made, or one
   * written again in place, which moves no directory's mtime) was told by
   * no event.
   */
  const watchTree = (dir: string, st: Stats) => {
    if (!watchOne(dir, st)) return;
    watchedTops.push(dir);
    toRead.push(dir);
    pump();
  };

  const rootPaths = new Set(roots.map((root) => root.path));
  /** Served folders not there now (see ROOT_RETURN_POLL_MS), and the timer that looks for them. */
  const missingRoots = new Set<string>();
  let rootPoll: NodeJS.Timeout | undefined;
  const rootMissing = (root: string) => {
    missingRoots.add(root);
    rootPoll ??= setInterval(() => {
      for (const path of missingRoots) {
        const st = lstatOrNull(path);
        if (!st?.isDirectory() || closed) continue;
        missingRoots.delete(path);
        watchTree(path, st); // and diffed once watched: whatever it holds came with no event of ours
      }
      if (missingRoots.size === 0 || closed) {
        clearInterval(rootPoll);
        rootPoll = undefined;
      }
    }, ROOT_RETURN_POLL_MS);
    rootPoll.unref();
  };

  /**
   * Makes the watch of `path` match what is there now: a new directory is
   * watched with its subtree, one that went away released, one replaced by
   * another directory of the same name (rm -rf, then mkdir) watched afresh.
   */
  const check = (path: string) => {
    const st = lstatOrNull(path);
    const known = watched.get(path);
    if (st?.isDirectory()) {
      if (known && known.ino === st.ino && known.born === st.birthtimeMs) return;
      if (known) unwatch(path);
      // The new directory's entries came with no event of ours: watchTree diffs it once watched.
      if (!rules.isIgnored(path, true)) watchTree(path, st);
      else if (known) void sink.rescan(path);
    } else {
      if (known) unwatch(path);
      if (rootPaths.has(path)) rootMissing(path);
    }
  };

  const onEvent = (dir: string, event: string, filename: string | null) => {
    if (closed || !watched.has(dir)) return;
    if (filename === null) {
      void sink.rescan(dir);
      return;
    }
    const path = join(dir, filename);
    sink.changed(path);
    // Only a 'rename' (create, delete, move) can make or unmake a directory; 'change' is content or attributes.
    if (event !== 'rename') return;
    check(path);
    // libuv names events on the watched directory itself (deleted, moved, its watch gone) by its own basename.
    if (filename === basename(dir) && !watched.get(path)) check(dir);
  };

  const onError = (dir: string, watcher: FSWatcher, error: Error) => {
    if (closed || watched.get(dir)?.watcher !== watcher) return;
    if (isResourceExhausted(error)) return exhausted(error);
    log.warn(`watcher (dirs): ${dir}: ${describeError(error)}`);
    unwatch(dir);
    check(dir); // still there: watched afresh
    if (watched.has(dir)) void sink.rescan(dir);
  };

  const close = async () => {
    closed = true;
    clearInterval(rootPoll);
    for (const entry of watched.values()) entry.watcher.close();
    watched.clear();
    toRead.length = 0;
  };

  // Start: the roots, then every directory the index holds (parents come before children in
  // URI order), or, without a list, a walk of the roots.
  let count = 0;
  for (const root of roots) {
    const st = lstatOrNull(root.path);
    if (st?.isDirectory()) watchOne(root.path, st);
    else rootMissing(root.path);
  }
  const stopped = () => start.stopped?.() === true;
  try {
    if (start.directories) {
      let slice = roots.map((r) => r.path).filter((p) => watched.has(p));
      for (const dir of start.directories()) {
        if (failure || closed || stopped()) break;
        if (watched.has(dir) || rules.isIgnored(dir, true)) continue;
        const st = lstatOrNull(dir);
        if (st?.isDirectory() && watchOne(dir, st)) slice.push(dir);
        if (++count % START_SLICE === 0) {
          start.watching?.(slice);
          slice = [];
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
      if (!failure && !closed) start.watching?.(slice);
    } else {
      const walked = new Promise<void>((resolve) => (idle = resolve));
      toRead.push(...roots.map((r) => r.path).filter((p) => watched.has(p)));
      pump();
      await walked;
      idle = undefined;
    }
    if (failure) throw failure;
    if (stopped()) throw new Error('closed while starting');
  } catch (error) {
    // Whatever ended the start (out of watches, the caller closed, the index's list failing): no watch outlives it.
    await close();
    throw error;
  }
  ready = true;
  return {
    backend: 'dirs',
    get watching() {
      return watched.size;
    },
    isWatching: (dir) => watched.has(dir),
    rewatch(dir) {
      // Every reason means the same here: a directory that may have no watch yet.
      if (!closed) check(dir);
    },
    close,
  };
}

/** Off Linux: one native recursive watch per root (FSEvents on macOS, ReadDirectoryChangesW on Windows). */
async function startRecursive({ roots, sink }: WatchStart): Promise<DirsWatcher> {
  let closed = false;
  const watchers: FSWatcher[] = [];
  try {
    for (const root of roots) {
      const watcher = watch(root.path, { recursive: true, persistent: false }, (_event, filename) => {
        if (closed) return;
        // A null name: the OS dropped the details (e.g. FSEvents' MustScanSubDirs).
        if (filename === null) void sink.rescan(root.path);
        else sink.changed(join(root.path, filename));
      });
      watcher.on('error', (error) => {
        if (!closed) sink.fatal(error);
      });
      watchers.push(watcher);
    }
  } catch (error) {
    for (const watcher of watchers) watcher.close();
    throw error;
  }
  return {
    backend: 'dirs',
    get watching() {
      return closed ? 0 : watchers.length;
    },
    isWatching: (dir) => !closed && roots.some((r) => r.path === dir),
    async close() {
      closed = true;
      for (const watcher of watchers) watcher.close();
    },
  };
}

/** lstat, null when the path is gone or cannot be looked at (then it is not watched: the sync layer decides what it serves). */
function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

