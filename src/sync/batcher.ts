import type { Clock } from '../clock.ts';
import { Coalescer } from '../coalesce.ts';
import type { WriteQueue } from './write-queue.ts';

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

export interface EventBatcherOptions {
  queue: WriteQueue;
  /** Looks at the gathered paths; runs on the queue. */
  apply(paths: ReadonlySet<string>): Promise<void>;
  /** Live's lifetime: once aborted, no path is taken or looked at again. */
  signal: AbortSignal;
  /** A batch is applied this long after the last path of a burst... */
  debounceMs: number;
  /** ...and no later than this after the first. */
  maxBatchDelayMs: number;
  clock: Clock;
}

/**
 * Gathers the paths a watcher reports and hands them to `apply` in batches,
 * coalesced (coalesce.ts): the first after a quiet spell on the next turn of
 * the loop, then debounced within a longest delay. Each reported path is
 * looked at twice more a little later (RECHECKS_MS).
 */
export class EventBatcher {
  private dirty = new Set<string>();
  /** Of `dirty`, the paths a backend reported (not those looked at again). */
  private reported = new Set<string>();
  private readonly coalescer: Coalescer;
  /** A flush waits on the queue: it takes whatever is dirty when it runs, so no other is queued meanwhile. */
  private flushQueued = false;
  /** Paths handed to `apply`, looks again included (for tests). */
  pathsApplied = 0;
  /** Called once the flush that takes the paths added so far has applied them (applied()). */
  private waiters: (() => void)[] = [];

  /** Paths reported (or due to be looked at again) and not yet handed to `apply`: the watcher's backlog. */
  get backlog(): number {
    return this.dirty.size;
  }

  constructor(private readonly options: EventBatcherOptions) {
    // Leading edge on the next turn of the loop, which still gathers a backend's whole synchronous batch.
    this.coalescer = new Coalescer(() => this.queueFlush(), options.debounceMs, options.maxBatchDelayMs, {
      spellMs: QUIET_SPELL_MS,
      leading: 'next-turn',
      clock: options.clock,
    });
  }

  /** A path a watcher reported. */
  add(path: string): void {
    if (this.options.signal.aborted) return;
    this.dirty.add(path);
    this.reported.add(path);
    this.coalescer.trigger();
  }

  /**
   * Resolves once every path added before the call has been looked at (the
   * flush that takes them has applied them), or the batcher is closed.
   */
  applied(): Promise<void> {
    if (this.options.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  close(): void {
    this.coalescer.cancel();
    for (const done of this.waiters.splice(0)) done();
  }

  private queueFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    void this.options.queue.run(() => this.flush());
  }

  private async flush(): Promise<void> {
    this.flushQueued = false;
    const reported = this.reported;
    this.reported = new Set();
    const paths = this.dirty;
    this.dirty = new Set();
    this.pathsApplied += paths.size;
    const waiters = this.waiters;
    this.waiters = [];
    try {
      await this.options.apply(paths);
    } finally {
      for (const done of waiters) done();
    }
    // The flush may have looked mid-write (a file truncated, not yet written,
    // or written in pieces), and a backend may not report the rest of that
    // write (chokidar dropped it when it came 10-30 ms after the truncation,
    // within its own throttle of change events): look at the reported paths
    // once more a little later. Unchanged paths write nothing and notify
    // nobody, and these looks schedule no more looks.
    if (this.options.signal.aborted || reported.size === 0 || reported.size > RECHECK_MAX_PATHS) return;
    for (const delay of RECHECKS_MS) {
      this.options.clock.setTimeout(
        () => {
          if (this.options.signal.aborted) return;
          for (const path of reported) this.dirty.add(path);
          this.coalescer.trigger();
        },
        delay,
        { background: true },
      );
    }
  }
}
