import type { WatcherKind } from '../config.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import type { Logger } from '../log.ts';
import type { Store } from '../index/store.ts';
import { pathToUri, uriToPath } from '../uri.ts';
import { BACKEND_STARTERS, planWatchers, type WatcherPlan } from './choose.ts';
import { Reconciler } from './reconcile.ts';
import { isResourceExhausted, outermostDirs, type StartWatcher, type Watcher, type WatcherBackend, type WatchSink } from './watcher.ts';

/**
 * How long after a new directory's first walk it is walked again: soon, and
 * once more later, for a watcher slow to watch it on a loaded machine
 * (measured: chokidar missed files written into a new directory of a burst).
 */
const RECHECK_DELAYS_MS = [1000, 5000];
/**
 * Safety net: with a watcher running, the whole tree is diffed again every
 * so often, at least this long apart and at most 1% of the time (a pause of
 * 100 times the last diff's duration). Watchers do lose events (inotify queue
 * overflow, races on directories that come and go); this bounds how long a
 * lost event can leave the index wrong.
 */
const SAFETY_MIN_INTERVAL_MS = 60_000;
const SAFETY_DUTY_FACTOR = 100;
/** After this long without a flush, the next change is applied at once (the leading edge). */
const QUIET_SPELL_MS = 250;
/**
 * Paths a backend reported are looked at again this long after they were
 * applied (a write seen half done; measured: chokidar drops its rest): soon,
 * and once more later for a writer slowed down by a loaded machine. Only
 * reported paths: the looks again report nothing themselves.
 */
const RECHECKS_MS = [150, 1000];
/** A flush with more reported paths than this (a checkout, an unpacked archive) is not looked at again path by path. */
const RECHECK_MAX_PATHS = 5000;

export interface LiveSyncOptions {
  index: FolderIndex;
  log: Logger;
  watcher: WatcherKind;
  /** `--poll-interval`: the poll backend's shortest pause between two polls. */
  pollIntervalMs?: number;
  /** Events are applied this long after the last one of a burst... */
  debounceMs?: number;
  /** ...and no later than this after the first. */
  maxBatchDelayMs?: number;
  /** The backends' start functions (injected so a test can make one fail like an exhausted inotify). */
  starters?: Record<WatcherBackend, StartWatcher>;
}


/**
 * Keeps the index equal to the disk while the server runs: starts a watcher
 * backend (degrading to the next one when it cannot go on), gathers the
 * paths it reports, and applies them in batches. Every write (event batches,
 * the start-up reconcile, rescans) runs on one serial queue, so they never
 * interleave; each decides from the disk as it is when it runs, so whatever
 * order they run in, the last one leaves the index equal to the disk.
 */
export class LiveSync {
  private readonly reconciler: Reconciler;
  private readonly debounceMs: number;
  private readonly maxBatchDelayMs: number;
  private dirty = new Set<string>();
  /** Of `dirty`, the paths a backend reported (not those looked at again). */
  private reported = new Set<string>();
  /** Paths looked at after watcher events, looks again included (for tests). */
  pathsLookedAt = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private firstDirtyAt = 0;
  private lastFlushAt = -Infinity;
  private flushQueued = false;
  private queue: Promise<void> = Promise.resolve();
  private watcher: Watcher | undefined;
  private plan: WatcherPlan | undefined;
  private closed = false;
  private degrading = false;

  constructor(private readonly options: LiveSyncOptions) {
    this.reconciler = new Reconciler(
      options.index,
      options.log,
      () => this.closed,
      (dir, reason) => this.watcher?.rewatch?.(dir, reason),
      (dir) => this.recheckLater(dir),
    );
    this.debounceMs = options.debounceMs ?? 20;
    this.maxBatchDelayMs = options.maxBatchDelayMs ?? 500;
  }

  /** The running backend, if any. */
  get backend(): WatcherBackend | undefined {
    return this.watcher?.backend;
  }

