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
 * Characters of messages a session keeps for replay (their JSON, estimated:
 * MAX_REPLAY_EVENTS is the other bound), oldest dropped first. With the
 * session cap (1,000) the replay buffers of a server hold at most ~128 MB.
 */
export const MAX_REPLAY_CHARS = 128 * 1024;
/**
 * A message larger than this (a file's content, a long page) is not kept:
 * a client that missed it is told to start over (the resumption fails), and
 * asks again.
 */
export const MAX_REPLAY_MESSAGE_CHARS = 32 * 1024;
/** How long a client that lost its stream waits before it reconnects (the SSE `retry:` field). */
export const SSE_RETRY_MS = 3000;

interface Stored {
  id: string;
  streamId: string;
  /** Null for a priming event: it marks a place in the stream and carries nothing. */
  message: JSONRPCMessage | null;
  /** Its estimated size, counted against MAX_REPLAY_CHARS. */
  chars: number;
  /** A message too large to keep: sent, not replayable. */
  tooLarge: boolean;
}

export class BoundedEventStore implements EventStore {
  private readonly events: Stored[] = [];
  private chars = 0;
  private next = 0;

  constructor(
    private readonly max = MAX_REPLAY_EVENTS,
    private readonly maxChars = MAX_REPLAY_CHARS,
    private readonly maxMessageChars = MAX_REPLAY_MESSAGE_CHARS,
  ) {}

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = String(++this.next);
    const carries = typeof message === 'object' && message !== null && 'jsonrpc' in message;
    const size = carries ? estimateChars(message, this.maxMessageChars) : 0;
    const tooLarge = size > this.maxMessageChars;
    const chars = tooLarge ? 0 : size;
    this.events.push({ id, streamId, message: carries && !tooLarge ? message : null, chars, tooLarge });
    this.chars += chars;
    let drop = 0;
    while (this.events.length - drop > this.max || this.chars > this.maxChars) this.chars -= this.events[drop++]!.chars;
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
      throw new Error(`event ${lost.id} was too large to keep for replay (over ${this.maxMessageChars} characters): start a new stream and ask again`);
    }
    for (const event of missed) if (event.message !== null) await send(event.id, event.message);
    return streamId;
  }

  get size(): number {
    return this.events.length;
  }

  /** Characters kept (estimated), for tests. */
  get keptChars(): number {
    return this.chars;
  }
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
