// How far the content index's build got, and the searches waiting for it to
// finish (content-index-builder.ts moves it; the search tool reads it).

export interface BuildState {
  /** Documents checked (read or converted, or found up to date) since the build started. */
  done: number;
  /** Documents to check in this build (text files and documents with a converted text). */
  total: number;
  /** True once the first build finished; later edits are indexed as they come. */
  complete: boolean;
}

/** What a search's answer says of the index it came from. */
export interface SearchProgress extends BuildState {
  /** Documents known to have changed whose new text is not indexed yet (being read, or queued). */
  waiting: number;
  /**
   * A warm start still comparing the index with the disk (what changed
   * since the last run, then every document's size and mtime): a file
   * changed meanwhile may answer from its old text, or not at all.
   */
  rechecking: boolean;
}

export class BuildProgress {
  private readonly state: BuildState = { done: 0, total: 0, complete: false };
  /** True once state.total is the count of this build (on a warm start, a few moments after start). */
  private counted = false;
  private closed = false;
  private readonly waiters = new Set<{ maxDocs: number; done: () => void }>();

  /** A copy: the caller may keep it. */
  get current(): BuildState {
    return { ...this.state };
  }

  get complete(): boolean {
    return this.state.complete;
  }

  /** `n` more documents checked. */
  checked(n = 1): void {
    this.state.done += n;
  }

  /**
   * The build has counted the documents it checks; `complete` when it
   * answers from an index a former build finished (a warm start). Then the
   * waiters for a small folder give up when this one is larger.
   */
  setTotal(total: number, complete: boolean): void {
    this.state.total = total;
    this.counted = true;
    if (complete) this.markComplete();
    for (const waiter of [...this.waiters]) if (this.left() > waiter.maxDocs) waiter.done();
  }

  /** Documents the build has still to check. */
  private left(): number {
    return Math.max(0, this.state.total - this.state.done);
  }

  markComplete(): void {
    this.state.complete = true;
    for (const waiter of [...this.waiters]) waiter.done();
  }

  /**
   * Resolves true once the first build is complete, or false after
   * `timeoutMs` (or on close), or as soon as the build has counted more than
   * `maxDocs` documents left to check: not worth the wait. Left, not in all:
   * a client that starts a server per call (the Inspector's CLI) finds the
   * build further on at each call, and once the rest is small, it waits for
   * it (issue 46: on 5,000 files it never saw the build complete).
   */
  whenComplete(timeoutMs: number, maxDocs = Infinity): Promise<boolean> {
    if (this.state.complete) return Promise.resolve(true);
    if (this.closed || (this.counted && this.left() > maxDocs)) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter = {
        maxDocs,
        done: () => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve(this.state.complete);
        },
      };
      const timer = setTimeout(waiter.done, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  /** Every waiter is answered now, and later ones at once. */
  close(): void {
    this.closed = true;
    for (const waiter of [...this.waiters]) waiter.done();
  }
}
