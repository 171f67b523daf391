// The cold scan's worker thread (see scan-thread.ts): says it is up, is
// handed the walk where the main thread left it, and goes on with it with
// synchronous calls, posting each batch (rows as columns), at most
// BATCHES_AHEAD ahead of the batches taken; then builds the secondary
// indexes of the index file. Handed an observer's module, it tells the
// observer it makes of each directory before reading it and stays up once the
// walk is done, passing messages between it and the main thread's observer
// (see ScanObserver: the live layer's watches).
import { parentPort } from 'node:worker_threads';
import { toColumns } from '../entry.ts';
import type { Logger } from '../log.ts';
import { IgnoreRules } from './ignore.ts';
import { Walk } from './scan.ts';
import type { ThreadScanObserver, ThreadScanObserverModule } from './scan-observer.ts';
import { BATCHES_AHEAD, type ScanHandover, type ScanMessage, type ToObserver } from './scan-thread.ts';
import { SkipReport } from './servable.ts';

const port = parentPort!;
const post = (message: ScanMessage) => port.postMessage(message);
const log: Logger = {
  error: (message) => post({ type: 'log', level: 'error', message }),
  warn: (message) => post({ type: 'log', level: 'warn', message }),
  info: (message) => post({ type: 'log', level: 'info', message }),
  debug: (message) => post({ type: 'log', level: 'debug', message }),
};

port.once('message', async (handover: ScanHandover) => {
  const taken = new Int32Array(handover.taken);
  /**
   * Waits until the main thread has taken at least `count` batches. Without
   * blocking the loop: an observer's events (the watches') reach this
   * thread only when its loop turns.
   */
  const waitForTaken = async (count: number) => {
    for (let seen = Atomics.load(taken, 0); seen < count; seen = Atomics.load(taken, 0)) {
      const wait = Atomics.waitAsync(taken, 0, seen, 1000);
      if (wait.async) await wait.value;
    }
  };
  const skips = new SkipReport();
  let observer: ThreadScanObserver | null = null;
  // A pending Atomics.waitAsync does not keep the thread's loop alive; this does, until the walk ends.
  const keepAlive = setInterval(() => {}, 60_000);
  try {
    if (handover.observer !== null) {
      // Injected by the main thread's observer (it is the live layer's: the index does not import it).
      const loaded = (await import(handover.observer)) as ThreadScanObserverModule;
      observer = loaded.observeThread((message) => post({ type: 'observer', message }));
    }
    const observing = observer;
    // The main thread recorded the .gitignore files read so far; these rules read them again as needed.
    const rules = new IgnoreRules(handover.roots, handover.ignore);
    const { onlyRoot } = handover;
    const walk = new Walk(
      {
        roots: handover.roots,
        rules,
        log,
        skips,
        ...(onlyRoot === undefined ? {} : { onlyRoot }),
        ...(observing ? { beforeRead: (dir: string) => observing.beforeRead(dir) } : {}),
      },
      handover.state,
    );
    let { batchRows } = handover;
    let sent = 0;
    for (let batch = walk.next(batchRows); batch !== null; batch = walk.next(batchRows)) {
      post({ type: 'batch', batch: { ...batch, rows: toColumns(batch.rows) } });
      batchRows = Math.min(batchRows * 2, handover.batchSize);
      sent++;
      await waitForTaken(sent - BATCHES_AHEAD);
      // Lets the observer's events in (a poll phase) between batches, before inotify's queue can fill.
      if (observing) await new Promise((resolve) => setImmediate(resolve));
    }
    if (handover.dbFile !== null) {
      // Once the last batch is committed (taken), the indexes are built from here, off the main thread.
      await waitForTaken(sent);
      const { buildSecondaryIndexes } = await import('./db.ts');
      buildSecondaryIndexes(handover.dbFile.path, handover.dbFile.driver);
    }
    if (observing) port.on('message', (message: ToObserver) => observing.receive(message.message));
    post({ type: 'done', skips: { counts: skips.counts, examples: skips.examples } });
    clearInterval(keepAlive);
  } catch (error) {
    clearInterval(keepAlive);
    observer?.close();
    const code = (error as NodeJS.ErrnoException).code;
    post({ type: 'error', message: (error as Error).message, ...(code === undefined ? {} : { code }) });
  }
});
post({ type: 'ready' });
