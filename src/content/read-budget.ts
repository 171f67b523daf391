// The bytes of files being read at once, for the whole process: every read
// of a file's content takes its size from one budget first and gives it back
// when done. Without it, 100 concurrent reads of a 4 MiB file held 0.9 GB
// (the bytes, their base64 or text, and the JSON of the answer).

/**
 * File bytes read at once by every client together. A read holds about six
 * times its file in memory while it is answered (the bytes, base64, the JSON
 * of the answer and its copies): the bench's 100 reads of a 4 MiB file
 * peaked at 571 MiB with 64 MiB, 405 MiB with 16, 347 MiB with 8 (table 16).
 */
export const READ_BUDGET_BYTES = 8 * 1024 * 1024;
/** Reads that may wait for the budget; past it a read is refused as busy (the client retries). */
export const MAX_WAITING_READS = 256;

/** Too many reads are waiting: the client should retry later. */
export class ReadBusyError extends Error {
  override name = 'ReadBusyError';
}

/**
 * A byte-counting semaphore, first come first served. A read larger than the
 * whole budget runs when nothing else does, so every file that may be read
 * can be.
 */
export class ReadBudget {
  private used = 0;
  private readonly waiting: { bytes: number; start: () => void }[] = [];
  /** Reads refused as busy since start (the metrics). */
  refusals = 0;

  constructor(
    readonly totalBytes = READ_BUDGET_BYTES,
    readonly maxWaiting = MAX_WAITING_READS,
  ) {}

  /** Bytes taken by reads in flight now (a gauge for tests and the bench). */
  get inUse(): number {
    return this.used;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Runs `read` once `bytes` of the budget are free, and gives them back
   * however it ends; or, if `read` called `hold()`, when the function that
   * returned is called (the bytes outlive the read: an answer written in
   * pieces after it). Giving back twice is harmless.
   */
  async run<T>(bytes: number, read: (hold: () => () => void) => Promise<T>): Promise<T> {
    const cost = Math.max(1, bytes);
    if (!(this.waiting.length === 0 && this.fits(cost))) {
      if (this.waiting.length >= this.maxWaiting) {
        this.refusals++;
        throw new ReadBusyError(`Server busy: ${this.waiting.length} reads are waiting for the ${this.totalBytes / 1024 / 1024} MiB read budget; retry shortly`);
      }
      await new Promise<void>((start) => this.waiting.push({ bytes: cost, start }));
    } else {
      this.used += cost;
    }
    let given = false;
    let held = false;
    const giveBack = () => {
      if (given) return;
      given = true;
      this.used -= cost;
      this.startWaiting();
    };
    const hold = () => {
      held = true;
      return giveBack;
    };
    try {
      return await read(hold);
    } finally {
      if (!held) giveBack();
    }
  }

  private fits(cost: number): boolean {
    return this.used === 0 || this.used + cost <= this.totalBytes;
  }

  private startWaiting(): void {
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.bytes)) {
      const next = this.waiting.shift()!;
      this.used += next.bytes;
      next.start();
    }
  }
}
