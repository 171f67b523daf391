// Answers written to their clients a piece at a time, with what they keep in
// memory counted, so that past a bound the ones whose clients have stopped
// taking them can be cut (src/http/endpoint.ts paces every answer to a POST).
import { realClock, type Clock, type ClockTimer } from '../clock.ts';

/**
 * The most of an answer handed to Node at once. The next piece is asked for
 * when Node has passed this one to the kernel (the Node adapter waits for
 * `drain`).
 */
export const ANSWER_PIECE_BYTES = 64 * 1024;
/** What answers read from their handlers and not yet handed to Node may keep in memory, all together. */
export const MAX_HELD_ANSWER_BYTES = 128 * 1024 * 1024;
/** Past MAX_HELD_ANSWER_BYTES, an answer whose client has asked for no piece for this long is cut (longest first). */
export const PRESSED_STALL_MS = 1_000;

const EMPTY = new Uint8Array(0);

export interface AnswerCut {
  /** Bytes of the answer that were kept in memory: let go. */
  bytes: number;
  /** Since its client last asked for a piece. */
  idleMs: number;
}

export interface AnswerPacerOptions {
  clock?: Clock;
  maxHeldBytes?: number;
  onCut?: (cut: AnswerCut) => void;
}

interface Paced {
  /** When its client last asked for a piece. */
  lastTaken: number;
  /** A piece is out and its client has not asked for the next. */
  waiting: boolean;
  cut(): void;
}

/**
 * The Node adapter writes each answer whole, and a client that stopped
 * reading held its answer in memory until its connection went idle (120 s,
 * and Node can take twice that while a write is pending): a red-team pass
 * held 300 answers of a 3.9 MB text file in 1,374 MiB of RSS. Here an answer
 * is handed to Node a piece at a time, the next when the last has gone to
 * the kernel, what each keeps in memory is counted, and past
 * MAX_HELD_ANSWER_BYTES, all answers together, those whose clients have
 * asked for nothing for PRESSED_STALL_MS are cut, the longest stalled first,
 * until the bound holds. A cut lets the rest of the answer go (its client
 * sees the response end unfinished); Node keeps the one piece it was given
 * until the connection closes.
 *
 * Below the bound no answer is cut, however long its client waits: a
 * stall cannot tell a slow reader from a stopped one. The kernel wakes a
 * writer only once about half of a socket's send buffer has gone (several
 * MB on loopback), so a client reading 20 KB/s asked for no piece for over
 * 30 s (a cut after 30 s of stall was tried and cut three such readers; a
 * cut by a response's buffered length, before, cut slow readers too).
 */
export class AnswerPacer {
  private readonly clock: Clock;
  private readonly maxHeld: number;
  private readonly onCut: (cut: AnswerCut) => void;
  private readonly answers = new Set<Paced>();
  private held = 0;
  /** Set while the answers held are past their bound: when to look again. */
  private pressure: ClockTimer | undefined;

  constructor(options: AnswerPacerOptions = {}) {
    this.clock = options.clock ?? realClock;
    this.maxHeld = options.maxHeldBytes ?? MAX_HELD_ANSWER_BYTES;
    this.onCut = options.onCut ?? (() => {});
  }

  /** Bytes that answers read from their handlers and not yet handed to Node keep in memory. */
  get heldBytes(): number {
    return this.held;
  }

  /** Answers being written. */
  get size(): number {
    return this.answers.size;
  }

  /** `response`, its body handed on a piece at a time as its client takes it. */
  pace(response: Response): Response {
    if (response.body === null) return response;
    return new Response(this.paced(response.body), { status: response.status, statusText: response.statusText, headers: response.headers });
  }

  private paced(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    const reader = body.getReader();
    /** What is left of the chunk being written, and the bytes it keeps in memory (all of its chunk's, until compacted). */
    let pending: Uint8Array = EMPTY;
    let kept = 0;
    let over = false;
    let ctrl: ReadableStreamDefaultController<Uint8Array> | undefined;
    const letGo = () => {
      over = true;
      this.held -= kept;
      kept = 0;
      pending = EMPTY;
      this.answers.delete(answer);
    };
    const answer: Paced = {
      lastTaken: this.clock.now(),
      waiting: false,
      cut: () => {
        if (over) return;
        const bytes = kept;
        const idleMs = this.clock.now() - answer.lastTaken;
        letGo();
        const error = new Error(`its client asked for none of it for ${Math.round(idleMs)} ms while the answers held passed their bound`);
        try {
          ctrl?.error(error);
        } catch {
          // already closed
        }
        void reader.cancel(error).catch(() => {});
        this.onCut({ bytes, idleMs });
      },
    };
    this.answers.add(answer);
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          ctrl = controller;
        },
        // Called when Node has passed the last piece on (or at the start): the client's progress.
        pull: async (controller) => {
          answer.lastTaken = this.clock.now();
          answer.waiting = false;
          while (pending.length === 0) {
            let next: Awaited<ReturnType<typeof reader.read>>;
            try {
              next = await reader.read();
            } catch (error) {
              if (!over) letGo();
              throw error;
            }
            if (over) return;
            if (next.done) {
              letGo();
              return controller.close();
            }
            pending = next.value;
            kept = pending.length;
            this.hold(kept);
          }
          let piece: Uint8Array;
          if (pending.length <= ANSWER_PIECE_BYTES) {
            piece = pending;
            pending = EMPTY;
          } else {
            // A copy: a view would keep the whole chunk in memory for as long as Node holds the piece.
            piece = new Uint8Array(pending.subarray(0, ANSWER_PIECE_BYTES));
            pending = pending.subarray(ANSWER_PIECE_BYTES);
          }
          // What is left is a view of its chunk, which stays in memory whole: once it is half gone, what is left is
          // copied and the chunk let go (a 4 MB answer costs some 4 MB of copies more, and holds no more than twice
          // what is left of it).
          if (pending.length * 2 <= kept) {
            if (pending.length > 0) pending = new Uint8Array(pending);
            this.held -= kept - pending.length;
            kept = pending.length;
          }
          controller.enqueue(piece);
          answer.waiting = true;
        },
        // The client went away (the adapter cancels the body when the response closes).
        cancel: (reason) => {
          if (!over) letGo();
          return reader.cancel(reason);
        },
      },
      // Nothing read ahead: a piece is asked for only when the adapter wants one.
      { highWaterMark: 0 },
    );
  }

  /** `bytes` more held; past the bound, relieve(). */
  private hold(bytes: number): void {
    this.held += bytes;
    if (this.held > this.maxHeld && this.pressure === undefined) this.relieve();
  }

  /**
   * Past the bound, the answers stalled for PRESSED_STALL_MS are cut, the
   * longest stalled first, until it holds again; while it does not, this
   * looks again when the next one will have stalled that long (answers that
   * came in a burst are all held, and stall later, with no new answer to
   * set the check off).
   */
  private relieve(): void {
    this.clock.clearTimeout(this.pressure);
    this.pressure = undefined;
    if (this.held <= this.maxHeld) return;
    const now = this.clock.now();
    const waiting = [...this.answers].filter((a) => a.waiting).sort((a, b) => a.lastTaken - b.lastTaken);
    let next = now + PRESSED_STALL_MS;
    for (const answer of waiting) {
      if (this.held <= this.maxHeld) return;
      if (now - answer.lastTaken < PRESSED_STALL_MS) {
        next = answer.lastTaken + PRESSED_STALL_MS;
        break;
      }
      answer.cut();
    }
    if (this.held > this.maxHeld) this.pressure = this.clock.setTimeout(() => this.relieve(), Math.max(1, next - now), { background: true });
  }
}
