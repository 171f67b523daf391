// The cold scan's watches on one thread (ScanWatch), and what a scan's
// worker thread loads to keep them there (observeThread, see
// src/index/scan-observer.ts); both threads' as one: scan-changes.ts.
// scripts/build.mjs builds this module on its own (dist/scan-watch.js) for
// the worker to load: it imports nothing that starts anything.
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { basename, join } from '../fs-path.ts';
import { describeError, errnoCode, isNoEntry } from '../errno.ts';
import type { ThreadScanObserver } from '../index/scan-observer.ts';
import type { ScanChanges } from '../watching.ts';

/** Paths changed during a scan past which their list is dropped and the tree diffed instead (a checkout mid-scan). */
export const SCAN_WATCH_MAX_PATHS = 20_000;
/**
 * Directories a thread's scan watches at most; past it they are closed and
 * the tree is diffed after the scan, as without them. Memory: until the
 * watcher proper has taken them over, both sets of watches are held, and at
 * 1M files (50k directories) that took the server's peak RSS to 412-420 MiB
 * (376 in two other runs) against 340 without, over the 400 MiB budget. At
 * the bench's 20 files a directory this is about 400k files.
 */
export const SCAN_WATCH_MAX_DIRS = 20_000;

/**
 * Resolves once the thread's event loop has been through its poll phase
 * after the call: a ScanWatch told to stop watching (release, finish) still
 * takes the events the kernel queued before then (closing a watch drops
 * those not yet read), and one that happened before the watcher proper
 * watched must not be lost. Two turns of the check phase have a poll phase
 * between them wherever the call is made; a timer does not (a loop slower
 * than the timer runs it before the next poll).
 */
