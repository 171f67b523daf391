import { lstat, lstatSync, realpathSync, type Stats } from 'node:fs';
import { dirname, join, outermostDirs, toSlashPath } from '../fs-path.ts';
import type { FSWatcher } from 'chokidar';
import { every, realClock, type Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import { ROOT_RETURN_POLL_MS } from './watch-dirs.ts';
import type { RewatchReason } from '../watching.ts';
import { isResourceExhausted, type StartWatcher, type Watcher, type WatchStart } from './watcher.ts';

/**
 * chokidar 5 never says `ready` when a directory it is reading during its
 * first walk is replaced meanwhile (a file or another directory of the same
 * name): 9 of 20 starts on a small tree changed 0-4 ms after the start. The
 * server's catch-up waits for the backend to be ready, so it waited for good
 * (the fuzzer found it). chokidar looks at every path of its walk through our
 * `ignored` filter, so that is its progress: past this long without a look
 * and without `ready`, the start is taken as done, and chokidar is opened
 * afresh over the roots once it is (the roots diffed with the index after):
 * a stalled walk may have left any directory unwatched, a served folder
 * re-made meanwhile included, whose new inode is often the old one's number
 * (fuzzer seed 20130: nothing in the root was heard of again).
 */
const STALLED_MS = 2000;
/** Stalled walks in a row after which chokidar is given up (the supervisor degrades to poll): the tree never holds still. */
const MAX_STALLS = 3;
/** Debug lines about folders reached through a link, at most (a link to / would name every folder at its top, each read). */
const LINK_LOG_LINES = 100;

/**
 * chokidar: one fs.watch (inotify watch) per directory and per file, so it is
 * exact but costs a watch and some memory per entry. Ignored directories are
 * pruned through the same IgnoreRules as the scan, so `build/` or
 * `node_modules/` never cost a watch.
 *
 * Six faults of chokidar 5 that the fuzzer, CI or a test found are worked around here:
 * - its own events come from comparing names, so a directory replaced by a
 *   file of the same name (or back) between two of its reads is reported by
 *   nobody: its raw events (every fs.watch event) are hints too;
 * - a walk disturbed by a replaced directory never ends (STALLED_MS: it is
 *   walked again, and given up for poll after MAX_STALLS in a row);
 * - a watched directory replaced by another of the same name (a folder
 *   re-made, two folders swapped) keeps its dead watch, shared by path, and
 *   `add` of the path reuses it: nothing in the new one is ever reported. A
 *   fresh chokidar over the roots, opened once the old one is closed, is the
 *   only cure found: when the sync layer says a directory was replaced
 *   (`rewatch`, reason `replaced`), once for a burst of them, and the roots
 *   are diffed with the index after (nothing was watched in between);
 * - a link given to `add` is watched through its parent's watch, and when
 *   the link goes the parent's raw events go too (one raw listener per
 *   watch, shared): only folders are added (`rewatch`);
 * - its watch of a folder swapped for a link reads the old path, so it walks
 *   and watches whatever the link leads to: a folder or file reached through
 *   a link is ignored (`reachedThroughLink`);
 * - a watch it opens can outlive its close(): see closingEveryWatch.
 */
export function chokidarWatcher(options: { stalledMs?: number } = {}): StartWatcher {
  const stalledMs = options.stalledMs ?? STALLED_MS;
  return (start) => startChokidar(start, stalledMs);
}

export const startChokidarWatcher: StartWatcher = chokidarWatcher();

async function startChokidar(start: WatchStart, stalledMs: number): Promise<Watcher> {
  // Loaded here, not at import: start-up does not wait for a backend that may not be chosen (auto runs dirs).
  const { watch } = await import('chokidar');
  const watcher = new ChokidarWatcher(start, stalledMs, watch);
  await watcher.begin();
  return watcher;
}

type ChokidarWatch = (typeof import('chokidar'))['watch'];

/** chokidar over the roots, opened afresh when its watches may have gone dead (see chokidarWatcher). */
class ChokidarWatcher implements Watcher {
  readonly backend = 'chokidar' as const;
  private closed = false;
  /** Out of watches after the start: the supervisor degrades to poll. */
  private running = false;
  /** The chokidar now; replaced when it is opened afresh (renew). */
  private current!: FSWatcher;
  /** A fresh chokidar replacing `current`: under way (for close), and whether another was asked for meanwhile. */
  private renewing: Promise<void> | null = null;
  private renewAgain = false;
  /** Walks in a row that stalled: past MAX_STALLS chokidar is given up for poll. */
  private stalls = 0;
  /** Each served folder's identity at the last look (see pollRoots). */
  private readonly identity: Map<string, string>;
  private rootPoll: { stop(): void } | undefined;
  private readonly clock: Clock;

  /**
   * The last folder looked at for links (reachedThroughLink): the files of
   * one folder come one after another, so their folder is looked at once
   * per 20 ms (a folder and its files share the look).
   */
  private lastFolder = '';
  private lastFolderReal = true;
  private lastFolderAt = 0;
  /** Folders said to be reached through a link, in the debug log: each once, and no more than LINK_LOG_LINES. */
  private readonly linkLogged = new Set<string>();

  constructor(
    private readonly start: WatchStart,
    private readonly stalledMs: number,
    private readonly watch: ChokidarWatch,
  ) {
    this.clock = start.clock ?? realClock;
    // Before the first walk: a served folder re-made while chokidar walks it is a change the first look sees.
    this.identity = new Map(start.roots.map((r) => [r.path, directoryIdentity(r.path)]));
  }

  /** Resolves once the first chokidar is ready (or its walk stalled: then it is opened afresh at once). */
  async begin(): Promise<void> {
    const first = await this.open();
    this.current = first.watcher;
    this.running = true;
    this.stalls = first.stalled ? 1 : 0;
    // A served folder that went away is not watched by chokidar any more, and its
    // parent is not watched: as with dirs, it is looked for, and once back (rm -rf
    // and mkdir, a checkout that re-made it) reported, so the sync layer finds it
    // replaced and chokidar is opened afresh (fuzzer seed 7012).
    this.rootPoll = every(this.clock, ROOT_RETURN_POLL_MS, () => this.pollRoots());
    // A stalled walk may have left any directory unwatched, a served folder included: chokidar is opened afresh.
    if (first.stalled) this.renewSoon('a directory replaced during its first walk');
  }

  rewatch(dir: string, reason: RewatchReason): void {
    if (this.closed) return;
    // While chokidar is opened afresh, `current` is the one being closed: a
    // directory added to it was never watched (fuzzer seed 8197). One more
    // fresh walk, after the one under way, covers it.
    if (reason !== 'replaced' && !this.renewing) {
      // chokidar walks the new directories it sees itself, but not always in
      // time: one made while it was getting ready can stay unwatched for good.
      // Adding one it already watches costs a listener and a readdir.
      // Not a link (a folder swapped for one since the walk found it): for a
      // link chokidar adds a listener to the parent's watch, and when the link
      // goes, the parent's raw events go with it (chokidar keeps one raw
      // listener per watch, shared by all its listeners there).
      const adding = this.current;
      lstat(dir, (error, st) => {
        if (this.closed) return;
        if (error || !st.isDirectory()) return this.start.log.debug(`watcher (chokidar): ${dir} is not a folder now, not added`);
        // Opened afresh meanwhile: as below.
        if (!this.renewing && adding === this.current) this.current.add(dir);
        else this.renewSoon(`${dir} found while opening it afresh`);
      });
      return;
    }
    this.renewSoon(reason === 'replaced' ? `${dir} replaced by another directory` : `${dir} found while opening it afresh`);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.rootPoll?.stop();
    await this.renewing;
    await this.current.close();
  }

  /**
   * A folder, or a file of a folder, whose path goes through a link. Files
   * too: chokidar watches each file, and a link's target may hold thousands.
   */
  private reachedThroughLink(path: string, stats: Stats): boolean {
    const folder = stats.isDirectory() ? path : dirname(path);
    const now = this.clock.now();
    if (folder !== this.lastFolder || now - this.lastFolderAt > 20) {
      this.lastFolder = folder;
      this.lastFolderAt = now;
      this.lastFolderReal = isRealPath(folder);
      if (!this.lastFolderReal && this.linkLogged.size < LINK_LOG_LINES && !this.linkLogged.has(folder)) {
        this.linkLogged.add(folder);
        this.start.log.debug(`watcher (chokidar): ${folder} is reached through a link: not watched`);
      }
    }
    return !this.lastFolderReal;
  }

  /** Without stats chokidar has not decided yet what the path is; a directory-only rule (`build/`) is checked again when stats come. */
  private ignored(path: string, stats?: Stats): boolean {
    // Not a folder reached through a link: its watch of a folder swapped for a link reads the
    // old path, so whatever the link leads to was walked and watched (a link to /usr/share:
    // 42,000 entries, 3,200 folders watched in 6 s; one to / would take the whole disk).
    if (stats && this.reachedThroughLink(path, stats)) return true;
    return this.start.rules.isIgnored(path, stats?.isDirectory() ?? false);
  }

  /** One chokidar over the roots; resolves once it is ready, or its walk stalled (then it may have missed any directory). */
  private open(): Promise<{ watcher: FSWatcher; stalled: boolean }> {
    const { roots, sink, log } = this.start;
    return new Promise((resolve, reject) => {
      let ready = false;
      let lastLook = this.clock.now();
      const watcher = this.watch(
        // A served folder inside another is watched as part of it: given as a
        // root of its own, chokidar watches its parent for it while it is gone,
        // and that watch, sharing the parent's reads, hid every other change in
        // the parent (fuzzer seed 6166).
        outermostDirs(roots.map((r) => r.path)),
        {
          ignoreInitial: true,
          followSymlinks: false,
          persistent: true,
          // chokidar's atomic mode hides editor temp files (`x~`, `.x.swp`) that
          // the scan serves; we stat every path anyway, so a save that arrives
          // as unlink + add still ends as one updated row.
          atomic: false,
          // chokidar looks at every path of its walk through this filter: that is its progress (STALLED_MS).
          ignored: (path: string, stats?: Stats) => {
            lastLook = this.clock.now();
            return this.ignored(path, stats);
          },
        },
      );
      closingEveryWatch(watcher, log);
      this.forwardEvents(watcher);
      watcher.on('error', (error: unknown) => {
        if (this.closed) return;
        if (isResourceExhausted(error)) {
          if (this.running) return sink.fatal(error as Error);
          stallCheck.stop();
          void watcher.close();
          return reject(error);
        }
        // e.g. EACCES on one directory: that subtree is not watched, the rest is.
        log.warn(`watcher (chokidar): ${(error as Error).message ?? String(error)}`);
      });
      const started = (stalled: boolean) => {
        if (ready) return;
        ready = true;
        stallCheck.stop();
        resolve({ watcher, stalled });
      };
      watcher.on('ready', () => started(false));
      const stallCheck = every(this.clock, this.stalledMs / 4, () => {
        if (ready || this.clock.now() - lastLook < this.stalledMs) return;
        log.info(`watcher (chokidar): its walk stalled without \`ready\` (a directory replaced while it read it); opening it afresh`);
        started(true);
      });
    });
  }

  /** chokidar's events, and its raw ones (every fs.watch event: see chokidarWatcher), as paths that may have changed. */
  private forwardEvents(watcher: FSWatcher): void {
    const { sink } = this.start;
    // chokidar names paths as the platform spells them: backslashes on Windows.
    const changed = (path: string) => {
      if (!this.closed) sink.changed(toSlashPath(path));
    };
    for (const event of ['add', 'addDir', 'change', 'unlink', 'unlinkDir'] as const) watcher.on(event, changed);
    // The watched path and the name in it. On a file's own watch the name is
    // the file's, so both paths are looked at (one does not exist: an lstat).
    watcher.on('raw', (_event, name: string | null, details: unknown) => {
      const watched = (details as { watchedPath?: unknown } | undefined)?.watchedPath;
      if (this.closed || typeof watched !== 'string') return;
      const dir = toSlashPath(watched);
      sink.changed(dir);
      if (name) sink.changed(join(dir, toSlashPath(name)));
    });
  }

  /** Closes `current` and opens a fresh chokidar, again while one was asked for meanwhile or the walk stalled. */
  private async renew(): Promise<void> {
    const { roots, sink } = this.start;
    try {
      do {
        this.renewAgain = false;
        // Closed first: a chokidar opened beside it would share its dead watches (they are kept by path).
        await this.current.close();
        if (this.closed) return;
        const fresh = await this.open().catch((error: unknown) => {
          if (!this.closed) sink.fatal(error as Error);
          return null;
        });
        if (!fresh) return;
        this.current = fresh.watcher;
        if (this.closed) return;
        // Nothing was watched in between: what changed then is found by a look at the disk.
        for (const root of roots) void sink.rescan(root.path);
        this.stalls = fresh.stalled ? this.stalls + 1 : 0;
        if (this.stalls >= MAX_STALLS) {
          sink.fatal(new Error(`its walk of the folders stalled ${this.stalls} times in a row (directories replaced while it read them)`));
          return;
        }
        if (fresh.stalled) this.renewAgain = true;
      } while (this.renewAgain && !this.closed);
    } finally {
      // In the same turn as the last look at renewAgain: cleared by a .finally() on the promise, one asked for
      // in the microtasks between was neither run again nor started.
      this.renewing = null;
    }
  }

  /** `why`: for the debug line. */
  private renewSoon(why: string): void {
    this.start.log.debug(`watcher (chokidar): watching afresh (${why})${this.renewing ? ', after the renewal under way' : ''}`);
    if (this.renewing) {
      this.renewAgain = true;
      return;
    }
    this.renewing = this.renew();
  }

  /** By identity, not presence: rm -rf and mkdir between two looks is a change too. */
  private pollRoots(): void {
    if (this.closed) return;
    for (const [path, was] of this.identity) {
      const is = directoryIdentity(path);
      if (is === was) continue;
      this.identity.set(path, is);
      this.start.sink.changed(path);
      // Back, or re-made: chokidar's watch of it is dead, whatever the index says of its identity.
      if (is) this.renewSoon(`${path} back or re-made`);
    }
  }
}

/**
 * chokidar runs the closer of each fs.watch it opened when it is closed, but
 * two kinds outlive its close(), a descriptor and an inotify watch each, for
 * good: CI hung on one (its process never ended), and a stress of the test
 * that replaces folders during the first walk left one open in about 1 start
 * of 100 beside 8 busy processes, on Node 20 and 24.
 * - What it opens once closed: a file's watch whose stat was under way at
 *   close() finds the file gone, and, its folder's record being the only one
 *   left (close() cleared them), chokidar "watches for its return": add()
 *   of the folder, which sets `closed` back to false and watches it again.
 * - A watch whose closer it drops: _handleFile returns before its closer
 *   when the file's `add` event is throttled (read in its code; not seen).
 * Once close() is called, add() does nothing here, and every fs.watch it
 * opens is counted: one opened from then on is closed at once, and what its
 * close() leaves open is closed after it. The count alone would close what
 * a late add() opens; add() doing nothing also spares its reads. This
 * reaches into chokidar's private handler (_nodeFsHandler,
 * _watchWithNodeFs): a chokidar without them gets only the first, and the
 * tests, which end with every watch closed, tell.
 */
function closingEveryWatch(watcher: FSWatcher, log: Logger): void {
  type Closer = () => unknown;
  let closing = false;
  const open = new Set<Closer>();
  const add = watcher.add.bind(watcher);
  watcher.add = (...args) => (closing ? watcher : add(...args));
  const close = watcher.close.bind(watcher);
  const closeLeft = () => {
    if (open.size > 0) log.debug(`watcher (chokidar): closing ${open.size} watch(es) it left open`);
    for (const closer of open) {
      try {
        closer();
      } catch (error) {
        log.debug(`watcher (chokidar): a watch it left open would not close: ${(error as Error).message}`);
      }
    }
  };
  watcher.close = () => {
    closing = true;
    // Whether chokidar's own close went through or not, what it left open is closed.
    return close().finally(closeLeft);
  };
  const handler = (watcher as unknown as { _nodeFsHandler?: { _watchWithNodeFs?: (path: string, listener?: unknown) => Closer | undefined } })._nodeFsHandler;
  const watchWith = handler?._watchWithNodeFs;
  if (!handler || typeof watchWith !== 'function') return void log.debug('watcher (chokidar): its handler is not the one known; the watches it drops are left open');
  handler._watchWithNodeFs = (path, listener) => {
    const closer = watchWith.call(handler, path, listener);
    if (!closer) return closer;
    // Once: chokidar's own closer throws when run twice (its record is frozen by then).
    const once: Closer = () => {
      if (!open.delete(once)) return;
      return closer();
    };
    open.add(once);
    if (closing) return void once();
    return once;
  };
}

/** Whether no component of `path` is a link (true when it cannot be told: gone, unreadable). */
function isRealPath(path: string): boolean {
  try {
    return toSlashPath(realpathSync.native(path)) === path;
  } catch {
    return true;
  }
}

/** The directory at `path` now, as device:inode:birth time; '' when gone, replaced by a file, or unreadable on the way. */
function directoryIdentity(path: string): string {
  try {
    const st = lstatSync(path, { throwIfNoEntry: false });
    // The birth time too: a folder re-made at once often gets the inode number of the one removed.
    return st?.isDirectory() ? `${st.dev}:${st.ino}:${st.birthtimeMs}` : '';
  } catch {
    return '';
  }
}
