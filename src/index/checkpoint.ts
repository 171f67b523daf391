import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../log.ts';
import type { Db } from './db.ts';

/** How often the main thread asks whether anything was written since the last checkpoint. */
export const CHECKPOINT_EVERY_MS = 200;
/** SQLite's own default, restored when the thread cannot run. */
const AUTOCHECKPOINT_PAGES = 1000;

/** The word main and the thread share: the thread checkpoints only from idle; closing waits out busy. */
export const CheckpointState = { idle: 0, busy: 1, closed: 2 } as const;
/** Longest the main thread waits, on close, for a checkpoint in progress. */
const CLOSE_WAIT_MS = 2000;

/** What the checkpoint thread answers. */
export type CheckpointReply = { type: 'ready' } | { type: 'done'; frames: number; checkpointed: number } | { type: 'error'; message: string };

/**
 * Checkpoints the index's WAL on a thread of its own. By default SQLite
 * checkpoints inside the commit that takes the WAL past 1,000 pages, on the
 * thread that commits: ours is the event loop. Measured with the content
 * index's kind of batches (FTS5 rows, 2 vCPU): writing 150 batches took
 * 3.8-4.7 s of commit time with the automatic checkpoint and 2.9-3.1 s
 * without it (p99 of one commit 55-66 ms against 39-50 ms); a smaller
 * threshold (250 pages) made both worse.
 *
 * So the main connection turns the automatic checkpoint off, and every
 * CHECKPOINT_EVERY_MS, when rows changed since the last look
 * (`total_changes()`, one cheap statement), a worker thread runs
 * `wal_checkpoint(PASSIVE)` on a connection opened for it. In WAL mode a
 * checkpoint runs beside readers and the writer and never waits for them;
 * the writer starts the WAL over once a checkpoint has copied all of it.
 * A thread that cannot start, or fails, gives the checkpoints back to SQLite
 * (wal_autocheckpoint as before): the WAL never grows without bound.
 */
export class Checkpointer {
  /** Checkpoints the thread has run (for tests). */
  runs = 0;
  private worker: Worker | null = null;
  private readonly state = new Int32Array(new SharedArrayBuffer(4));
  private timer: NodeJS.Timeout | undefined;
  private inFlight = false;
  private lastChanges = -1;
  private readonly changes: () => number;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {
    const stmt = db.prepare('SELECT total_changes() AS n').pluck();
    this.changes = () => stmt.get() as number;
  }

  /** Starts the thread (`url` null, or an index in memory: SQLite keeps checkpointing on its own). */
  start(file: string, url: URL | null = defaultCheckpointWorkerUrl()): void {
    if (file === ':memory:' || url === null || this.worker) return;
    let worker: Worker;
    try {
      worker = new Worker(url, { workerData: { file, state: this.state.buffer } });
    } catch (error) {
      this.log.debug(`the checkpoint thread could not start (${(error as Error).message}); SQLite checkpoints on the main thread`);
      return;
    }
    this.worker = worker;
    worker.unref();
    this.db.pragma('wal_autocheckpoint = 0');
    worker.on('message', (reply: CheckpointReply) => {
      if (reply.type === 'ready') return;
      this.inFlight = false;
      // A checkpoint that fails once (the file cannot be opened, an I/O error) would fail again: the WAL must not grow meanwhile.
      if (reply.type === 'error') return this.fallBack(`could not checkpoint (${reply.message})`);
      this.runs++;
      this.wakeIdle();
    });
    worker.on('error', (error) => this.fallBack(`failed (${error.message})`));
    worker.on('exit', (code) => this.fallBack(`exited (code ${code})`));
    this.timer = setInterval(() => this.tick(), CHECKPOINT_EVERY_MS);
    this.timer.unref();
  }

  /** Resolves once nothing written before this call is left for the thread to checkpoint (tests). */
  async idle(): Promise<void> {
    while (this.worker && (this.inFlight || this.changes() !== this.lastChanges)) {
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    }
  }

  /**
   * Stops the thread. Synchronous, for FolderIndex.close: once it returns no
   * checkpoint connection is open, so the main connection, closing next, is
   * the last one and SQLite checkpoints and removes the WAL (a checkpoint in
   * progress is waited for, CLOSE_WAIT_MS at most).
   */
  close(): void {
    clearInterval(this.timer);
    const worker = this.worker;
    this.worker = null;
    this.wakeIdle();
    if (!worker) return;
    const deadline = performance.now() + CLOSE_WAIT_MS;
    for (;;) {
      const was = Atomics.compareExchange(this.state, 0, CheckpointState.idle, CheckpointState.closed);
      if (was !== CheckpointState.busy) break;
      const left = deadline - performance.now();
      if (left <= 0) break;
      Atomics.wait(this.state, 0, CheckpointState.busy, left);
    }
    worker.removeAllListeners('exit');
    worker.removeAllListeners('error');
    worker.on('error', () => {});
    void worker.terminate();
  }

  private tick(): void {
    if (!this.worker || this.inFlight || !this.db.open) return this.wakeIdle();
    const changes = this.changes();
    if (changes === this.lastChanges) return this.wakeIdle();
    this.lastChanges = changes;
    this.inFlight = true;
    this.worker.postMessage(null);
  }

  private fallBack(why: string): void {
    const worker = this.worker;
    if (!worker) return;
    this.worker = null;
    clearInterval(this.timer);
    worker.removeAllListeners('exit');
    worker.removeAllListeners('error');
    worker.on('error', () => {});
    void worker.terminate();
    this.log.warn(`the checkpoint thread ${why}; SQLite checkpoints on the main thread again`);
    if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
    this.wakeIdle();
  }

  private wakeIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }
}

/**
 * The checkpoint thread's script: beside the bundled server (dist/), or the
 * built one when running the TypeScript sources (as defaultScanWorkerUrl).
 */
export function defaultCheckpointWorkerUrl(): URL | null {
  if (!import.meta.url.endsWith('.ts')) return new URL('./checkpoint-worker.js', import.meta.url);
  const built = new URL('../../dist/checkpoint-worker.js', import.meta.url);
  return existsSync(built) ? built : null;
}
