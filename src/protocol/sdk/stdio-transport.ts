// SDK replacement (@modelcontextprotocol/server 2.4): the stdio transport, in place of StdioServerTransport, for the
// reasons listed at StdioTransport below. Not pinned by test/unit/sdk-workarounds.test.ts: each reason would need an
// SDK upgrade to fix it and this file to drop it (only the legacy not-found rewrite is pinned, by "legacy not found").
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import type { Readable, Writable } from 'node:stream';
import { ErrorCode } from '../errors.ts';
import { toLegacyError } from './legacy-not-found.ts';
import { errorResponse, leadingRequestId, lifecycleStep, readLine, type Era, type ErrorResponse } from '../wire.ts';

/**
 * The longest request line read, in bytes. MCP requests are small (a list
 * with 100 patterns of 256 characters is 26 KB); a longer line is answered
 * with -32600 and skipped, never buffered whole.
 */
export const MAX_REQUEST_LINE_BYTES = 1024 * 1024;
/** Of a line over the limit, this much is kept to read its id from. */
const HEAD_BYTES = 4096;
/**
 * Requests read and not yet answered, past which stdin is not read; nor is it
 * while an answer waits for stdout to drain (a client that does not read).
 * Without it the transport read on: 3,314 list requests waiting to be
 * answered held 4.2 GB, and 100,000 pings 530 MB. At 16 the bench's 3,000
 * unread 2,000-item lists peak at 291 MiB (478 MiB at 64).
 */
export const MAX_REQUESTS_IN_FLIGHT = 16;
/** After stdin ends, requests still in flight get this long to be answered before the connection ends. */
const END_GRACE_MS = 10_000;

export interface StdioTransportOptions {
  maxLineBytes?: number;
  /** After stdin ends, how long requests in flight have to be answered (END_GRACE_MS). */
  endGraceMs?: number;
  /** Called once when the input ends or fails, or the transport closes: the connection is over. */
  onEnd?: (reason: string) => void;
  /**
   * Called once the answer to request `id` has been written to the output
   * (handed to the OS), or failed to be: what it held may go
   * (src/protocol/answer-holds.ts).
   */
  onAnswered?: (id: string | number) => void;
  /** Called as the answer to request `id` starts being written: onAnswered follows once it is out. */
  onAnswering?: (id: string | number) => void;
  /** Sees every well-formed inbound message before the SDK does (the modern era's listen streams, src/app.ts). */
  /** An error returned is sent as the answer, and the message is not passed on (a listen over its bound). */
  onInbound?: (message: Record<string, unknown>, era: Era) => ErrorResponse | undefined | void;
}

/**
 * The stdio wire, in place of the SDK's StdioServerTransport (handed to
 * `serveStdio` as its `transport`), for what that one gets wrong for us:
 * - a line over the SDK's 10 MiB buffer makes it stop reading for good, in
 *   silence; here a line over `maxLineBytes` is answered (-32600, with its
 *   id when the head shows it) and skipped, and a line is searched for its
 *   newline once, not rescanned on every chunk;
 * - a malformed line is answered instead of dropped (src/protocol/wire.ts);
 * - the 2025 lifecycle: nothing but ping before `initialize`, `initialize`
 *   once (the SDK serves both);
 * - legacy-era not-found goes out as -32002 (the SDK sends -32602 on both
 *   eras; src/protocol/sdk/legacy-not-found.ts);
 * - writes under back-pressure wait on one `drain`, not one listener each;
 * - back-pressure on input: stdin is paused while MAX_REQUESTS_IN_FLIGHT
 *   requests wait for answers or stdout waits to drain;
 * - at the end of stdin, a last line without its newline is read, and the
 *   requests in flight are answered (END_GRACE_MS at most) before the end.
 */