  /**
   * Starts live updates. A warm index starts the watcher at once, then
   * checks the index against the disk: the cold scan's walk over every root,
   * on its worker thread, each directory's entries compared with the index's
   * (type, size, mtime), in the background. A cold one starts it after the
   * first scan (whose size `auto` needs), then looks at what changed behind
   * the scan: the paths its watches named (see ScanWatch), or, without them,
   * a diff of the roots. Watcher events gathered meanwhile are applied after.
   * Resolves once the watcher runs and the catch-up is done.
   *
   * No record of the tree is kept between runs: @parcel/watcher's snapshots
   * did that and missed a directory replaced by a file of the same name, a
   * file replaced by an empty directory, a file grown with its mtime put back
   * (issue 22), and every later run kept the error. The walk reads the disk.
   */
  async start(): Promise<void> {
    const { index, log } = this.options;
    try {
      await index.ready;
    } catch {
      return; // the scan failed (or the index closed): requests report it
    }
    if (this.closed) return;
    this.plan = planWatchers(this.options.watcher);
    await this.startWatcher(this.plan.candidates, this.plan.reason);
    const asked = performance.now();
    // Taken now that the watcher is up: between the two, every change is seen by one or the other.
    const scanChanges = index.warm ? null : await index.takeScanChanges();
    if (this.closed) return;
    let ms: number;
    if (scanChanges && 'paths' in scanChanges) {
      await this.reconcileScanChanges(scanChanges.paths);
      if (this.closed) return;
      log.info(
        `index checked against the disk in ${Math.round(performance.now() - asked)} ms (${scanChanges.paths.length} path(s) changed during the scan)`,
      );
      // No diff ran to time: the scan's own time stands in for one (a diff walks the same tree).
      ms = index.scanMs;
    } else {
      if (scanChanges) log.info(`the scan's watches cannot tell what changed behind it (${scanChanges.unknown}): diffing the tree`);
      ms = await this.diffRoots();
      if (this.closed) return;
      log.info(`index checked against the disk in ${ms} ms`);
    }
    this.scheduleSafetyDiff(ms);
  }

  /**
   * What changed behind the cold scan, on the queue: each path, then the
   * subtree of each that was an indexed directory and still is. An event
   * naming a directory (created, removed, renamed, replaced by another of the
   * same name) may hide changes within it that no watch saw: the scan's watch
   * on it was on the one it read.
   */
  private reconcileScanChanges(paths: readonly string[]): Promise<void> {
    const { store, roots } = this.options.index;
    const isIndexedDirectory = (path: string) => store.get(pathToUri(path, true)) !== undefined;
    return this.enqueue(async () => {
      const wereDirectories = paths.filter(isIndexedDirectory);
      // Each root too, whatever its watch said: one re-made since the scan read it (rm -rf, mkdir) is
      // of another identity and walked whole, one whose entries changed is listed again (Reconciler.paths).
      await this.reconciler.paths([...roots.map((root) => root.path), ...paths]);
      for (const dir of outermostDirs(wereDirectories.filter(isIndexedDirectory))) {
        if (this.closed) return;
        await this.reconciler.tree(dir);
      }
    });
  }

  /** Looks at `paths` (absolute) on the write queue; resolves once what they show is committed (the write tools). */
  refresh(paths: readonly string[]): Promise<void> {
    return this.reconcilePaths(paths);
  }

  /** Looks at `paths` on the queue. */
  private reconcilePaths(paths: readonly string[]): Promise<void> {
    return this.enqueue(() => this.reconciler.paths(paths));
  }

  /** Diffs every root with the disk on the queue; resolves to how long it took. */
  private async diffRoots(): Promise<number> {
    let ms = 0;
    await this.enqueue(async () => {
      const started = performance.now();
      for (const root of this.options.index.roots) await this.reconciler.tree(root.path);
      ms = Math.round(performance.now() - started);
    });
    return ms;
  }

  private safetyTimer: NodeJS.Timeout | undefined;

  private scheduleSafetyDiff(lastMs: number): void {
    const backend = this.watcher?.backend;
    // poll diffs all the time anyway; none promised a static index.
    if (this.closed || backend === undefined || backend === 'poll' || backend === 'none') return;
    this.safetyTimer = setTimeout(
      async () => {
        const before = this.reconciler.written;
        const ms = await this.diffRoots();
        const missed = this.reconciler.written - before;
        if (missed > 0 && !this.closed) {
          // Includes changes whose events were still in the debounce window; a large number means lost events.
          this.options.log.info(`periodic check applied ${missed} change(s) not yet applied from watcher events (${ms} ms)`);
        }
        this.scheduleSafetyDiff(ms);
      },
      Math.max(SAFETY_MIN_INTERVAL_MS, SAFETY_DUTY_FACTOR * lastMs),
    );
    this.safetyTimer.unref();
  }

