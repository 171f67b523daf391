import type { Logger } from '../log.ts';

/**
 * The one serial queue every write of live updates runs on: event batches,
 * the catch-up after start-up, rescans, rechecks, the periodic diff, the
 * write tools' refreshes. They never interleave, and each decides from the
 * disk as it is when it runs, so whatever order they run in, the last one
 * leaves the index equal to the disk.
 */
export class WriteQueue {
  private tail: Promise<void> = Promise.resolve();

  constructor(
    private readonly options: {
      /** Tasks wait for this first (the index's first scan). */
      ready: () => Promise<unknown>;
      /** Live's lifetime: once aborted, tasks not yet started do nothing. */
      signal: AbortSignal;
      log: Logger;
    },
  ) {}

  /** Runs `task` after every task before it; a failure is logged, never thrown at the caller. */
  run(task: () => Promise<void>): Promise<void> {
    const { ready, signal, log } = this.options;
    this.tail = this.tail.then(async () => {
      if (signal.aborted) return;
      try {
        await ready();
        await task();
      } catch (error) {
        if (!signal.aborted) log.warn(`live update failed: ${(error as Error).stack ?? String(error)}`);
      }
    });
    return this.tail;
  }

  /** Resolves once every task queued so far is done. */
  idle(): Promise<void> {
    return this.tail;
  }
}
