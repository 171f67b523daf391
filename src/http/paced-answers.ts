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
  /** Bytes it keeps in memory: an answer that keeps none frees nothing when cut (a small answer, an open SSE answer). */
  kept: number;
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
 * the kernel, what each keeps in memory is counted (read from its handler
 * as it comes, so what the SDK has queued counts too: see pace()), and past
 * MAX_HELD_ANSWER_BYTES, all answers together, those whose clients have
 * asked for nothing for PRESSED_STALL_MS are cut, the longest stalled first,
 * until the bound holds (an answer that keeps nothing, its last piece out,
 * is never cut: that would free nothing). A cut lets the rest of the answer
 * go and closes its connection, so that its client sees the answer cut short.
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

  /**
   * `response`, its body handed on a piece at a time as its client takes it.
   * `cutConnection` ends its connection when it is cut. The body is read as
   * it comes, and what is read counted: the SDK queues each event of an SSE
   * answer (a batch's answers one after another) whether or not anyone reads
   * them. `between`: a stream that makes bytes of what it reads, only when it
   * is read (AnswerBlobs' splice), put between that reading and the pieces.
   */
  pace(response: Response, cutConnection: () => void, between?: (body: ReadableStream<Uint8Array>) => ReadableStream<Uint8Array>): Response {
    if (response.body === null) return response;
    const body = this.paced(response.body, cutConnection, between ?? ((ahead) => ahead));
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  }

  private paced(
    body: ReadableStream<Uint8Array>,
    cutConnection: () => void,
    between: (body: ReadableStream<Uint8Array>) => ReadableStream<Uint8Array>,
  ): ReadableStream<Uint8Array> {
    const source = body.getReader();
    /** What is left of the chunk being written, and what it keeps in memory: all of its chunk (it is a view) until compacted. */
    let pending: Uint8Array = EMPTY;
    let pendingKept = 0;
    let over = false;
    let ctrl: ReadableStreamDefaultController<Uint8Array> | undefined;
    const count = (bytes: number) => {
      answer.kept += bytes;
      if (bytes > 0) this.hold(bytes);
      else this.held += bytes;
    };
    const letGo = () => {
      over = true;
      this.held -= answer.kept;
      answer.kept = 0;
      pending = EMPTY;
      this.answers.delete(answer);
      stage.drop();
    };
    const answer: Paced = {
      lastTaken: this.clock.now(),
      kept: 0,
      waiting: false,
      cut: () => {
        if (over) return;
        const bytes = answer.kept;
        const idleMs = this.clock.now() - answer.lastTaken;
        letGo();
        const error = new Error(`its client asked for none of it for ${Math.round(idleMs)} ms while the answers held passed their bound`);
        fail(ctrl, reader, error);
        // The Node adapter ends a response whose body fails as if it were whole: the connection is cut instead, so
        // that the client (or a proxy) sees an answer cut short, not a complete 200 missing its end.
        cutConnection();
        this.onCut({ bytes, idleMs });
      },
    };
    const stage = readingAhead(source, count);
    const reader = between(stage.ahead).getReader();
    this.answers.add(answer);
    stage.start();
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
              // Failed part way: the connection is cut, as for a cut answer, rather than the answer ended as whole.
              if (!over) {
                letGo();
                cutConnection();
              }
              throw error;
            }
            if (over) return;
            if (next.done) {
              letGo();
              return controller.close();
            }
            pending = next.value;
            pendingKept = pending.length;
            count(pendingKept);
          }
          const next = cutPiece(pending, pendingKept);
          count(next.kept - pendingKept);
          ({ rest: pending, kept: pendingKept } = next);
          controller.enqueue(next.piece);
          answer.waiting = true;
        },
        // The client went away (the adapter cancels the body when the response closes).
        cancel: (reason) => {
          if (!over) letGo();
          return reader.cancel(reason);
        },
      },
      // Nothing queued for the adapter: a piece is made only when it asks for one.
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
    const waiting = [...this.answers].filter((a) => a.waiting && a.kept > 0).sort((a, b) => a.lastTaken - b.lastTaken);
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

/**
 * The next piece of `pending` (a view of a chunk that keeps `kept` bytes in
 * memory), what is left of it, and what that keeps. A piece of a larger
 * chunk is a copy: a view would keep the whole chunk in memory for as long
 * as Node holds the piece. Once half of the chunk is gone what is left is
 * copied and the chunk let go (a 4 MB answer costs some 4 MB of copies
 * more, and keeps no more than twice what is left of it).
 */
function cutPiece(pending: Uint8Array, kept: number): { piece: Uint8Array; rest: Uint8Array; kept: number } {
  if (pending.length <= ANSWER_PIECE_BYTES) return { piece: pending, rest: EMPTY, kept: 0 };
  const piece = new Uint8Array(pending.subarray(0, ANSWER_PIECE_BYTES));
  const rest = pending.subarray(ANSWER_PIECE_BYTES);
  return rest.length * 2 <= kept ? { piece, rest: new Uint8Array(rest), kept: rest.length } : { piece, rest, kept };
}

/** Ends the paced body with `error` (it may be closed already) and cancels what it reads (and so, through it, the source). */
function fail(ctrl: ReadableStreamDefaultController<Uint8Array> | undefined, reader: ReadableStreamDefaultReader<Uint8Array>, error: Error): void {
  try {
    ctrl?.error(error);
  } catch {
    // already closed
  }
  void reader.cancel(error).catch(() => {});
}

/**
 * `source` read as it comes, into a queue: `ahead` is what it read, a chunk
 * a read. Each chunk is counted when read and uncounted when taken (the
 * taker counts it then). `start` begins the reading; `drop` lets the queue
 * go and ends `ahead`.
 */
function readingAhead(source: ReadableStreamDefaultReader<Uint8Array>, count: (bytes: number) => void): { ahead: ReadableStream<Uint8Array>; start(): void; drop(): void } {
  const queue: Uint8Array[] = [];
  let ended = false;
  let dropped = false;
  let failure: { error: unknown } | undefined;
  /** A read of `ahead` waiting for the next chunk. */
  let wake: (() => void) | undefined;
  const woken = () => {
    wake?.();
    wake = undefined;
  };
  const readAll = async () => {
    try {
      for (;;) {
        const next = await source.read();
        if (dropped || next.done) break;
        queue.push(next.value);
        count(next.value.length);
        woken();
      }
    } catch (error) {
      failure = { error };
    }
    ended = true;
    woken();
  };
  const ahead = new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        for (;;) {
          const chunk = queue.shift();
          if (chunk !== undefined) {
            count(-chunk.length);
            return controller.enqueue(chunk);
          }
          if (failure !== undefined) throw failure.error;
          if (ended || dropped) return controller.close();
          await new Promise<void>((resolve) => (wake = resolve));
        }
      },
      cancel: (reason) => source.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return {
    ahead,
    start: () => void readAll(),
    drop: () => {
      dropped = true;
      queue.length = 0;
      woken();
    },
  };
}
