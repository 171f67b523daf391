import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { ConversionError, ConversionUnavailable, type ConversionLimits } from './converters/types.ts';
import type { WorkerJob, WorkerReply } from './worker.ts';

/** Heap cap of the conversion thread: a hostile document exhausts it, not the server. */
const WORKER_HEAP_MB = 512;

/** Jobs waiting for the thread (each holds its input in memory); past it a read goes without alternatives. */
const MAX_QUEUED = 32;

interface Pending {
  job: WorkerJob;
  resolve(output: string | Uint8Array): void;
  reject(error: Error): void;
}

/**
 * Runs registered converters in one worker thread, one job at a time. The
 * time budget starts when a job is handed to the thread; past it the thread
 * is terminated (that is the only way to stop synchronous parsing) and the
 * next job gets a fresh one. The thread is started on first use, so start-up
 * never pays for it, and it never keeps the process alive.
 */
export class ConversionWorker {
  private worker: Worker | undefined;
  private readonly queue: Pending[] = [];
  private current: { pending: Pending; timer: NodeJS.Timeout } | undefined;
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly workerUrl: URL,
    private readonly maxQueued = MAX_QUEUED,
  ) {}

  run(converter: string, input: { name: string; bytes: Uint8Array; text: string | undefined; limits: ConversionLimits }): Promise<string | Uint8Array> {
    if (this.closed) return Promise.reject(new ConversionUnavailable('server is closing'));
    if (this.queue.length >= this.maxQueued) {
      return Promise.reject(new ConversionUnavailable(`${this.maxQueued} conversions are already waiting`));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ job: { id: this.nextId++, converter, ...input }, resolve, reject });
      this.pump();
    });
  }

  close(): void {
    this.closed = true;
    for (const pending of this.queue.splice(0)) pending.reject(new ConversionUnavailable('server is closing'));
    this.finish(new ConversionUnavailable('server is closing'));
    void this.worker?.terminate();
    this.worker = undefined;
  }

  private pump(): void {
    if (this.current || this.queue.length === 0) return;
    const pending = this.queue.shift()!;
    const worker = this.ensureWorker();
    const timer = setTimeout(() => {
      this.kill(new ConversionError(`conversion took longer than ${pending.job.limits.timeMs} ms; abandoned`));
    }, pending.job.limits.timeMs);
    this.current = { pending, timer };
    worker.postMessage(pending.job);
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.workerUrl, {
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
      // The thread's own stdout must never reach the protocol stream.
      stdout: true,
      stderr: false,
    });
    worker.stdout.resume(); // drop anything a library prints
    worker.unref();
    worker.on('message', (reply: WorkerReply) => {
      if (this.worker !== worker || !this.current || reply.id !== this.current.pending.job.id) return;
      if (reply.ok) this.finish(undefined, reply.output);
      else this.finish(reply.conversionError ? new ConversionError(reply.message) : new Error(reply.message));
    });
    // A thread that was killed for its budget is no longer this.worker: its
    // late events must not settle the job now running on its successor.
    worker.on('error', (error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      const message = /heap|memory/i.test(error.message) ? 'converter ran out of memory' : `converter crashed: ${error.message}`;
      this.finish(new ConversionError(message));
    });
    worker.on('exit', () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.finish(new ConversionError('converter thread exited'));
    });
    this.worker = worker;
    return worker;
  }

  /** Terminates the thread (a job over its budget) and settles that job. */
  private kill(error: Error): void {
    const worker = this.worker;
    this.worker = undefined;
    this.finish(error);
    void worker?.terminate();
  }

  private finish(error: Error | undefined, output?: string | Uint8Array): void {
    const current = this.current;
    if (!current) return;
    this.current = undefined;
    clearTimeout(current.timer);
    if (error) current.pending.reject(error);
    else current.pending.resolve(output!);
    if (!this.closed) this.pump();
  }
}

/**
 * The worker script: worker.js beside this module in dist/. Running the
 * TypeScript sources (tests, benchmarks under tsx), a worker thread cannot
 * load .ts files, so the built one is used when there is one (`npm test` and
 * `npm run bench` build first); undefined otherwise, and conversions then run
 * on the main thread.
 */
export function defaultWorkerUrl(): URL | undefined {
  if (!import.meta.url.endsWith('.ts')) return new URL('./worker.js', import.meta.url);
  const built = new URL('../../dist/content/worker.js', import.meta.url);
  return existsSync(built) ? built : undefined;
}
