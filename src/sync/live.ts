import { every, realClock, type Clock } from '../clock.ts';
import { outermostDirs } from '../fs-path.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import type { Logger } from '../log.ts';
import { pathToUri } from '../uri.ts';
import type { ScanChangesTaker, WatchHooks, WatcherBackend, WatcherControl } from '../watching.ts';
import { EventBatcher } from './batcher.ts';
import { Rechecks } from './rechecks.ts';
import type { ReconcileReport } from './pending-change.ts';
import { Reconciler } from './reconcile.ts';
import { RelistPace } from './relist-pace.ts';
import { WriteQueue } from './write-queue.ts';

/**
 * How often folders found unreadable are lstat'ed for a permission given
 * back (a ctime moved, which watchers do not reliably report): one lstat
 * each, and none while there are none.
 */
const LOCKED_RECHECK_MS = 1000;

export interface LiveOptions {
  index: FolderIndex;
  log: Logger;
  /**
   * Makes the watcher Live runs, given where it reports (app.ts:
   * watch/supervisor.ts's superviseWatcher). A factory, called once in the
   * constructor, because the watcher reports to the parts Live makes and
   * Live asks the watcher things: neither needs the other set later.
   */
  watch: (hooks: WatchHooks) => WatcherControl;
  /** Events are applied this long after the last one of a burst... */
  debounceMs?: number;
  /** ...and no later than this after the first. */
  maxBatchDelayMs?: number;
  /**
   * The record the index's cold scan kept (the index's scanObserver):
   * taken once the watcher is up, instead of a diff of the tree. Live owns
   * it from here: it closes it, unused when the index was warm.
   */
  scanChanges?: ScanChangesTaker;
  /** The time its delays go by (the batches, the rechecks, the periodic diff); a test's own, or the real one. */
  clock?: Clock;
}

/**
 * Disk -> index (one watcher for the process). Keeps the index equal to the
 * disk while the server runs; what it commits reaches clients through the
 * index's own hub (FolderIndex.onChange, src/protocol/notify.ts). Watcher events
 * are only hints: every path one names, and every doubt, leads to the
 * Reconciler looking at the disk (reconcile.ts: the one rule). The parts:
 *
 * - the watcher (WatcherControl; in the server watch/supervisor.ts's
 *   WatcherSupervisor, made by the `watch` factory) runs one backend and
 *   degrades to the next when it cannot go on;
 * - EventBatcher (batcher.ts) gathers the paths it reports into batches;
 * - Rechecks (rechecks.ts) walks new directories again and diffs the whole
 *   tree now and then, for the events a watcher loses;
 * - WriteQueue (write-queue.ts) runs every one of their writes in turn;
 * - this class starts them, catches up with what changed before the watcher
 *   ran, hands what each reconcile reports to the watcher and Rechecks
 *   (handOn), and stops them: one AbortSignal, its lifetime's, is what every
 *   part looks at to stop.
 */
export class Live {
  private readonly reconciler: Reconciler;
  private readonly queue: WriteQueue;
  private readonly batcher: EventBatcher;
  private readonly rechecks: Rechecks;
  private readonly watcher: WatcherControl;
  /** Live's lifetime, aborted by close(): every part stops on it (no part is handed a callback of its own for it). */
  private readonly lifetime = new AbortController();
  private lockedTimer: { stop(): void } | undefined;
  /** What changed behind the cold scan, until taken; null for a warm index (nothing scanned) or none kept. */
  private readonly scanChanges: ScanChangesTaker | null;

  constructor(private readonly options: LiveOptions) {
    const { index, log } = options;
    this.scanChanges = options.scanChanges ?? null;
    if (index.warm && this.scanChanges) {
      this.scanChanges.close();
      this.scanChanges = null;
    }
    const { signal } = this.lifetime;
    const clock = options.clock ?? realClock;
    this.queue = new WriteQueue({ ready: () => index.readiness.reached('scanned'), signal, log });
    const pace = new RelistPace((dir) => void this.queue.run(() => this.relistTree(dir)).catch(() => {}), signal);
    this.reconciler = new Reconciler(index, log, signal, pace);
    this.batcher = new EventBatcher({
      queue: this.queue,
      apply: (paths) => this.lookAt(paths),
      signal,
      debounceMs: options.debounceMs ?? 20,
      maxBatchDelayMs: options.maxBatchDelayMs ?? 500,
      clock,
    });
    this.rechecks = new Rechecks({
      queue: this.queue,
      tree: (dir) => this.diffTree(dir),
      diffRoots: () => this.diffRoots(),
      written: () => this.reconciler.written,
      backend: () => this.watcher.backend,
      signal,
      log,
      clock,
    });
    this.watcher = options.watch({
      changed: (path) => this.batcher.add(path),
      rescan: (dir) => this.queue.run(() => this.diffTree(dir)),
      diffRoots: () => this.diffRoots(),
      signal,
    });
  }

  /** The running backend, if any. */
  get backend(): WatcherBackend | undefined {
    return this.watcher.backend;
  }

  /** Paths a watcher reported that are not yet looked at (the metrics' watcher backlog). */
  get backlog(): number {
    return this.batcher.backlog;
  }

  /** How often the watcher fell back to another backend (see WatcherControl.fallbacks). */
  get fallbacks(): { readonly failed: number; readonly notStarted: number } {
    return this.watcher.fallbacks;
  }

  /** Looks at the disk that no event asked for, scheduled now: rechecks and the locked folders' (for tests). */
  get scheduledLooks(): number {
    return this.rechecks.scheduled + (this.lockedTimer ? 1 : 0);
  }

