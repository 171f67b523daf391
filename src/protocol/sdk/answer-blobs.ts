// SDK workaround (@modelcontextprotocol/server 2.4): a result is turned into bytes whole (JSON.stringify, then
// TextEncoder), so a large binary content held the event loop in one piece (AnswerBlobs below says how much). Not
// pinned by test/unit/sdk-workarounds.test.ts: it goes when the SDK can write an answer as a stream.
import { randomBytes } from 'node:crypto';
import type { TurnBudget } from '../../turns.ts';

/**
 * A binary content larger than this, read over HTTP outside a session, is
 * sent as its answer is written (AnswerBlobs) rather than encoded whole on
 * the event loop.
 */
export const DEFER_BLOB_BYTES = 256 * 1024;
/** Bytes of the file encoded per piece of the answer: a multiple of 3, so the pieces' base64 joins without padding. */
export const BLOB_CHUNK_BYTES = 192 * 1024;

/**
 * A deferred content keeps its file's share of the read budget until it is
 * written; a client that takes no piece of it for this long lets the share
 * go (the bytes stay with its answer): one that stops reading does not hold
 * other clients' reads for the 120 s its connection may idle.
 */
export const STALLED_ANSWER_MS = 5_000;

/** Every placeholder starts so (base64 letters: a placeholder is valid base64 to anything that checks it). */
const PLACEHOLDER_PREFIX = 'folderMcpBlob';
/** The prefix, a nonce of 24 hex digits, a number of 7: 44 characters, a whole number of base64 quanta. */
const PLACEHOLDER_LENGTH = PLACEHOLDER_PREFIX.length + 24 + 7;
const EMPTY: Buffer = Buffer.alloc(0);

/** The placeholders of requests being answered, by request: the handler knows its HTTP request, not the endpoint. */
const byRequest = new WeakMap<Request, AnswerBlobs>();

/**
 * The large binary contents of one HTTP request's answer, written as the
 * answer is sent.
 *
 * The SDK turns a result into bytes whole: for a 4 MiB file a 5.6 MB
 * base64 string, its JSON (JSON.stringify) and its UTF-8 (TextEncoder),
 * some 20 ms of the event loop in one piece with three copies in memory,
 * and every other client's request waits behind it (bench attack 9: 100
 * reads of a 4 MiB file at once). So over HTTP, for a request outside a
 * 2025 session (whose answer goes out on its own response, and nowhere
 * else), a read of a binary file over DEFER_BLOB_BYTES gives the SDK a
 * placeholder for the `blob`, and the endpoint replaces the placeholder in
 * the answer's bytes with the file's base64, BLOB_CHUNK_BYTES of the file
 * at a time, as fast as the client takes them (the Node adapter waits for
 * the socket to drain). In a session an answer may go out on a resumed
 * stream or be dropped on a cancel with its request's stream still open:
 * its content is encoded whole, as on stdio.
 *
 * A placeholder holds a nonce drawn for this request, and only this
 * request's answer is searched for it: no client can spell one, and a file
 * that holds another request's placeholder (or this module's prefix) is
 * text like any other. A handler makes placeholders of its own request
 * only; one with this request's nonce that it does not hold (sent already)
 * cuts the answer instead of going out for content.
 */
export class AnswerBlobs {
  private readonly nonce = `${PLACEHOLDER_PREFIX}${randomBytes(12).toString('hex')}`;
  private readonly held = new Map<string, { bytes: Buffer; lease?: () => void; unsent?: NodeJS.Timeout }>();
  /** Shares of the read budget held for contents not yet written (given back once written, stalled, or released). */
  private readonly leases = new Set<() => void>();
  /** The answer went, or will never go (its client left): a content deferred from now on is let go at once. */
  private released = false;
  private next = 0;

  /** `turns`: each piece is encoded in a slice of it, so many answers sent at once take turns with other work. */
  private constructor(
    private readonly turns: TurnBudget | undefined,
    private readonly stalledMs: number,
  ) {}

  /** Opens the placeholders of `request`'s answer: a handler serving it finds them with `answerBlobsOf`. */
  static open(request: Request, turns?: TurnBudget, stalledMs = STALLED_ANSWER_MS): AnswerBlobs {
    const blobs = new AnswerBlobs(turns, stalledMs);
    byRequest.set(request, blobs);
    return blobs;
  }

  /** A placeholder for `bytes`' base64 in this answer; `lease` is called once they are written (or let go). */
  defer(bytes: Buffer, lease?: () => void): string {
    const placeholder = `${this.nonce}${(this.next++).toString(16).padStart(7, '0')}`;
    // Its client left while the file was read (the SDK answered the aborted request with no body, and the endpoint
    // released this): nothing will write it. Held, its share of the read budget was never given back, and every
    // read on the server waited behind it for good (a red-team pass: one aborted read of a 4 MB binary file).
    if (this.released) {
      lease?.();
      return placeholder;
    }
    // An answer whose client takes none of it lets the share go as one that stops reading does.
    const unsent = lease ? setTimeout(() => this.giveBack(lease), this.stalledMs).unref() : undefined;
    this.held.set(placeholder, { bytes, ...(lease ? { lease, unsent } : {}) });
    if (lease) this.leases.add(lease);
    return placeholder;
  }