  /** Stops the watcher and waits for the write in progress; nothing is written after. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.flushTimer);
    for (const timer of this.recheckTimers) clearTimeout(timer);
    clearTimeout(this.safetyTimer);
    const watcher = this.watcher;
    this.watcher = undefined;
    await watcher?.close().catch(() => {});
    // Tasks still waiting for the first scan would wait for all of it: the
    // caller closes the index next, which ends the scan, and they then see
    // `closed` and do nothing. Only a write in progress is waited for.
    if (this.options.index.isReady) await this.queue;
  }

  /** New directories to diff again, per pass of RECHECK_DELAYS_MS (see Reconciler's recheckLater). */
  private recheck = RECHECK_DELAYS_MS.map(() => new Set<string>());
  private recheckTimers: (NodeJS.Timeout | undefined)[] = RECHECK_DELAYS_MS.map(() => undefined);

  private recheckLater(dir: string, pass = 0): void {
    if (this.closed || pass >= RECHECK_DELAYS_MS.length) return;
    this.recheck[pass]!.add(dir);
    if (this.recheckTimers[pass] !== undefined) return;
    const delay = RECHECK_DELAYS_MS[pass]! - (RECHECK_DELAYS_MS[pass - 1] ?? 0);
    this.recheckTimers[pass] = setTimeout(() => {
      this.recheckTimers[pass] = undefined;
      const dirs = outermostDirs(this.recheck[pass]!);
      this.recheck[pass] = new Set();
      void this.enqueue(async () => {
        for (const dir of dirs) await this.reconciler.tree(dir);
      });
      for (const dir of dirs) this.recheckLater(dir, pass + 1);
    }, delay);
  }

  private readonly sink: WatchSink = {
    changed: (path) => {
      if (this.closed) return;
      this.dirty.add(path);
      this.reported.add(path);
      this.scheduleFlush(this.debounceMs);
    },
    rescan: (dir) => this.enqueue(() => this.reconciler.tree(dir)),
    fatal: (error) => void this.degrade(error),
  };