function afterNextPoll(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/**
 * Events taken in one go (one poll of the thread's loop), past a quarter of
 * this, give the record up (ScanWatch's burst): inotify queues at most max_queued_events (16384 by
 * default) and drops the rest, and Node does not report the overflow. A
 * thread busy for a while (the worker builds the secondary indexes
 * synchronously: 0.3 s at 100k entries, seconds at 1M) then reads a full
 * queue at once; a quarter of it leaves room for the events of other watches
 * on the same inotify instance (the watcher proper's, during the hand-over).
 */
function readMaxQueuedEvents(): number {
  try {
    const value = Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8'));
    return Number.isFinite(value) && value > 0 ? value : 16384;
  } catch {
    return 16384;
  }
}

/**
 * How one directory is watched, by the scan's watches and by the `dirs`
 * backend (watch-dirs.ts): fs.watch, or a stand-in that fails like an
 * exhausted inotify (tests).
 */
export type WatchDirectory = (dir: string, listener: (event: string, filename: string | null) => void) => FSWatcher;

/** fs.watch, not persistent: the transport keeps the process alive, not the watches. */
export const fsWatchDirectory: WatchDirectory = (dir, listener) => watch(dir, { persistent: false }, listener);

/**
 * The cold scan's record of what changed behind it. The walk watches each
 * directory (non-recursive fs.watch: one inotify watch, no state per file)
 * just before it reads it, and these watches stay until the watcher proper
 * is up; so every change after a directory was read is named by an event
 * here or seen by that watcher, and the sync layer looks at just these paths
 * instead of diffing the whole tree again after the scan (1.3 s of disk
 * walk at 100k entries, 15-17 s at 1M).
 *
 * Linux only (inotify); elsewhere one watch per directory is costly or
 * recursive, and the tree is diffed as before. The record is given up, and
 * the tree diffed, when a watch cannot be set (out of watches), an event
 * names no file, more than SCAN_WATCH_MAX_PATHS paths change, or there are
 * more than SCAN_WATCH_MAX_DIRS directories to watch. Events are
 * taken whenever the thread's event loop turns (the walk yields between
 * batches); Node does not report an inotify queue overflow, which loses
 * events silently, so a burst of events taken at once that could have
 * filled the queue (a quarter of max_queued_events) gives the record up too.
 */
export class ScanWatch {
  private readonly watches = new Map<string, FSWatcher>();
  private readonly changed = new Set<string>();
  private unknown: string | null = null;
  private closed = false;
  /** Events taken since the loop last got past its poll phase (see burstMax). */
  private burst = 0;
  /** A quarter of inotify's queue (see readMaxQueuedEvents): read on the first event, once per record. */
  private burstMaxValue: number | undefined;

  constructor(
    private readonly maxPaths = SCAN_WATCH_MAX_PATHS,
    private readonly watchDirectory: WatchDirectory = fsWatchDirectory,
    private readonly maxDirs = SCAN_WATCH_MAX_DIRS,
  ) {}

  /** Watches `dir`; called just before the walk reads it. */
  watch(dir: string): void {
    if (this.closed || this.unknown !== null) return;
    if (this.watches.size >= this.maxDirs) return this.giveUp(`more than ${this.maxDirs} directories to watch`);
    let watcher: FSWatcher;
    try {
      watcher = this.watchDirectory(dir, (_event, filename) => this.record(dir, filename));
    } catch (error) {
      const code = errnoCode(error);
      // Gone or unreadable: the walk finds that too, and its parent's watch names it if it comes back.
      if (isNoEntry(error) || code === 'EACCES' || code === 'EPERM') return;
      this.giveUp(`cannot watch ${dir} (${describeError(error)})`);
      return;
    }
    watcher.on('error', (error: NodeJS.ErrnoException) => this.giveUp(`a watch failed (${error.code ?? error.message})`));
    this.watches.set(dir, watcher);
  }

  /** Directories watched now. */
  get watching(): number {
    return this.watches.size;
  }

  /**
   * Closes the watches of `dirs`, which the watcher proper now watches
   * (after the next poll: the events queued before it did still reach this
   * thread first). Half the memory of two full sets of watches at once
   * (at 1M files, 50k watches: about 60 MiB each).
   */
  release(dirs: readonly string[]): void {
    if (this.closed || this.unknown !== null) return;
    void afterNextPoll().then(() => {
      if (this.closed) return;
      for (const dir of dirs) {
        this.watches.get(dir)?.close();
        this.watches.delete(dir);
      }
    });
  }

  /**
   * Once the watcher proper is up: takes the events still queued (they
   * reach this thread when its loop next polls), closes every watch, and
   * says what changed.
   */
  async finish(): Promise<ScanChanges> {
    if (!this.closed) await afterNextPoll();
    this.close();
    return this.unknown !== null ? { unknown: this.unknown } : { paths: [...this.changed] };
  }

  /** Closes every watch; what was recorded stays for finish(). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.closeWatches();
  }

  private record(dir: string, filename: string | null): void {
    if (this.closed || this.unknown !== null) return;
    if (filename === null) return this.giveUp(`an event in ${dir} named no file`);
    // Every event queued when the loop polls is taken in that one poll; the check phase comes next.
    if (this.burst++ === 0) setImmediate(() => (this.burst = 0));
    if (this.burst >= (this.burstMaxValue ??= Math.floor(readMaxQueuedEvents() / 4))) return this.giveUp(`${this.burst} events at once: inotify's queue may have overflowed and dropped some`);
    this.changed.add(join(dir, filename));
    // libuv names an event on the watched directory itself (deleted, moved away, its watch gone) by the
    // directory's own basename: then the directory may have been replaced by another of its name, whose
    // entries no watch saw. Named itself, its subtree is diffed (for a root, whose parent nobody watches,
    // the whole root). A child of the directory's own name costs the same diff, needlessly.
    if (filename === basename(dir)) this.changed.add(dir);
    if (this.changed.size > this.maxPaths) this.giveUp(`more than ${this.maxPaths} paths changed during the scan`);
  }

  private giveUp(reason: string): void {
    if (this.unknown !== null) return;
    this.unknown = reason;
    this.changed.clear();
    this.closeWatches();
  }

  private closeWatches(): void {
    for (const watcher of this.watches.values()) watcher.close();
    this.watches.clear();
  }
}

/** Both threads' records as one: the paths of both, or the first reason either is unknown. */
export function mergeScanChanges(a: ScanChanges, b: ScanChanges): ScanChanges {
  if ('unknown' in a) return a;
  if ('unknown' in b) return b;
  return { paths: [...a.paths, ...b.paths] };
}

/** What the main thread's record (scan-changes.ts) tells a worker thread's watches: these directories are watched by the watcher proper now; or it is up. */
export type ScanWatchOrder = { type: 'release'; dirs: readonly string[] } | { type: 'finish' };

/**
 * A scan's worker thread loads this module (ScanObserver.threadModule) and
 * watches with it the directories it reads; once its walk is done, it holds
 * the watches until told to finish, then sends what they recorded.
 */
export function observeThread(send: (changes: ScanChanges) => void): ThreadScanObserver {
  const watch = new ScanWatch();
  return {
    beforeRead: (dir) => watch.watch(dir),
    receive: (message) => {
      const order = message as ScanWatchOrder;
      if (order.type === 'release') watch.release(order.dirs);
      else if (order.type === 'finish') void watch.finish().then(send);
    },
    close: () => watch.close(),
  };
}
