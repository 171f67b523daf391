import { Worker } from 'node:worker_threads';
import type { SearchOutcome } from './search-reader.ts';
import type { SearchJob, SearchReply } from './search-worker.ts';
import { JobQueue, refusalText } from '../job-queue.ts';
import type { SqliteDriverName } from '../sqlite.ts';

/** Searches waiting for the thread; past it a search is refused (SearchBusyError). */
const MAX_QUEUED = 8;
/**
 * Past its budget a job stops between statements by itself; a single
 * statement that overruns by this much more gets the thread terminated (the
 * only way to stop SQLite from outside) and the job answered as cut short.
 */
const KILL_GRACE_MS = 1000;
const WORKER_HEAP_MB = 256;

export class SearchBusyError extends Error {
  override name = 'SearchBusyError';
}

/** The thread failed or exited under a job (not a query error): the caller may search another way. */
export class SearchThreadError extends Error {
  override name = 'SearchThreadError';
}

/**
 * Runs full-text searches in one worker thread with its own read-only
 * connection, one at a time, so the event loop answers other requests while
 * a query runs. The thread starts on first use and never keeps the process
 * alive. A thread killed for its budget may still be finishing its statement
 * (termination takes effect when SQLite returns): the next thread starts only
 * after it has exited, so abandoned queries never pile up on the CPU.
 */
export class SearchThread {
  private worker: Worker | undefined;
  private dying: Promise<unknown> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private nextId = 1;
  private readonly jobs = new JobQueue<SearchJob, SearchOutcome>({
    maxWaiting: MAX_QUEUED,
    refused: (reason) => new SearchBusyError(refusalText(reason, `${MAX_QUEUED} searches are already waiting; try again in a moment`)),
    held: () => this.dying !== undefined,
    start: (job) => {
      const worker = this.ensureWorker();
      this.timer = setTimeout(() => this.kill(), job.budgetMs + KILL_GRACE_MS);
      worker.postMessage(job);
    },
  });

  constructor(
    private readonly dbFile: string,
    private readonly sqliteDriver: SqliteDriverName,
    private readonly workerUrl: URL,
  ) {}

  /** `signal`: the request's; cancelled while it waits, the search never runs (one running goes on to its budget). */
  run(job: Omit<SearchJob, 'id'>, signal?: AbortSignal): Promise<SearchOutcome> {
    return this.jobs.add({ ...job, id: this.nextId++ }, signal);
  }

  close(): void {
    this.jobs.close();
    this.settle(new SearchBusyError('server is closing'));
    void this.worker?.terminate();
    this.worker = undefined;
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.workerUrl, {
      workerData: { dbFile: this.dbFile, sqliteDriver: this.sqliteDriver },
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
      // The thread's own stdout must never reach the protocol stream.
      stdout: true,
      stderr: false,
    });
    worker.stdout.resume();
    worker.unref();
    worker.on('message', (reply: SearchReply) => {
      if (this.worker !== worker || reply.id !== this.jobs.current?.id) return;
      if (reply.ok) this.settle(undefined, reply.outcome);
      else this.settle(new Error(reply.message));
    });
    // A thread killed for its budget is no longer this.worker: its late events settle nothing.
    worker.on('error', (error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.settle(new SearchThreadError(`search thread failed: ${error.message}`));
    });
    worker.on('exit', () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.settle(new SearchThreadError('search thread exited'));
    });
    this.worker = worker;
    return worker;
  }

  /** The job overran its budget inside one statement: answer it as cut short, and stop the thread. */
  private kill(): void {
    const worker = this.worker;
    this.worker = undefined;
    if (worker) {
      this.dying = worker.terminate().finally(() => {
        this.dying = undefined;
        this.jobs.pump();
      });
    }
    this.settle(undefined, { hits: [], truncated: true });
  }

  private settle(error: Error | undefined, outcome?: SearchOutcome): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.jobs.finish(error, outcome);
  }
}