  private scheduleFlush(delayMs: number): void {
    if (this.flushQueued) return; // the queued flush takes whatever is dirty when it runs
    const now = performance.now();
    // Leading edge: the first change after a quiet spell is applied on the next
    // turn of the loop (which still gathers a backend's whole synchronous batch),
    // not after the debounce.
    const leading = this.flushTimer === undefined && now - this.lastFlushAt > QUIET_SPELL_MS;
    if (this.flushTimer === undefined) this.firstDirtyAt = now;
    else clearTimeout(this.flushTimer);
    const delay = leading ? 0 : Math.max(0, Math.min(delayMs, this.firstDirtyAt + this.maxBatchDelayMs - now));
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.lastFlushAt = performance.now();
      this.flushQueued = true;
      void this.enqueue(async () => {
        this.flushQueued = false;
        const reported = this.reported;
        this.reported = new Set();
        await this.applyDirty();
        // The flush may have looked mid-write (a file truncated, not yet
        // written, or written in pieces), and a backend may not report the
        // rest of that write (chokidar dropped it when it came 10-30 ms after
        // the truncation, within its own throttle of change events): look at
        // the reported paths once more a little later. Unchanged paths write
        // nothing and notify nobody, and these looks schedule no more looks.
        if (!this.closed && reported.size > 0 && reported.size <= RECHECK_MAX_PATHS) {
          for (const delay of RECHECKS_MS) {
            const again = setTimeout(() => {
              if (this.closed) return;
              for (const path of reported) this.dirty.add(path);
              this.scheduleFlush(this.debounceMs);
            }, delay);
            again.unref();
          }
        }
      });
    }, delay);
  }

  /** Looks at every path gathered so far (on the queue, from a task). */
  private async applyDirty(): Promise<void> {
    const paths = this.dirty;
    this.dirty = new Set();
    this.pathsLookedAt += paths.size;
    await this.reconciler.paths(paths);
  }

  /** Runs `task` after every task before it; a failure is logged, never thrown at the caller. */
  private enqueue(task: () => Promise<void>): Promise<void> {
    const run = async () => {
      if (this.closed) return;
      try {
        await this.options.index.ready;
        await task();
      } catch (error) {
        if (!this.closed) this.options.log.warn(`live update failed: ${(error as Error).stack ?? String(error)}`);
      }
    };
    this.queue = this.queue.then(run);
    return this.queue;
  }

  /** Starts the first candidate that starts; each failure is explained on stderr. */
  private async startWatcher(candidates: readonly WatcherBackend[], reason: string): Promise<boolean> {
    const { index, log } = this.options;
    for (let i = 0; i < candidates.length; i++) {
      const backend = candidates[i]!;
      if (this.closed) return false;
      const started = performance.now();
      let tookOver = false;
      try {
        const starters = this.options.starters ?? BACKEND_STARTERS;
        const watcher = await starters[backend]({
          roots: index.roots,
          rules: index.rules,
          sink: this.sink,
          log,
          directories: () => indexedDirectories(index.store),
          stopped: () => this.closed,
          watching: (dirs) => {
            tookOver = true;
            index.releaseScanWatches(dirs);
          },
          ...(this.options.pollIntervalMs !== undefined ? { pollIntervalMs: this.options.pollIntervalMs } : {}),
        });
        if (this.closed) {
          await watcher.close();
          return false;
        }
        this.watcher = watcher;
        const ms = Math.round(performance.now() - started);
        if (backend === 'none') log.info(`watcher: none (${reason}); the index changes only at start-up`);
        else log.info(`watcher: ${backend} (${reason}), ready in ${ms} ms`);
        return true;
      } catch (error) {
        if (this.closed) return false; // closed while it started: not a failure worth a warning
        // Its watches replaced some of the scan's, and are gone with it.
        if (tookOver) index.spoilScanChanges(`the ${backend} watcher failed after taking over from the scan's watches`);
        // Out of watches while the scan's still hold theirs (chokidar does not take them over):
        // let them go, and try the same backend again; the tree is then diffed, as without them.
        if (isResourceExhausted(error) && index.dropScanWatches()) {
          log.info(`watcher ${backend} ran out of watches while the scan's were held: released them, trying ${backend} again (the tree is diffed after)`);
          i--;
          continue;
        }
        const next = candidates[i + 1];
        log.warn(
          `watcher ${backend} could not start (${(error as Error).message ?? String(error)})` +
            (next ? `; falling back to ${next}` : ''),
        );
        reason = `${backend} failed to start`;
      }
    }
    log.warn('no watcher could start: the index changes only at start-up');
    return false;
  }

  /**
   * The running backend ran out of OS resources: close it, start the next
   * candidate, then diff the roots for whatever changed in between.
   */
  private async degrade(error: Error): Promise<void> {
    if (this.closed || this.degrading || !this.watcher || !this.plan) return;
    this.degrading = true;
    const failed = this.watcher;
    this.watcher = undefined;
    const rest = this.plan.candidates.slice(this.plan.candidates.indexOf(failed.backend) + 1);
    const fallback = rest.length > 0 ? rest : (['poll'] as const);
    this.options.log.warn(
      `watcher ${failed.backend} failed (${error.message}${isResourceExhausted(error) ? ': out of watches or file descriptors; raise fs.inotify.max_user_watches' : ''}); degrading to ${fallback[0]}`,
    );
    await failed.close().catch(() => {});
    if (await this.startWatcher(fallback, `${failed.backend} failed`)) await this.diffRoots();
    this.degrading = false;
  }
}

/** Collections read from the index per query. */
const DIRECTORY_PAGE = 5000;

/** Every collection of the index as a path, in URI order (a parent before its children), a page at a time. */
function* indexedDirectories(store: Store): Generator<string> {
  for (let after = ''; ; ) {
    const page = store.collectionUris(after, DIRECTORY_PAGE);
    for (const uri of page) yield uriToPath(uri);
    if (page.length < DIRECTORY_PAGE) return;
    after = page.at(-1)!;
  }
}
