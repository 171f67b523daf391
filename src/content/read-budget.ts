// The bytes of answers carrying file content at once, for the whole process:
// every read of a file's content takes what its answer will weigh on the wire
// from one budget first, and gives it back when its answer has left (on
// stdio, once written to stdout). Without it, 100 concurrent reads of a 4 MiB
// file held 0.9 GB (the bytes, their base64 or text, and the JSON of the
// answer); counting file bytes and giving them back when the answer was
// built, not sent, 16 reads of 4 MiB text files on stdio held 509 MiB.

/**
 * Answer bytes (as encoded on the wire: base64 or JSON-escaped text) in
 * flight for every client together. An answer holds a few times its wire
 * size in memory while it is built and written (the file's bytes, its text
 * or base64, the JSON of the answer, the bytes queued for the pipe): the
 * bench's 100 reads of a 4 MiB file peaked at 571 MiB with 64 MiB of file
 * bytes, 405 MiB with 16, 347 MiB with 8 (table 16).
 */
export const READ_BUDGET_BYTES = 8 * 1024 * 1024;

/**
 * What `bytes` of a file weigh in an answer before it is read: its base64
 * (4/3). Text is counted exactly once read (jsonTextBytes): JSON escaping
 * grows most text less than base64 does, but may grow some more.
 */
export function wireBytes(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}

/**
 * The UTF-8 bytes of `text` inside a JSON string, as JSON.stringify writes
 * it: a quote, a backslash and \b \f \n \r \t take two bytes, other
 * control characters and lone surrogates six.
 */
export function jsonTextBytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += c === 0x22 || c === 0x5c ? 2 : c >= 0x20 ? 1 : c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 2 : 6;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += (c & 0xf800) === 0xd800 ? 6 : 3;
  }
  return bytes;
}

/** What a read may do with its share of the budget. */
export interface ReadShare {
  /**
   * Keeps the share past the end of the read: it is given back when the
   * returned function is called (the answer was written, or let go).
   */
  hold(): () => void;
  /**
   * The share becomes at least `bytes` (the answer's exact size, once
   * known), taken at once even past the budget: the bytes are in memory
   * already, and later reads wait for them.
   */
  grow(bytes: number): void;
}
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
   * however it ends; or, if `read` called `share.hold()`, when the function
   * that returned is called (the bytes outlive the read: an answer written
   * after it). Giving back twice is harmless.
   */
  async run<T>(bytes: number, read: (share: ReadShare) => Promise<T>): Promise<T> {
    let cost = Math.max(1, bytes);
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
    const share: ReadShare = {
      hold: () => {
        held = true;
        return giveBack;
      },
      grow: (bytes) => {
        if (given || bytes <= cost) return;
        this.used += bytes - cost;
        cost = bytes;
      },
    };
    try {
      return await read(share);
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