  /** What is held goes, and the read budget's shares with it (the answer was sent, failed, or its client went away). */
  release(): void {
    this.released = true;
    for (const { unsent } of this.held.values()) clearTimeout(unsent);
    this.held.clear();
    for (const lease of this.leases) lease();
    this.leases.clear();
  }

  private giveBack(lease: (() => void) | undefined): void {
    if (lease === undefined || !this.leases.delete(lease)) return;
    lease();
  }

  /** `response` with each placeholder replaced by its base64, as the body is read. */
  splice(response: Response): Response {
    if (response.body === null) {
      this.release();
      return response;
    }
    const headers = new Headers(response.headers);
    headers.delete('content-length');
    return new Response(this.spliced(response.body), { status: response.status, statusText: response.statusText, headers });
  }

  private spliced(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    const reader = body.getReader();
    const marker = Buffer.from(this.nonce, 'latin1');
    /** Bytes of the SDK's answer read and not yet passed on. */
    let pending: Buffer = EMPTY;
    /** The blob being written, how much of it is, and its share of the read budget. */
    let blob: Buffer | undefined;
    let at = 0;
    let lease: (() => void) | undefined;
    let ended = false;
    /** Gives the share back when the client takes no piece for STALLED_ANSWER_MS (refreshed at each piece). */
    let stall: NodeJS.Timeout | undefined;
    const pull = async (controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> => {
      for (;;) {
        if (blob !== undefined) {
          // 100 answers being sent at once each encoded a piece per turn of the event loop (40 ms a turn): one budget.
          await this.turns?.slice();
          const end = Math.min(at + BLOB_CHUNK_BYTES, blob.length);
          controller.enqueue(Buffer.from(blob.toString('base64', at, end), 'latin1'));
          at = end;
          if (at === blob.length) {
            blob = undefined;
            clearTimeout(stall);
            this.giveBack(lease);
          } else {
            stall = stall?.refresh() ?? setTimeout(() => this.giveBack(lease), this.stalledMs).unref();
          }
          return;
        }
        const found = pending.indexOf(marker);
        if (found !== -1 && pending.length >= found + PLACEHOLDER_LENGTH) {
          const placeholder = pending.toString('latin1', found, found + PLACEHOLDER_LENGTH);
          const deferred = this.held.get(placeholder);
          // Only ours, and each once: anything else is cut rather than sent with a placeholder for content.
          if (deferred === undefined) throw new Error('an answer holds a content placeholder it does not own');
          this.held.delete(placeholder);
          const before = pending.subarray(0, found);
          pending = pending.subarray(found + PLACEHOLDER_LENGTH);
          blob = deferred.bytes;
          lease = deferred.lease;
          // Its clock runs on from the defer: the stream reads ahead of the client once, and a client that takes
          // nothing must not hold the share.
          stall = deferred.unsent;
          at = 0;
          if (before.length > 0) return controller.enqueue(before);
          continue;
        }
        // Everything but what may be the start of a placeholder goes on at once (an SSE event is never held back).
        const keep = found !== -1 ? pending.length - found : partialAtEnd(pending, marker);
        if (pending.length > keep || (ended && pending.length > 0)) {
          const upTo = ended ? pending.length : pending.length - keep;
          controller.enqueue(pending.subarray(0, upTo));
          pending = pending.subarray(upTo);
          return;
        }
        if (ended) {
          this.release();
          return controller.close();
        }
        const { done, value } = await reader.read();
        if (done) ended = true;
        else {
          const chunk = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
          pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        }
      }
    };
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          try {
            await pull(controller);
          } catch (error) {
            clearTimeout(stall);
            this.release();
            void reader.cancel(error).catch(() => {});
            throw error;
          }
        },
        cancel: (reason) => {
          clearTimeout(stall);
          this.release();
          return reader.cancel(reason);
        },
      },
      // Nothing read ahead of its reader: what it reads of the answer is counted where it is read from (the HTTP
      // pacer's read-ahead), and a chunk pulled early sat here uncounted (a whole event, in an answer counted as
      // keeping nothing).
      { highWaterMark: 0 },
    );
  }
}

/** The placeholders of the answer to `request`, when its endpoint opened them. */
export function answerBlobsOf(request: Request | undefined): AnswerBlobs | undefined {
  return request === undefined ? undefined : byRequest.get(request);
}

/** How many bytes at the end of `bytes` are the start of `marker` (0 when none). */
function partialAtEnd(bytes: Buffer, marker: Buffer): number {
  for (let k = Math.min(bytes.length, marker.length - 1); k > 0; k--) {
    if (bytes.compare(marker, 0, k, bytes.length - k) === 0) return k;
  }
  return 0;
}
