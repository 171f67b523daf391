// What a 2025-era session's SSE streams sent lately, so that a client that
// lost its connection resumes with `Last-Event-ID` instead of losing what was
// sent meanwhile (the 2025-11-25 transport: a server SHOULD send a priming
// event with an id, and MAY replay). Bounded per session, in events and in
// bytes: the answers a session's streams carry are kept too, and a session
// that read 40 files of 4 MiB held 383 MiB with a bound in events only.
import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server';

/** Events a session keeps for replay, newest kept: a client away longer than this many events starts over. */
export const MAX_REPLAY_EVENTS = 100;
/**
 * Bytes a session keeps for replay, oldest dropped first: each message is
 * kept as its JSON's UTF-8 bytes (off the JavaScript heap), and each event
 * counts EVENT_OVERHEAD_BYTES more for what holds it. Counted characters of
 * the message objects before: those were a bound on an estimate, and a
 * session held 827 KiB (the 300 sessions of 30 reads) to 1,179 KiB
 * (100 such sessions) of resident memory against 128 Ki characters.
 */
export const MAX_REPLAY_BYTES = 128 * 1024;
/**
 * A message whose JSON is larger than this (a file's content, a long page)
 * is not kept: a client that missed it is told to start over (the
 * resumption fails), and asks again.
 */
export const MAX_REPLAY_MESSAGE_BYTES = 32 * 1024;
/** What one kept event costs besides its message's bytes (its record, ids, the Buffer's own object), counted in MAX_REPLAY_BYTES. */
export const EVENT_OVERHEAD_BYTES = 256;
/** How long a client that lost its stream waits before it reconnects (the SSE `retry:` field). */
export const SSE_RETRY_MS = 3000;

interface Stored {
  id: string;
  streamId: string;
  /** The message's JSON; null for a priming event (it marks a place in the stream and carries nothing), or one too large. */
  json: Buffer | null;
  /** What it counts against MAX_REPLAY_BYTES. */
  bytes: number;
  /** A message too large to keep: sent, not replayable. */
  tooLarge: boolean;
}

export class BoundedEventStore implements EventStore {
  private readonly events: Stored[] = [];
  private bytes = 0;
  private next = 0;

  constructor(
    private readonly max = MAX_REPLAY_EVENTS,
    private readonly maxBytes = MAX_REPLAY_BYTES,
    private readonly maxMessageBytes = MAX_REPLAY_MESSAGE_BYTES,
  ) {}

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = String(++this.next);
    const carries = typeof message === 'object' && message !== null && 'jsonrpc' in message;
    const json = carries ? jsonWithin(message, this.maxMessageBytes) : null;
    const tooLarge = carries && json === null;
    const bytes = EVENT_OVERHEAD_BYTES + (json?.length ?? 0);
    this.events.push({ id, streamId, json, bytes, tooLarge });
    this.bytes += bytes;
    let drop = 0;
    while (this.events.length - drop > this.max || this.bytes > this.maxBytes) this.bytes -= this.events[drop++]!.bytes;
    if (drop > 0) this.events.splice(0, drop);
    return id;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.events.find((e) => e.id === eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const at = this.events.findIndex((e) => e.id === lastEventId);
    if (at === -1) throw new Error(`event ${lastEventId} is no longer kept (at most ${this.max} per session): start a new stream`);
    const { streamId } = this.events[at]!;
    const missed = this.events.slice(at + 1).filter((e) => e.streamId === streamId);
    const lost = missed.find((e) => e.tooLarge);
    if (lost) {
      throw new Error(`event ${lost.id} was too large to keep for replay (over ${this.maxMessageBytes} bytes): start a new stream and ask again`);
    }
    for (const event of missed) if (event.json !== null) await send(event.id, JSON.parse(event.json.toString('utf8')) as JSONRPCMessage);
    return streamId;
  }

  get size(): number {
    return this.events.length;
  }

  /** Bytes counted against MAX_REPLAY_BYTES now, for tests. */
  get keptBytes(): number {
    return this.bytes;
  }
}

/**
 * `message`'s JSON as UTF-8 bytes, or null when they are over `limit`. The
 * estimate first (a 4 MiB read's answer is not serialised again to be
 * refused), then the exact bytes, in a Buffer of their own (a small one from
 * Node's shared pool would keep its whole 8 KiB slab alive).
 */
function jsonWithin(message: unknown, limit: number): Buffer | null {
  if (estimateChars(message, 2 * limit) > 2 * limit) return null;
  const text = JSON.stringify(message);
  const length = Buffer.byteLength(text);
  if (length > limit) return null;
  const json = Buffer.allocUnsafeSlow(length);
  json.write(text, 'utf8');
  return json;
}

/**
 * The size of `value` in characters, about as its JSON (string and key
 * lengths, 8 per other scalar; escapes not counted, so what it bounds is
 * the memory of the object, not its JSON). Stops counting past `limit`: a
 * 4 MiB read's answer or a long array costs a few steps, not a walk.
 */
export function estimateChars(value: unknown, limit: number): number {
  let chars = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && chars <= limit) {
    const item = stack.pop();
    if (typeof item === 'string') chars += item.length + 2;
    else if (Array.isArray(item)) {
      chars += 2;
      for (let i = 0; i < item.length && chars <= limit; i++) {
        chars += 1;
        stack.push(item[i]);
      }
    } else if (typeof item === 'object' && item !== null) {
      chars += 2;
      for (const key in item) {
        if (chars > limit) break;
        chars += key.length + 4;
        stack.push((item as Record<string, unknown>)[key]);
      }
    } else chars += 8;
  }
  return chars;
}
