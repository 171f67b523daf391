import { Worker } from 'node:worker_threads';
import { toColumns, type EntryColumns } from '../entry.ts';
import type { Logger } from '../log.ts';
import type { Root } from '../uri.ts';
import type { SqliteDriverName } from '../sqlite.ts';
import { IgnoreRules, type IgnoreOptions } from './ignore.ts';
import { Walk, type ScanBatch, type WalkState } from './scan.ts';
import type { ObservedThread, ScanObserver } from './scan-observer.ts';
import { SkipReport, type SkipReason } from './servable.ts';
import { builtScriptUrl } from '../workers.ts';

export interface ScanThreadOptions {
  roots: readonly Root[];
  ignore: IgnoreOptions;
  log: Logger;
  /** Where the walk's skips are added (the caller warns once). */
  skips: SkipReport;
  /** Largest batch, in rows (default 2,000). */
  batchSize?: number;
  /** Walk only this root (see ScanOptions.onlyRoot). */
  onlyRoot?: number;
  /** The worker script; null walks on this thread only (see workers.ts: builtScriptUrl). */
  workerUrl?: URL | null;
  /** Slices walked here at most before waiting for the worker (default: no limit; a test sets 1 to be sure the worker walks). */
  slicesHere?: number;
  /**
   * The index file, where the worker builds the secondary indexes once every
   * batch is committed; null (an index in memory): the caller builds them.
   */
  dbFile: IndexFile | null;
  /** Told of each directory before the walk reads it, on either thread (see ScanObserver); none: nothing is. */
  observer?: ScanObserver;
}

/** The index file and the driver it was opened with (the worker opens it with the same). */
export interface IndexFile {
  path: string;
  driver: SqliteDriverName;
}

/** A batch as it crosses threads: its rows as columns. */
export type ColumnBatch = ScanBatch<EntryColumns>;

/** The walk's first batch, in rows; each next one is twice as large, up to the largest. */
const FIRST_BATCH = 128;
/** Batches the worker may run ahead of the consumer: bounds memory when commits are slow. */
export const BATCHES_AHEAD = 4;
/** Longest stretch the walk runs on the main thread without letting other work in. */
const SLICE_MS = 10;
/**
 * Slices walked here before the worker is started (about 100 ms): a folder
 * walked by then never starts a thread, whose start costs 40-60 ms of CPU.
 * Measured cold, fresh process each: 10k entries 267 ms with this against 310
 * ms with the worker after one slice (264 ms with no worker at all); 100k
 * within the noise of each other (1,821 and 1,721 ms).
 */
const WORKER_AFTER_SLICES = 10;

/**
 * What the worker posts: it is up; a batch; a log line; the end (with its
 * skips) or failure of the walk; and, once the walk is done, what its
 * observer sends to the main thread's (ObservedThread.next).
 */
export type ScanMessage =
  | { type: 'ready' }
  | { type: 'batch'; batch: ColumnBatch }
  | { type: 'log'; level: keyof Logger; message: string }
  | { type: 'done'; skips: Pick<SkipReport, 'counts' | 'examples'> }
  | { type: 'error'; message: string; code?: string }
  | ToObserver;

/** A message between the two threads' observers, once the worker's walk is done (see ScanObserver). */
export interface ToObserver {
  type: 'observer';
  message: unknown;
}

/** What the worker is told once it is up: go on with the walk from here. */
export interface ScanHandover {
  roots: Root[];
  ignore: IgnoreOptions;
  state: WalkState;
  onlyRoot: number | undefined;
  batchRows: number;
  batchSize: number;
  dbFile: IndexFile | null;
  /** Int32Array over it: [0] = batches the consumer has taken (flow control). */
  taken: SharedArrayBuffer;
  /** The module whose observer is told of each directory before the walk reads it (ScanObserver.threadModule); null: none. */
  observer: string | null;
}

/**
 * The cold scan's walk (Walk), handed over to a worker thread. Starting a
 * worker takes tens of milliseconds (more on a loaded machine), so the walk
 * starts here at once, in slices of at most SLICE_MS; the worker is started
 * after WORKER_AFTER_SLICES of them and takes the walk over as soon as it is up. A small
 * tree is walked before that; a large one is walked beside the commits of its
 * batches and the requests served meanwhile, instead of between them. A
 * worker that cannot start leaves the walk here.
 *
 * Rows come as columns (EntryColumns), in the walk's order; the worker pauses
 * while BATCHES_AHEAD batches wait to be taken. When the worker walked and
 * `dbFile` is set, it also builds the secondary indexes not kept during the scan (see
 * buildSecondaryIndexes) after the last batch is taken and before the loop
 * ends, so the main thread stays free for that too (seconds at 1M entries);
 * the caller's CREATE INDEX IF NOT EXISTS then finds them. Leaving the loop
 * early (a break, or a throw in the consumer) ends the worker.
 */
