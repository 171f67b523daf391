// What a 2025-era session's SSE streams sent lately, so that a client that
// lost its connection resumes with `Last-Event-ID` instead of losing what was
// sent meanwhile (the 2025-11-25 transport: a server SHOULD send a priming
// event with an id, and MAY replay). Bounded per session.
import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server';

/** Events a session keeps for replay, newest kept: a client away longer than this many events starts over. */
export const MAX_REPLAY_EVENTS = 100;
/** How long a client that lost its stream waits before it reconnects (the SSE `retry:` field). */
export const SSE_RETRY_MS = 3000;

interface Stored {
  id: string;
  streamId: string;
  /** Null for a priming event: it marks a place in the stream and carries nothing. */
  message: JSONRPCMessage | null;
}

export class BoundedEventStore implements EventStore {
  private readonly events: Stored[] = [];
  private next = 0;

  constructor(private readonly max = MAX_REPLAY_EVENTS) {}

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = String(++this.next);
    const carries = typeof message === 'object' && message !== null && 'jsonrpc' in message;
    this.events.push({ id, streamId, message: carries ? message : null });
    if (this.events.length > this.max) this.events.splice(0, this.events.length - this.max);
    return id;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.events.find((e) => e.id === eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const at = this.events.findIndex((e) => e.id === lastEventId);
    if (at === -1) throw new Error(`event ${lastEventId} is no longer kept (at most ${this.max} per session): start a new stream`);
    const { streamId } = this.events[at]!;
    for (const event of this.events.slice(at + 1)) {
      if (event.streamId === streamId && event.message !== null) await send(event.id, event.message);
    }
    return streamId;
  }

  get size(): number {
    return this.events.length;
  }
}
