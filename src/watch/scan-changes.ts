import type { ObservedThread, ScanObserver } from '../index/scan-observer.ts';
import { builtScriptUrl } from '../workers.ts';
import type { ScanChanges, ScanChangesTaker } from '../watching.ts';
import { ScanWatch, mergeScanChanges, type ScanWatchOrder } from './scan-watch.ts';

/**
 * What changed behind a cold scan, as its ScanWatch records on both threads
 * say: this thread's (the walk's first slices) and the worker's, which
 * stays up once its walk is done, idle, holding its watches until take().
 *
 * Made by whoever makes the index (app.ts), handed to the index as the cold
 * scan's ScanObserver, to the watcher supervisor (which releases, spoils or
 * drops it while a backend starts) and to Live, which takes it once the
 * watcher is up. Linux only, as ScanWatch; a warm index never scans, and
 * Live closes it unused (the supervisor then finds it done).
 */
export class ScanChangeRecord implements ScanObserver, ScanChangesTaker {
  readonly here = new ScanWatch();
  /** dist/scan-watch.js: the worker thread watches with its observeThread (the index does not import the live layer). */
  readonly threadModule = builtScriptUrl('scan-watch');
  private worker: ObservedThread | null = null;
  private finished = false;
  /** Why what the watches recorded no longer says everything (see giveUp). */
  private spoiled: string | null = null;

  beforeRead(dir: string): void {
    this.here.watch(dir);
  }

  /** Keeps the worker, its walk done, for its watches. */
  adopt(worker: ObservedThread): void {
    if (this.finished) worker.end();
    else this.worker = worker;
  }

  /** True once taken, finished, dropped or closed: nothing is watched any more. */
  get done(): boolean {
    return this.finished;
  }

  /** The watcher proper watches `dirs` now: the scan's watches on them can go (see ScanWatch.release). */
  release(dirs: readonly string[]): void {
    if (this.finished) return;
    this.here.release(dirs);
    this.postToWorker({ type: 'release', dirs });
  }

  /** What the watches record no longer covers every change, for `reason` (a watcher that took over from them failed). */
  giveUp(reason: string): void {
    this.spoiled ??= reason;
  }

  /**
   * Once a watcher is up: closes the scan's watches and says what changed
   * since each directory was read. Null when it was taken, dropped or closed
   * already: then only a diff of the tree can tell.
   */
  take(): Promise<ScanChanges> | null {
    return this.finished ? null : this.finish();
  }

  /**
   * Closes the scan's watches and forgets what they recorded (a watcher
   * needs the watches they hold): take() then says nothing, and the tree is
   * diffed. False when it was taken or closed already.
   */
  drop(): boolean {
    if (this.finished) return false;
    this.close();
    return true;
  }

  /** Closes every watch of both threads (call it once the watcher proper is up) and says what they recorded. */
  async finish(): Promise<ScanChanges> {
    if (this.finished) return { unknown: 'the record was closed' };
    this.finished = true;
    const worker = this.worker;
    this.worker = null;
    try {
      const [here, there] = await Promise.all([this.here.finish(), worker ? finishWatching(worker) : { paths: [] }]);
      return this.spoiled !== null ? { unknown: this.spoiled } : mergeScanChanges(here, there);
    } catch (error) {
      this.here.close();
      return { unknown: `the scan's worker thread failed (${(error as Error).message})` };
    } finally {
      worker?.end();
    }
  }

  /** Drops the record (the scan failed, the index is warm, or Live closed). */
  close(): void {
    this.finished = true;
    this.here.close();
    this.worker?.end();
    this.worker = null;
  }

  private postToWorker(order: ScanWatchOrder): void {
    this.worker?.post(order);
  }
}

/** Closes the worker's watches (observeThread's) and resolves to what they recorded. */
async function finishWatching(worker: ObservedThread): Promise<ScanChanges> {
  const finish: ScanWatchOrder = { type: 'finish' };
  worker.post(finish);
  return (await worker.next()) as ScanChanges;
}