export async function* scanInThread(options: ScanThreadOptions): AsyncGenerator<ColumnBatch> {
  const { roots, ignore, log, skips, observer } = options;
  const batchSize = options.batchSize ?? 2000;
  const { onlyRoot } = options;
  const walk = new Walk({
    roots,
    rules: new IgnoreRules(roots, ignore),
    log,
    skips,
    ...(onlyRoot === undefined ? {} : { onlyRoot }),
    ...(observer ? { beforeRead: (dir: string) => observer.beforeRead(dir) } : {}),
  });
  let batchRows = Math.min(FIRST_BATCH, batchSize);
  let url = options.workerUrl === undefined ? builtScriptUrl('scan-worker') : options.workerUrl;
  let worker: ScanWorker | null = null;
  let slices = 0;
  try {
    let here = 0;
    const slicesHere = options.slicesHere ?? Infinity;
    while (!walk.done && !worker?.ready) {
      if (slices++ === Math.min(WORKER_AFTER_SLICES, slicesHere) && url !== null) {
        try {
          worker = new ScanWorker(url, log);
        } catch (error) {
          log.debug(`the scan's worker thread could not start (${(error as Error).message}); walking on the main thread`);
          url = null;
        }
      }
      if (slices > slicesHere && worker !== null) {
        await worker.started();
        if (worker.ready) break;
      }
      const batch = walk.next(batchRows, performance.now() + SLICE_MS);
      if (batch !== null) {
        here += batch.rows.length;
        yield { ...batch, rows: toColumns(batch.rows) };
        if (batch.rows.length > 0) batchRows = Math.min(batchRows * 2, batchSize);
      }
      // Lets requests in, and the worker's "ready".
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (walk.done || worker === null) return;
    log.debug(`scan: the walk moves to its worker thread after ${here} entries`);
    const taken = new Int32Array(new SharedArrayBuffer(4));
    worker.post({
      roots: [...roots],
      ignore,
      state: walk.state,
      onlyRoot,
      batchRows,
      batchSize,
      dbFile: options.dbFile,
      taken: taken.buffer,
      observer: observer?.threadModule.href ?? null,
    });
    for (;;) {
      const message = await worker.next();
      if (message.type === 'batch') {
        yield message.batch;
        Atomics.add(taken, 0, 1);
        Atomics.notify(taken, 0);
      } else if (message.type === 'log') {
        log[message.level](message.message);
      } else if (message.type === 'done') {
        addSkips(skips, message.skips);
        // What its observer holds (the scan's watches) stays until the observer has no more use for it.
        if (observer) {
          observer.adopt(worker.observed());
          worker = null;
        }
        return;
      } else if (message.type === 'error') {
        throw Object.assign(new Error(message.message), message.code === undefined ? {} : { code: message.code });
      }
    }
  } finally {
    worker?.end();
  }
}

/** The worker thread, as a queue of its messages. */
export class ScanWorker {
  ready = false;
  private readonly worker: Worker;
  private readonly inbox: ScanMessage[] = [];
  private wake: (() => void) | undefined;
  private failure: Error | undefined;
  private ended = false;

  constructor(url: URL, log: Logger) {
    this.worker = new Worker(url);
    this.worker.on('message', (message: ScanMessage) => {
      if (message.type === 'ready') this.ready = true;
      else this.inbox.push(message);
      this.arrived();
    });
    this.worker.on('error', (error) => {
      // Before the handover the walk just stays on the main thread.
      if (!this.ready) log.debug(`the scan's worker thread failed to start (${error.message}); walking on the main thread`);
      this.failure ??= error;
      this.arrived();
    });
    this.worker.on('exit', (code) => {
      this.failure ??= new Error(`the scan's worker thread exited (code ${code}) before the walk ended`);
      this.arrived();
    });
  }

  /** Resolves once the worker is up, or has failed. */
  async started(): Promise<void> {
    while (!this.ready && !this.failure) await new Promise<void>((resolve) => (this.wake = resolve));
  }

  post(message: ScanHandover | ToObserver): void {
    this.worker.postMessage(message);
  }

  /** Once its walk is done: the worker as its observer's adopter talks to it (see ScanObserver.adopt). */
  observed(): ObservedThread {
    return {
      post: (message) => this.post({ type: 'observer', message }),
      next: async () => {
        for (;;) {
          const message = await this.next();
          if (message.type === 'observer') return message.message;
        }
      },
      end: () => this.end(),
    };
  }

  async next(): Promise<ScanMessage> {
    for (;;) {
      const message = this.inbox.shift();
      if (message !== undefined) return message;
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.worker.removeAllListeners('exit');
    // A failed start has already been reported: nothing more to hear from it.
    this.worker.on('error', () => {});
    void this.worker.terminate();
  }

  private arrived(): void {
    this.wake?.();
    this.wake = undefined;
  }
}

function addSkips(into: SkipReport, from: Pick<SkipReport, 'counts' | 'examples'>): void {
  for (const reason of Object.keys(from.counts) as SkipReason[]) {
    for (const example of from.examples[reason]) into.add(reason, example);
    into.counts[reason] += from.counts[reason] - from.examples[reason].length;
  }
}

