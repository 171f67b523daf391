import type { Clock } from '../clock.ts';
import type { WatcherKind } from '../config.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import type { Store } from '../index/store.ts';
import type { Logger } from '../log.ts';
import { uriToPath } from '../uri.ts';
import type { RewatchReason, WatchHooks, WatcherBackend, WatcherControl } from '../watching.ts';
import { BACKEND_STARTERS, planWatchers, type WatcherPlan } from './choose.ts';
import type { ScanChangeRecord } from './scan-changes.ts';
import { isResourceExhausted, type StartWatcher, type Watcher, type WatchSink } from './watcher.ts';

/** What the composition root (app.ts, or a test) gives the supervisor; Live gives it the rest (WatchHooks). */
export interface WatchSetup {
  index: FolderIndex;
  log: Logger;
  /** `--watcher`: which backends to try, in order (planWatchers). */
  watcher: WatcherKind;
  /** The backends' start functions (injected so a test can make one fail like an exhausted inotify). */
  starters?: Record<WatcherBackend, StartWatcher>;
  /** `--poll-interval`: the poll backend's shortest pause between two polls. */
  pollIntervalMs?: number;
  /** The cold scan's watches, which a starting backend takes over (release), spoils or drops; closed (a warm index) or absent: none. */
  scanChanges?: ScanChangeRecord;
  /** Handed to the backend (the poll backend's pauses). */
  clock?: Clock;
}

export type SupervisorOptions = WatchSetup & WatchHooks;

/**
 * Live's `watch` option: the supervisor of the backends `setup.watcher`
 * plans, made once Live has its hooks (the one place that knows both rooms).
 */
export function superviseWatcher(setup: WatchSetup): (hooks: WatchHooks) => WatcherSupervisor {
  return (hooks) => new WatcherSupervisor({ ...setup, ...hooks });
}

/**
 * Runs one watcher backend: starts the first candidate of the plan that
 * starts, and when the running one cannot go on (out of watches or
 * descriptors), closes it, starts the next and diffs the tree.
 */
export class WatcherSupervisor implements WatcherControl {
  private watcher: Watcher | undefined;
  private readonly plan: WatcherPlan;
  private degrading = false;
  /** Where the running backend reports: Live's hooks, and its own failure here (degrade). */
  private readonly sink: WatchSink;
  /** Times a running backend failed and the next took over (degrade), and times a backend could not start and the next was tried. */
  readonly fallbacks = { failed: 0, notStarted: 0 };

  constructor(private readonly options: SupervisorOptions) {
    this.plan = planWatchers(options.watcher);
    this.sink = {
      changed: (path) => options.changed(path),
      rescan: (dir) => options.rescan(dir),
      fatal: (error) => void this.degrade(error),
    };
  }

  /** The running backend, if any. */
  get backend(): WatcherBackend | undefined {
    return this.watcher?.backend;
  }

  /** Asks the running backend to watch `dir` again (it was re-made or moved). */
  rewatch(dir: string, reason: RewatchReason): void {
    this.watcher?.rewatch?.(dir, reason);
  }

  /** Starts the plan's first candidate that starts; false when none did (each failure explained on stderr). */
  start(): Promise<boolean> {
    return this.startFirst(this.plan.candidates, this.plan.reason);
  }

  /** The running backend ran out of OS resources: close it, start the next candidate, then diff the roots. */
  async degrade(error: Error): Promise<void> {
    if (this.options.signal.aborted || this.degrading || !this.watcher) return;
    this.degrading = true;
    this.fallbacks.failed++;
    const failed = this.watcher;
    this.watcher = undefined;
    const rest = this.plan.candidates.slice(this.plan.candidates.indexOf(failed.backend) + 1);
    const fallback = rest.length > 0 ? rest : (['poll'] as const);
    this.options.log.warn(
      `watcher ${failed.backend} failed (${error.message}${isResourceExhausted(error) ? ': out of watches or file descriptors; raise fs.inotify.max_user_watches' : ''}); degrading to ${fallback[0]}`,
    );
    await failed.close().catch(() => {});
    if (await this.startFirst(fallback, `${failed.backend} failed`)) await this.options.diffRoots();
    this.degrading = false;
  }

  async close(): Promise<void> {
    const watcher = this.watcher;
    this.watcher = undefined;
    await watcher?.close().catch(() => {});
  }

  private async startFirst(candidates: readonly WatcherBackend[], reason: string): Promise<boolean> {
    const { index, log, signal, scanChanges } = this.options;
    for (let i = 0; i < candidates.length; i++) {
      const backend = candidates[i]!;
      if (signal.aborted) return false;
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
          turn: () => index.foreground.turn(),
          signal,
          watching: (dirs) => {
            tookOver = true;
            scanChanges?.release(dirs);
          },
          ...(this.options.pollIntervalMs !== undefined ? { pollIntervalMs: this.options.pollIntervalMs } : {}),
          ...(this.options.clock ? { clock: this.options.clock } : {}),
        });
        if (signal.aborted) {
          await watcher.close();
          return false;
        }
        this.watcher = watcher;
        const ms = Math.round(performance.now() - started);
        if (backend === 'none') log.info(`watcher: none (${reason}); the index changes only at start-up`);
        else log.info(`watcher: ${backend} (${reason}), ready in ${ms} ms`);
        return true;
      } catch (error) {
        if (signal.aborted) return false; // closed while it started: not a failure worth a warning
        // Its watches replaced some of the scan's, and are gone with it.
        if (tookOver) scanChanges?.giveUp(`the ${backend} watcher failed after taking over from the scan's watches`);
        // Out of watches while the scan's still hold theirs (chokidar does not take them over):
        // let them go, and try the same backend again; the tree is then diffed, as without them.
        if (isResourceExhausted(error) && scanChanges?.drop()) {
          log.info(`watcher ${backend} ran out of watches while the scan's were held: released them, trying ${backend} again (the tree is diffed after)`);
          i--;
          continue;
        }
        const next = candidates[i + 1];
        this.fallbacks.notStarted++;
        log.warn(`watcher ${backend} could not start (${(error as Error).message ?? String(error)})` + (next ? `; falling back to ${next}` : ''));
        reason = `${backend} failed to start`;
      }
    }
    log.warn('no watcher could start: the index changes only at start-up');
    return false;
  }
}

/** Collections read from the index per query. */
const DIRECTORY_PAGE = 500;

/** Every collection of the index as a path, in URI order (a parent before its children), a page at a time. */
function* indexedDirectories(store: Store): Generator<string> {
  for (let after = ''; ; ) {
    const page = store.collectionUris(after, DIRECTORY_PAGE);
    for (const uri of page) yield uriToPath(uri);
    if (page.length < DIRECTORY_PAGE) return;
    after = page.at(-1)!;
  }
}