export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly maxLineBytes: number;
  /** Bytes of the current line so far (only while it is within the limit). */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Set while skipping a line over the limit: its first bytes, for the id. */
  private oversizeHead: Buffer | null = null;
  private era: Era = 'opening';
  private drained: Promise<void> | null = null;
  private closed = false;
  /** Ids (typed: 1 and "1" differ) of requests passed on and not yet answered; listen streams are not counted. */
  private readonly inFlight = new Set<string>();
  /** Of those, the ones the client cancelled: never answered, they leave when their handler ends (settled). */
  private readonly cancelled = new Set<string>();
  /**
   * Ids of the server's own requests to the client (roots/list) not yet answered. While there are any, requests in
   * flight do not pause stdin: the answer may be queued behind them, and they may be waiting for it (the roots).
   */
  private readonly awaitingClient = new Set<string>();
  private paused = false;
  /** The part of a chunk not yet read when the transport paused (at most one chunk). */
  private backlog: Buffer | null = null;
  private inputEnded = false;
  private endTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly options: StdioTransportOptions = {},
  ) {
    this.maxLineBytes = options.maxLineBytes ?? MAX_REQUEST_LINE_BYTES;
  }

  async start(): Promise<void> {
    this.input.on('data', this.onData);
    this.input.on('end', this.onInputEnd);
    this.input.on('close', this.onInputEnd);
    this.input.on('error', this.onInputError);
    this.output.on('error', this.onOutputError);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) throw new Error('stdio transport is closed');
    const out = this.era === 'legacy' ? toLegacyError(message) : message;
    const answered = message as { id?: unknown; result?: unknown; error?: unknown };
    const answer = (answered.result !== undefined || answered.error !== undefined) && isRequestId(answered.id) ? answered.id : undefined;
    // The SDK gave up on one of its requests (a timeout): it says so with notifications/cancelled.
    const sent = message as { method?: unknown; params?: { requestId?: unknown } };
    if (sent.method === 'notifications/cancelled' && isRequestId(sent.params?.requestId) && this.awaitingClient.delete(idKey(sent.params.requestId))) this.updateFlow();
    if (typeof (message as { method?: unknown }).method === 'string' && isRequestId(answered.id)) {
      this.awaitingClient.add(idKey(answered.id));
      this.updateFlow();
    }
    try {
      // The JSON and its newline apart: `${json}\n` made a third copy of a large answer (the joined string, flattened).
      const json = answer === undefined ? JSON.stringify(out) : answerJson(out, answer);
      if (answer !== undefined) this.options.onAnswering?.(answer);
      await this.write(json, '\n', answer === undefined ? undefined : () => this.options.onAnswered?.(answer));
    } finally {
      if (answer !== undefined) {
        this.inFlight.delete(idKey(answer));
        this.cancelled.delete(idKey(answer));
        this.updateFlow();
        if (this.inputEnded && this.inFlight.size === 0) this.end('stdin closed');
      }
    }
  }

  /** A request's handler has ended, answered or not: a cancelled one (never answered) frees its place now. */
  settled(id: string | number): void {
    const key = idKey(id);
    if (!this.cancelled.delete(key) || !this.inFlight.delete(key)) return;
    this.updateFlow();
    if (this.inputEnded && this.inFlight.size === 0) this.end('stdin closed');
  }

  /** While stdout is full, a promise of when it takes more; null while it takes what it is given. */
  whenWritable(): Promise<void> | null {
    return this.drained;
  }

  /** Pauses stdin while too many requests wait or stdout is full; resumes when neither holds. */
  private updateFlow(): void {
    if (this.closed) return;
    const hold = (this.inFlight.size >= MAX_REQUESTS_IN_FLIGHT && this.awaitingClient.size === 0) || this.drained !== null;
    if (hold && !this.paused) {
      this.paused = true;
      this.input.pause();
    } else if (!hold && this.paused) {
      this.paused = false;
      // What was read before the pause first, then stdin again (unless that refilled the hold).
      const backlog = this.backlog;
      this.backlog = null;
      if (backlog) this.onData(backlog);
      if (!this.paused && !this.closed) {
        this.input.resume();
        if (this.inputEnded) this.finishInput();
      }
    }
  }

  async close(): Promise<void> {
    this.end('closed by the server');
  }

  private readonly onData = (chunk: Buffer): void => {
    let start = 0;
    for (;;) {
      // Held (see updateFlow): the rest of this chunk waits with stdin paused. A chunk of
      // 64 KiB holds hundreds of small requests, so pausing between chunks bounds nothing.
      if (this.paused) {
        this.backlog = chunk.subarray(start);
        return;
      }
      const newline = chunk.indexOf(0x0a, start);
      if (newline === -1) {
        this.accumulate(chunk.subarray(start));
        return;
      }
      this.accumulate(chunk.subarray(start, newline));
      this.lineEnded();
      start = newline + 1;
    }
  };

  private accumulate(part: Buffer): void {
    if (part.length === 0) return;
    if (this.oversizeHead !== null) return; // skipping: only the head was kept
    if (this.pendingBytes + part.length > this.maxLineBytes) {
      this.oversizeHead = Buffer.concat([...this.pending, part]).subarray(0, HEAD_BYTES);
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    this.pending.push(part);
    this.pendingBytes += part.length;
  }

  private lineEnded(): void {
    if (this.oversizeHead !== null) {
      const id = leadingRequestId(this.oversizeHead.toString('utf8'));
      this.oversizeHead = null;
      this.reply(errorResponse(id, ErrorCode.InvalidRequest, `Invalid Request: message over the ${this.maxLineBytes}-byte line limit`));
      return;
    }
    const line = Buffer.concat(this.pending, this.pendingBytes).toString('utf8').trim();
    this.pending = [];
    this.pendingBytes = 0;
    const read = readLine(line);
    if (read === undefined) return;
    if (!('message' in read)) {
      if (read.reply !== null) this.reply(read.reply);
      return;
    }
    const message = read.message;
    const step = lifecycleStep(this.era, message);
    this.era = step.era;
    if (step.refuse) return this.reply(step.refuse);
    if (typeof message.method !== 'string' && isRequestId(message.id) && this.awaitingClient.delete(idKey(message.id))) this.updateFlow();
    // A request the client cancelled is never answered (the SDK sends nothing, as the spec asks): its place is
    // freed once its handler ends (settled). Held for good, 15 cancelled requests left one place of the 16, and
    // every request then waited for the one before it; freed at the cancel, request and cancel pairs ran any
    // number of handlers at once (the handlers run on: only their answers are dropped).
    const cancelled = message.method === 'notifications/cancelled' ? (message.params as { requestId?: unknown } | undefined)?.requestId : undefined;
    if (isRequestId(cancelled) && this.inFlight.has(idKey(cancelled))) this.cancelled.add(idKey(cancelled));
    const refused = this.options.onInbound?.(message, this.era);
    if (refused) return this.reply(refused);
    // A listen stream stays open for good: it is no request waiting for its answer.
    if (typeof message.method === 'string' && isRequestId(message.id) && message.method !== 'subscriptions/listen') {
      this.inFlight.add(idKey(message.id));
      this.updateFlow();
    }
    this.onmessage?.(message as JSONRPCMessage);
  }

  private reply(response: ErrorResponse): void {
    if (this.closed) return;
    void this.write(`${JSON.stringify(response)}\n`).catch((error: unknown) => this.onerror?.(error as Error));
  }

  /**
   * Writes in order; under back-pressure every write waits on the one
   * `drain`. `written` is called once the last part has been handed to the
   * OS, or has failed (the output closed).
   */
  private async write(line: string, end = '', written?: () => void): Promise<void> {
    while (this.drained) await this.drained;
    // Each part written as it is (a stream destroyed meanwhile calls `written` with its error).
    const room = end === '' ? this.output.write(line, written) : [this.output.write(line), this.output.write(end, written)].every(Boolean);
    if (!room) {
      this.drained = new Promise<void>((resolve) => {
        const done = () => {
          this.output.off('drain', done);
          this.output.off('close', done);
          this.drained = null;
          this.updateFlow();
          resolve();
        };
        this.output.on('drain', done);
        this.output.on('close', done);
      });
      this.updateFlow();
    }
  }

  /**
   * stdin ended: its last line counts even without a newline, and what is in
   * flight is answered (END_GRACE_MS at most) before the connection ends.
   */
  private readonly onInputEnd = (): void => {
    if (this.closed || this.inputEnded) return;
    this.inputEnded = true;
    // Paused with a backlog: it is read first, when the transport resumes (updateFlow). Paused because stdout
    // does not drain, it may never resume (a client that closed stdin and reads nothing): the grace runs anyway.
    if (this.paused) this.startEndTimer();
    else this.finishInput();
  };

  private finishInput(): void {
    if (this.pendingBytes > 0 || this.oversizeHead !== null) this.lineEnded();
    if (this.inFlight.size === 0) return this.end('stdin closed');
    this.startEndTimer();
  }

  private startEndTimer(): void {
    this.endTimer ??= setTimeout(() => this.end('stdin closed'), this.options.endGraceMs ?? END_GRACE_MS);
  }

  private readonly onInputError = (error: Error): void => {
    this.onerror?.(error);
    this.end(`stdin failed: ${error.message}`);
  };

  private readonly onOutputError = (error: Error): void => {
    this.onerror?.(error);
    this.end(`stdout failed: ${error.message}`);
  };

  private end(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.endTimer);
    this.input.off('data', this.onData);
    this.input.off('end', this.onInputEnd);
    this.input.off('close', this.onInputEnd);
    this.input.off('error', this.onInputError);
    this.output.off('error', this.onOutputError);
    this.pending = [];
    this.oversizeHead = null;
    this.onclose?.();
    this.options.onEnd?.(reason);
  }
}

function isRequestId(id: unknown): id is string | number {
  return typeof id === 'string' || typeof id === 'number';
}

function idKey(id: string | number): string {
  return `${typeof id}:${String(id)}`;
}

/**
 * An answer as JSON, or, when it is longer than V8's longest string (about
 * 512 MiB: JSON.stringify throws a RangeError), an internal error for its id:
 * the send failed where nothing reported it, and the client waited for ever
 * (a red-team search answer of 100 hits of a megabyte each, since bounded).
 */
function answerJson(message: unknown, id: string | number): string {
  try {
    return JSON.stringify(message);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: `the answer is too large to send (${error.message})` } });
  }
}
