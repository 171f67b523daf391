// What the cold scan tells whoever observes it, declared here so that the
// index need not know who that is: the live layer watches each directory as
// the walk reads it (src/watch/scan-changes.ts), and the index only calls it.

/**
 * Told of each directory just before the walk reads it, on the main thread.
 * The walk may move to a worker thread (scan-thread.ts); code cannot be
 * handed across, so the worker loads `threadModule` and observes its part
 * with what that module makes (ThreadScanObserverModule). Once that walk is
 * done, the worker stays up and is handed to `adopt`: what its observer
 * holds is the observer's to ask for and to end.
 */
export interface ScanObserver {
  /** Called with each directory just before the walk reads it on this thread. */
  beforeRead(dir: string): void;
  /** The module a worker thread loads to observe the walk there (a built script: see workers.ts). */
  readonly threadModule: URL;
  /** The worker thread walked its part and is done: the observer now talks to its observer and ends it. */
  adopt(thread: ObservedThread): void;
}

/** A scan's worker thread, its walk done, as its adopter sees it. */
export interface ObservedThread {
  /** To the thread's observer (ThreadScanObserver.receive). */
  post(message: unknown): void;
  /** The next message from the thread's observer; rejects once the thread has failed or exited. */
  next(): Promise<unknown>;
  /** Ends the thread. */
  end(): void;
}

/** The observer of the walk on a worker thread: made there by its ScanObserver's threadModule. */
export interface ThreadScanObserver {
  /** Called with each directory just before the walk reads it on this thread. */
  beforeRead(dir: string): void;
  /** A message from the main thread's observer (ObservedThread.post); once the walk is done. */
  receive(message: unknown): void;
  /** The walk failed: nothing the observer holds will be asked for. */
  close(): void;
}

/** What a ScanObserver's threadModule exports: `send` reaches the main thread's observer (ObservedThread.next). */
export interface ThreadScanObserverModule {
  observeThread(send: (message: unknown) => void): ThreadScanObserver;
}
