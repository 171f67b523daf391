import type { Clock, ClockTimer } from '../clock.ts';
import { Coalescer } from '../coalesce.ts';
import type { Logger } from '../log.ts';
import { outermostDirs } from '../fs-path.ts';
import type { WatcherBackend } from '../watching.ts';
import type { WriteQueue } from './write-queue.ts';

/**
 * How long after a new directory's first walk it is walked again: soon, and
 * once more later, for a watcher slow to watch it on a loaded machine
 * (measured: chokidar missed files written into a new directory of a burst).
 */
const NEW_DIRECTORY_DELAYS_MS = [1000, 5000];
/**
 * Safety net: with a watcher running, the whole tree is diffed again every
 * so often, at least this long apart and at most 1% of the time (a pause of
 * 100 times the last diff's duration). Watchers do lose events (inotify queue
 * overflow, races on directories that come and go); this bounds how long a
 * lost event can leave the index wrong.
 */
const SAFETY_MIN_INTERVAL_MS = 60_000;
const SAFETY_DUTY_FACTOR = 100;

export interface RechecksOptions {
  queue: WriteQueue;
  /** Diffs one directory's subtree with the disk (on the queue). */
  tree(dir: string): Promise<void>;
  /** Diffs every root on the queue; resolves to how long it took. */
  diffRoots(): Promise<number>;
  /** Entries written by the reconciler so far. */
  written(): number;
  /** The running watcher backend. */
  backend(): WatcherBackend | undefined;
  /** Live's lifetime: once aborted, nothing more is scheduled. */
  signal: AbortSignal;
  log: Logger;
  clock: Clock;
}

/** The looks at the disk that no event asks for: new directories again, and the periodic diff. */
export class Rechecks {
  /** New directories to diff again, per pass of NEW_DIRECTORY_DELAYS_MS. */
  private readonly pending = NEW_DIRECTORY_DELAYS_MS.map(() => new Set<string>());
  /** Per pass: the pass's directories go together, its delay after the first of them (no leading edge). */
  private readonly passes: Coalescer[];
  private safetyTimer: ClockTimer | undefined;

  constructor(private readonly options: RechecksOptions) {
    this.passes = NEW_DIRECTORY_DELAYS_MS.map((at, pass) => {
      const delay = at - (NEW_DIRECTORY_DELAYS_MS[pass - 1] ?? 0);
      return new Coalescer(() => this.walkAgain(pass), delay, delay, { leading: 'none', clock: options.clock });
    });
  }

  /** A directory the reconciler just walked for the first time: walked again 1 s and 5 s later. */
  newDirectory(dir: string, pass = 0): void {
    // `none` promises an index that changes only at start-up (and through the server's own writes): a new
    // directory found then is not looked at again later, when what is in it would come with no start-up.
    if (this.options.backend() === 'none') return;
    if (this.options.signal.aborted || pass >= NEW_DIRECTORY_DELAYS_MS.length) return;
    this.pending[pass]!.add(dir);
    this.passes[pass]!.trigger();
  }

  private walkAgain(pass: number): void {
    const dirs = outermostDirs(this.pending[pass]!);
    this.pending[pass] = new Set();
    void this.options.queue.run(async () => {
      for (const dir of dirs) await this.options.tree(dir);
    });
    for (const dir of dirs) this.newDirectory(dir, pass + 1);
  }

  /** Schedules the next periodic diff, given how long the last one took. */
  scheduleSafetyDiff(lastMs: number): void {
    const backend = this.options.backend();
    // poll diffs all the time anyway; none promised a static index.
    if (this.options.signal.aborted || backend === undefined || backend === 'poll' || backend === 'none') return;
    this.safetyTimer = this.options.clock.setTimeout(
      async () => {
        // Live's close clears this timer; an abort alone (the lifetime ended first) stops it here.
        if (this.options.signal.aborted) return;
        const before = this.options.written();
        const ms = await this.options.diffRoots();
        const missed = this.options.written() - before;
        if (missed > 0 && !this.options.signal.aborted) {
          // Includes changes whose events were still in the debounce window; a large number means lost events.
          this.options.log.info(`periodic check applied ${missed} change(s) not yet applied from watcher events (${ms} ms)`);
        }
        this.scheduleSafetyDiff(ms);
      },
      Math.max(SAFETY_MIN_INTERVAL_MS, SAFETY_DUTY_FACTOR * lastMs),
      { background: true },
    );
  }

  /** Looks at the disk scheduled now: new directories to walk again, and the periodic diff (for tests). */
  get scheduled(): number {
    return this.pending.reduce((n, dirs) => n + dirs.size, 0) + (this.safetyTimer ? 1 : 0);
  }

  close(): void {
    for (const pass of this.passes) pass.cancel();
    this.options.clock.clearTimeout(this.safetyTimer);
  }
}
