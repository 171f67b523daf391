import { isInitializeRequest, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import { randomUUID } from 'node:crypto';
import type { App, ClientSession } from '../app.ts';
import { every, realClock, type Clock } from '../clock.ts';
import { BoundedEventStore, SSE_RETRY_MS } from './event-store.ts';
import { MAX_UNREAD_STREAM_BYTES, whenAnswered } from './streams.ts';
import { toLegacyResponse } from '../protocol/sdk/legacy-not-found-http.ts';
import { openResumedStream, primeGetStream } from '../protocol/sdk/get-stream-priming.ts';

/** What the 2025-era sessions may hold of the process. */
export interface SessionLimits {
  /** Sessions at once; a new one past this evicts the longest-idle session, or is refused (503) when none is idle. */
  maxSessions: number;
  /** A session with no request in flight and no open stream for this long is closed (clients rarely send DELETE)... */
  idleMs: number;
  /** ...or for this long once its GET stream has ended (its client most likely went; a live one reconnects sooner). */
  goneMs: number;
  /** The time the sweeps go by: the real clock, or a test's own (test/test-clock.ts). */
  clock?: Clock;
}

/** How often idle and gone sessions are looked for: a session is closed at most this long after its time is up. */
export function sweepEveryMs(limits: SessionLimits): number {
  return Math.min(limits.idleMs, limits.goneMs, 30_000);
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { maxSessions: 1_000, idleMs: 10 * 60_000, goneMs: 60_000 };

interface Entry {
  readonly transport: WebStandardStreamableHTTPServerTransport;
  readonly events: BoundedEventStore;
  readonly session: ClientSession;
  /** Requests being answered and streams open (the GET notification stream, SSE answers). */
  active: number;
  lastSeen: number;
  /** Its GET stream ended and no other has opened since. */
  streamEnded: boolean;
  closed: boolean;
}

/**
 * 2025-era clients over HTTP, with sessions: an `initialize` opens one (its
 * `Mcp-Session-Id` comes back in the answer), later requests carry the id,
 * and the session's GET stream carries what it subscribed to
 * (`notifications/resources/updated`) and `list_changed`, as stdio does. A
 * session is one App client (its own Connection and subscriptions) over the
 * shared services. The SDK's stateless legacy leg has no stream to notify
 * on, so it only answers what has no session: a request without the header
 * that is not an `initialize` (`handle` returns null for those).
 */
export class LegacySessions {
  private readonly sessions = new Map<string, Entry>();
  private readonly clock: Clock;
  private readonly sweeper: { stop(): void };
  private closing = false;
  /** New sessions refused (503) because every session was busy, since start (the metrics). */
  refusals = 0;

  constructor(
    private readonly app: App,
    private readonly limits: SessionLimits,
    private readonly report: (error: Error) => void,
    /**
     * Each session id starts with this (`--replica-id` and a dot): a load
     * balancer sends a session's requests to the replica that made it by
     * this prefix (deploy/nginx/folder-mcp.conf). The rest is a random UUID.
     */
    private readonly idPrefix = '',
  ) {
    this.clock = limits.clock ?? realClock;
    this.sweeper = every(this.clock, sweepEveryMs(limits), () => this.sweep());
  }

  /** `id`, when it names a session open now (a client the server knows); undefined otherwise. */
  known(id: string | string[] | undefined): string | undefined {
    return typeof id === 'string' && this.sessions.has(id) ? id : undefined;
  }

  get size(): number {
    return this.sessions.size;
  }

  /** Sessions with a request in flight or a stream open: those a new session never evicts (a gauge for tests). */
  get busy(): number {
    let n = 0;
    for (const entry of this.sessions.values()) if (entry.active > 0) n++;
    return n;
  }

  /** Answers a 2025-era request that belongs to a session or opens one; null when it does neither. */
  async handle(request: Request, body: unknown): Promise<Response | null> {
    const id = request.headers.get('mcp-session-id');
    if (id !== null) {
      const entry = this.sessions.get(id);
      // The 2025 transport spec: a session the server no longer knows is 404, and the client starts a new one.
      if (!entry) return jsonError(404, -32001, 'Session not found: initialize a new session');
      return this.serve(entry, request, body);
    }
    if (request.method !== 'POST' || !isInitializeRequest(body)) return null;
    if (this.closing) return jsonError(503, -32000, 'Service Unavailable: shutting down');
    if (this.sessions.size >= this.limits.maxSessions && !this.evictIdlest()) {
      this.refusals++;
      return jsonError(503, -32000, `Service Unavailable: ${this.limits.maxSessions} sessions are open`, { 'retry-after': '5' });
    }
    return this.open(request, body);
  }

  private async open(request: Request, body: unknown): Promise<Response> {
    const session = this.app.openSession();
    const events = new BoundedEventStore();
    const entry: Entry = {
      session,
      events,
      // With an event store the SDK primes each SSE answer with an event id and `retry:`, and replays
      // what a stream missed when the client comes back with Last-Event-ID.
      transport: new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => `${this.idPrefix}${randomUUID()}`,
        onsessioninitialized: (id) => void this.sessions.set(id, entry),
        eventStore: events,
        retryInterval: SSE_RETRY_MS,
      }),
      active: 0,
      lastSeen: this.clock.now(),
      streamEnded: false,
      closed: false,
    };
    // A DELETE from the client, our close(), or the transport failing: the session's state goes with it.
    entry.transport.onclose = () => this.drop(entry);
    entry.transport.onerror = this.report;
    await session.createServer().connect(entry.transport);
    const response = await this.serve(entry, request, body);
    // A refused initialize (a bad request) never became a session.
    if (entry.transport.sessionId === undefined || !this.sessions.has(entry.transport.sessionId)) await this.close(entry);
    return response;
  }

  private async serve(entry: Entry, request: Request, body: unknown): Promise<Response> {
    for (const message of Array.isArray(body) ? body : [body]) {
      if (typeof message === 'object' && message !== null) entry.session.onInbound(message as Record<string, unknown>, 'legacy');
    }
    entry.active++;
    entry.lastSeen = this.clock.now();
    const notificationStream = request.method === 'GET';
    if (notificationStream) entry.streamEnded = false;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      entry.active--;
      entry.lastSeen = this.clock.now();
      if (notificationStream) entry.streamEnded = true;
    };
    let response: Response;
    try {
      response = await toLegacyResponse(await entry.transport.handleRequest(request, { parsedBody: body }));
      // The SDK sends nothing on a GET stream until its first keep-alive (src/protocol/sdk/get-stream-priming.ts).
      if (notificationStream && request.headers.get('last-event-id') === null) {
        response = await primeGetStream(response, (message) => entry.events.storeEvent(GET_STREAM_ID, message), SSE_RETRY_MS);
      } else if (notificationStream) {
        response = openResumedStream(response);
      }
    } catch (error) {
      release();
      throw error;
    }
    return whenAnswered(request, response, release, notificationStream ? MAX_UNREAD_STREAM_BYTES : undefined);
  }

  /** Closes the session idle longest; false when every session is busy. */
  private evictIdlest(): boolean {
    let idlest: Entry | undefined;
    for (const entry of this.sessions.values()) {
      if (entry.active === 0 && (idlest === undefined || entry.lastSeen < idlest.lastSeen)) idlest = entry;
    }
    if (!idlest) return false;
    void this.close(idlest);
    return true;
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const entry of this.sessions.values()) {
      const limit = entry.streamEnded ? this.limits.goneMs : this.limits.idleMs;
      if (entry.active === 0 && entry.lastSeen < now - limit) void this.close(entry);
    }
  }

  private drop(entry: Entry): void {
    if (entry.closed) return;
    entry.closed = true;
    if (entry.transport.sessionId !== undefined && this.sessions.get(entry.transport.sessionId) === entry) {
      this.sessions.delete(entry.transport.sessionId);
    }
    entry.session.close();
  }

  private async close(entry: Entry): Promise<void> {
    this.drop(entry);
    await entry.transport.close().catch(this.report);
  }

  /** Ends every session: their GET streams end, their subscriptions go. */
  async closeAll(): Promise<void> {
    this.closing = true;
    this.sweeper.stop();
    await Promise.all([...this.sessions.values()].map((entry) => this.close(entry)));
  }
}

function jsonError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** The SDK's id of a session's GET stream, under which its events are stored. */
const GET_STREAM_ID = '_GET_stream';

