/**
 * Jobs for one worker (a thread or a child process) that does one at a
 * time: in order, at most `maxWaiting` waiting (each holds its input in
 * memory), the rest refused at once; a waiting job whose request is
 * cancelled leaves the queue then (a client that cancelled its searches held
 * their places, and its next search waited behind each of them). The owner starts each job on its worker
 * (`start`) and says how it ended (`finish`); everything about the worker
 * itself (starting it, its budgets, killing it) stays with the owner. The
 * conversion process (content/isolate.ts) and the search thread
 * (search/search-thread.ts) queue their jobs here.
 */
export class JobQueue<Job, Output> {
  private readonly waiting: Pending<Job, Output>[] = [];
  private running: Pending<Job, Output> | undefined;
  private closed = false;

  constructor(
    private readonly options: {
      maxWaiting: number;
      /** The error a job is refused with: the queue is full, or closed, or the job's request was cancelled before it started. */
      refused(reason: 'full' | 'closed' | 'cancelled'): Error;
      /** Starts `job` on the worker. A throw fails that job with what was thrown, and the next one starts. */
      start(job: Job): void;
      /** While true no job starts (the last worker is still dying); `pump()` once it turns false. */
      held?(): boolean;
      /** A job ended and none is left to run. */
      drained?(): void;
    },
  ) {}

  /** The job running, if any. */
  get current(): Job | undefined {
    return this.running?.job;
  }

  /** Queues `job`; `signal`: its request's, whose abort takes the job out while it waits (a running job is the owner's). */
  add(job: Job, signal?: AbortSignal): Promise<Output> {
    if (this.closed) return Promise.reject(this.options.refused('closed'));
    if (signal?.aborted) return Promise.reject(this.options.refused('cancelled'));
    if (this.waiting.length >= this.options.maxWaiting) return Promise.reject(this.options.refused('full'));
    return new Promise((resolve, reject) => {
      const pending: Pending<Job, Output> = { job, resolve, reject };
      if (signal) {
        const cancel = () => {
          const at = this.waiting.indexOf(pending);
          if (at < 0) return;
          this.waiting.splice(at, 1);
          reject(this.options.refused('cancelled'));
        };
        signal.addEventListener('abort', cancel, { once: true });
        pending.forget = () => signal.removeEventListener('abort', cancel);
      }
      this.waiting.push(pending);
      this.pump();
    });
  }

  /** The running job ended (an error, or its output); the next one starts. Nothing when none runs. */
  finish(error: Error | undefined, output?: Output): void {
    const running = this.running;
    if (!running) return;
    this.running = undefined;
    if (error) running.reject(error);
    else running.resolve(output!);
    this.pump();
    if (!this.running && !this.closed) this.options.drained?.();
  }

  /** Starts the next job when none runs and nothing holds the queue. */
  pump(): void {
    while (!this.running && !this.closed && this.waiting.length > 0 && !this.options.held?.()) {
      const next = this.waiting.shift()!;
      next.forget?.();
      this.running = next;
      try {
        this.options.start(next.job);
        return;
      } catch (error) {
        this.running = undefined;
        next.reject(error as Error);
      }
    }
  }

  /** Refuses the waiting jobs; the running one is the owner's to finish (it stops its worker). */
  close(): void {
    this.closed = true;
    for (const pending of this.waiting.splice(0)) {
      pending.forget?.();
      pending.reject(this.options.refused('closed'));
    }
  }
}

/** Why a job was refused, in words; `full`: the owner's (what waits, and how many). */
export function refusalText(reason: 'full' | 'closed' | 'cancelled', full: string): string {
  return reason === 'closed' ? 'server is closing' : reason === 'cancelled' ? 'the request was cancelled' : full;
}

interface Pending<Job, Output> {
  job: Job;
  resolve(output: Output): void;
  reject(error: Error): void;
  /** Stops hearing of its request's cancellation (it started, or the queue closed). */
  forget?(): void;
}