  /** Paths looked at after watcher events, looks again included (for tests). */
  get pathsLookedAt(): number {
    return this.batcher.pathsApplied;
  }

  /**
   * Starts live updates. A warm index starts the watcher at once, then
   * checks the index against the disk: the cold scan's walk over every root,
   * on its worker thread, each directory's entries compared with the index's
   * (type, size, mtime), in the background. A cold one starts it after the
   * first scan (whose size `auto` needs), then looks at what changed behind
   * the scan: the paths its watches named (see ScanChangeRecord), or, without them,
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
      await index.readiness.reached('scanned');
    } catch {
      this.scanChanges?.close(); // nobody takes what a failed scan recorded
      return; // the scan failed (or the index closed): requests report it
    }
    if (this.closed) return;
    // The client's first requests go first: a warm index answers them at once, as it was (issue 45).
    await index.foreground.turn(true);
    if (this.closed) return;
    await this.watcher.start();
    const asked = performance.now();
    // Taken now that the watcher is up: between the two, every change is seen by one or the other.
    const scanChanges = await this.scanChanges?.take();
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
    this.rechecks.scheduleSafetyDiff(ms);
    // `none` promises an index that changes only at start-up: no folder is looked at again.
    if (this.watcher.backend === 'none' || this.closed) return;
    if (index.unreadableAtScan.length > 0) await this.queue.run(() => this.reconciler.noteLocked(index.unreadableAtScan));
    this.lockedTimer = every(this.options.clock ?? realClock, LOCKED_RECHECK_MS, () => {
      if (this.reconciler.hasLocked) void this.queue.run(async () => this.handOn(await this.reconciler.recheckLocked()));
    });
  }

  /** Looks at `paths` (absolute) on the write queue; resolves once what they show is committed (the write tools). */
  refresh(paths: readonly string[]): Promise<void> {
    return this.queue.run(() => this.lookAt(paths));
  }

  /**
   * Another replica says these paths (absolute, inside a root) changed
   * (src/replicas/bus.ts): looked at as a watcher's event would be, on this
   * replica's own disk. Dropped before the watcher runs (the start's diff
   * looks at everything) and with `--watcher none` (an index that changes
   * only at start-up). Resolves once they have been looked at (what the
   * look committed is the hint's: the bus sends none of it back out).
   */
  hint(paths: Iterable<string>): Promise<void> {
    if (!this.hintsApply()) return Promise.resolve();
    for (const path of paths) this.batcher.add(path);
    return this.batcher.applied();
  }

  /** Another replica changed more under `dir` than a message names: diff that subtree with this replica's disk. */
  hintTree(dir: string): Promise<void> {
    if (!this.hintsApply()) return Promise.resolve();
    return this.queue.run(() => this.diffTree(dir));
  }

  private hintsApply(): boolean {
    const backend = this.watcher.backend;
    return !this.closed && backend !== undefined && backend !== 'none';
  }

  private get closed(): boolean {
    return this.lifetime.signal.aborted;
  }

  /** Stops the watcher and waits for the write in progress; nothing is written or notified after. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.lifetime.abort();
      this.batcher.close();
      this.rechecks.close();
      this.lockedTimer?.stop();
      this.scanChanges?.close();
      await this.watcher.close();
      // Tasks still waiting for the first scan would wait for all of it: the
      // caller closes the index next, which ends the scan, and they then see
      // `closed` and do nothing. Only a write in progress is waited for.
      if (this.options.index.readiness.state !== 'scanning') await this.queue.idle();
    }
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
    return this.queue.run(async () => {
      const wereDirectories = paths.filter(isIndexedDirectory);
      // Each root too, whatever its watch said: one re-made since the scan read it (rm -rf, mkdir) is
      // of another identity and walked whole, one whose entries changed is listed again (Reconciler.paths).
      await this.lookAt([...roots.map((root) => root.path), ...paths]);
      for (const dir of outermostDirs(wereDirectories.filter(isIndexedDirectory))) {
        if (this.closed) return;
        await this.diffTree(dir);
      }
    });
  }

  /** Looks at `paths` (on the queue) and hands on what the look asks for. */
  private async lookAt(paths: Iterable<string>): Promise<void> {
    this.handOn(await this.reconciler.paths(paths));
  }

  /** Lists the folder `dir` again (on the queue: a wide folder's paced relist) and hands on what it asks for. */
  private async relistTree(dir: string): Promise<void> {
    this.handOn(await this.reconciler.relist(dir));
  }

  /** Diffs the subtree `dir` (on the queue) and hands on what the diff asks for. */
  private async diffTree(dir: string): Promise<void> {
    this.handOn(await this.reconciler.tree(dir));
  }

  /**
   * What a reconcile found for the other parts: directories the watcher may
   * not watch (WatcherControl.rewatch), and new directories to walk again
   * a little later (Rechecks.newDirectory).
   */
  private handOn(report: ReconcileReport): void {
    if (this.closed) return;
    for (const { dir, reason } of report.rewatch) this.watcher.rewatch(dir, reason);
    for (const dir of report.recheck) this.rechecks.newDirectory(dir);
  }

  /** Diffs every root with the disk on the queue; resolves to how long it took. */
  private async diffRoots(): Promise<number> {
    let ms = 0;
    await this.queue.run(async () => {
      const started = performance.now();
      for (const root of this.options.index.roots) await this.diffTree(root.path);
      ms = Math.round(performance.now() - started);
    });
    return ms;
  }
}
