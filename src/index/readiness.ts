import { realClock, type Clock } from '../clock.ts';

/**
 * Where an index is in its start-up, in this order:
 * - `scanning`: the first (cold) scan runs. A `resources/list` page is
 *   answered once every key it covers is committed (FolderIndex.settled);
 *   other requests wait.
 * - `scanned`: the index holds the whole tree, as the scan saw it or (a warm
 *   start) as the last run left it. Requests are answered; the disk may have
 *   moved on since.
 * - `caught-up`: the live layer has caught up with the disk (the watcher up,
 *   what changed behind the scan or while the server was down applied), or
 *   its catch-up ended otherwise.
 *
 * `failed` ends the start-up instead: the scan failed (or the index was
 * closed during it), and requests report the scan's error.
 */
const ORDER = ['scanning', 'scanned', 'caught-up'] as const;
/** The states a start-up goes through, in order: each has its promise (Readiness.reached). */
export type ReachedState = (typeof ORDER)[number];
export type ReadinessState = ReachedState | 'failed';

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  // A failure is reported to whoever waits; this keeps it from also being an unhandled rejection when nobody does.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/**
 * An index's readiness: its state and one promise per state, each settled
 * once. The index moves it through the scan; the live layer's owner says
 * when the catch-up with the disk runs (`catchUp`) and whether requests wait
 * for it (`holdRequests`).
 */
export class Readiness {
  private current: ReadinessState = 'scanning';
  private readonly promises = new Map<ReachedState, Deferred>(ORDER.map((state) => [state, deferred()]));
  /** See holdRequests. */
  private hold: Promise<void> | undefined;

  constructor(private readonly clock: Clock = realClock) {
    this.promises.get('scanning')!.resolve();
  }

  get state(): ReadinessState {
    return this.current;
  }

  /**
   * Resolves once the start-up has reached `state` (at once when it has);
   * rejects with the scan's error when it failed first.
   */
  reached(state: ReachedState): Promise<void> {
    return this.promises.get(state)!.promise;
  }

  /** The scan is over and complete (at once for a warm index). */
  scanned(): void {
    this.enter('scanned');
  }

  /** The scan failed: every state not reached yet never will be, and its promise rejects with `error`. */
  failed(error: unknown): void {
    if (this.current !== 'scanning') return;
    this.current = 'failed';
    for (const state of ORDER.slice(1)) this.promises.get(state)!.reject(error);
  }

  /**
   * The catch-up with the disk runs as `work`: `caught-up` once the scan is
   * over and `work` has settled. A failed catch-up ends it too; its failure
   * is for whoever runs it to report (src/app.ts lets it surface).
   */
  catchUp(work: Promise<unknown>): void {
    const over = () => void this.reached('scanned').then(() => this.enter('caught-up'), () => {});
    work.then(over, over);
  }

  /**
   * Requests that read the index wait for `caught-up`, as long as `maxMs` at
   * most, before they are served: a warm start of a small index holds them
   * until the index has caught up with what changed while the server was
   * down (src/app.ts says when and why; src/server.ts waits).
   */
  holdRequests(maxMs: number): void {
    const held = new Promise<void>((resolve) => {
      const timer = this.clock.setTimeout(resolve, maxMs, { background: true });
      const done = () => {
        this.clock.clearTimeout(timer);
        resolve();
      };
      this.reached('caught-up').then(done, done);
    });
    this.hold = held;
    void held.then(() => {
      if (this.hold === held) this.hold = undefined;
    });
  }

  /** Settles once the requests held by holdRequests may go; undefined when none are held (then nothing to wait for). */
  get held(): Promise<void> | undefined {
    return this.hold;
  }

  /** Moves on to `state` and every state before it not reached yet; never back, nor out of `failed`. */
  private enter(state: ReachedState): void {
    if (this.current === 'failed' || ORDER.indexOf(this.current as ReachedState) >= ORDER.indexOf(state)) return;
    this.current = state;
    for (const each of ORDER.slice(0, ORDER.indexOf(state) + 1)) this.promises.get(each)!.resolve();
  }
}
