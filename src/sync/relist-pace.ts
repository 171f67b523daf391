// How often a wide folder is listed again. Each batch that moves a folder's
// mtime lists it again (readdir, an lstat an entry, its rows): a folder of
// 200,000 entries written to every 100 ms was listed at every batch, 1.3
// CPUs, 3.9 s before each new file was listed and 604-644 MiB (a red-team
// pass). A relist that took WIDE_RELIST_MS or more waits until nine times
// as long again has passed, so such a folder is listed at most a tenth of
// the time; meanwhile the paths events name in it are looked at as ever
// (new and removed files show at once), and once the wait is over the
// folder is listed again, unasked, so what no event named is found then.

/** A relist at least this long paces the next one (a folder of some 50,000 entries here; none a test makes). */
export const WIDE_RELIST_MS = 200;
/** A wide folder is listed again at most once every PACE_FACTOR times its last relist's duration. */
const PACE_FACTOR = 10;

export class RelistPace {
  /** Wide folders, and until when (performance.now()) their next relist waits. */
  private readonly until = new Map<string, number>();
  /** The look scheduled for a folder whose relist waits. */
  private readonly scheduled = new Map<string, NodeJS.Timeout>();

  constructor(
    /** Lists `dir` again (Reconciler.relist, on Live's queue). */
    private readonly later: (dir: string) => void,
    /** Live's lifetime: nothing is looked at once it ends. */
    private readonly signal: AbortSignal,
  ) {}

  /** Whether `dir`'s relist waits now; then its relist is scheduled for when the wait is over. */
  defer(dir: string): boolean {
    const until = this.until.get(dir);
    if (until === undefined) return false;
    const wait = until - performance.now();
    if (wait <= 0) return false;
    if (!this.scheduled.has(dir)) {
      const timer = setTimeout(() => {
        this.scheduled.delete(dir);
        if (!this.signal.aborted) this.later(dir);
      }, wait);
      timer.unref();
      this.scheduled.set(dir, timer);
    }
    return true;
  }

  /** `dir` was listed again, in `ms`. */
  took(dir: string, ms: number): void {
    if (ms < WIDE_RELIST_MS) this.until.delete(dir);
    else this.until.set(dir, performance.now() + ms * (PACE_FACTOR - 1));
  }
}
