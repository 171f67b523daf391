// The Node HTTP server under the MCP endpoint: sockets, not requests. It owns
// the timeouts, the connection cap, the connections that have not sent a
// request head yet, the bind, and the drain on shutdown; what a request means
// is the endpoint's (./endpoint.ts), which it calls through `ServedEndpoint`.
// The split follows honojs/node-server's server.ts (the Node server) and
// listener.ts (request -> handler).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import type { HttpListen } from '../config.ts';
import type { Metrics } from './metrics.ts';

/** What one client may hold of the server's sockets, in number and time. */
export interface ServerLimits {
  /** A client must send its headers within this... */
  headersTimeoutMs: number;
  /** ...and its whole request (headers and body) within this (slow-body clients get 408). */
  requestTimeoutMs: number;
  /** An idle keep-alive connection between requests is closed after this. */
  keepAliveTimeoutMs: number;
  /** A connection with no bytes either way for this long is cut (listen streams send a keep-alive every 15 s). */
  idleTimeoutMs: number;
  /** On shutdown, requests in flight get this long to finish before they are cut. */
  drainMs: number;
  /**
   * Connections at once (each a descriptor); past it a new one is answered
   * 503 with Retry-After once its request is in, and past it by
   * maxPendingConnections more it is closed at once.
   */
  maxConnections: number;
  /**
   * Connections waiting for a request head at once: new ones, keep-alive ones
   * that have sent part of their next head (idle ones are not counted), and
   * answered ones whose request body is still coming (a refusal answered
   * before the body). Past it the oldest that has sent
   * part of a head (or of an answered request's body) is told 503
   * (Retry-After) and closed at once; one that has sent nothing yet (Node
   * reads a burst after accepting it) only after PENDING_GRACE_MS. Half-sent
   * requests need no token, so without this a flood of them (21,000 here)
   * held every descriptor and an authenticated client was reset; with it
   * they only evict each other.
   */
  maxPendingConnections: number;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 120_000,
  drainMs: 5_000,
  maxConnections: connectionCap(),
  maxPendingConnections: 128,
};

/**
 * How often Node checks the header and request timeouts: by default every
 * 30 s, so a slow-header client lived ~30 s and a slow body ~60 s instead of
 * the 10 s and 30 s set.
 */
const TIMEOUT_CHECK_MS = 1_000;
/**
 * How long a connection that has sent nothing may stay past
 * maxPendingConnections. A burst of 1,000 clients on a loaded 2-core machine
 * was read more slowly than 200 ms allowed (820 of 1,000 would have been
 * evicted); a flood of connections that send nothing holds its descriptors
 * this long, within maxConnections + maxPendingConnections (and the evicted
 * ones theirs for EVICTED_GRACE_MS, within maxPendingConnections more).
 */
const PENDING_GRACE_MS = 2_000;
/** A connection evicted for want of a request head is closed this long after its 503, whatever it sends. */
const EVICTED_GRACE_MS = 1_000;
/** The 503 an evicted connection gets, written raw: it has sent no request head that Node could answer. */
const SERVICE_UNAVAILABLE_RAW =
  'HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 94\r\n\r\n' +
  '{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Service Unavailable: try again"}}';
/**
 * An answered request whose body is still coming (Node reads and drops it) is
 * closed this long after its answer went out. A refusal is answered before the
 * body is read, and a client that had only to trickle the body to a refusal
 * (no token needed) held its connection until the 30 s request timeout: 1,000
 * of them, a byte a second each, had every other client told 503 (a red-team
 * pass). Honest bodies come at the speed of the network.
 */
const ANSWERED_BODY_MS = 5_000;
/** On shutdown, connections stay open this long so that requests already on their way are read and answered (503). */
const DRAIN_GRACE_MS = 500;

/**
 * 1,000, or half the process's descriptor limit when that is lower (Linux:
 * /proc/self/limits), so the index, watchers and conversions keep theirs.
 */
function connectionCap(): number {
  try {
    const soft = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    if (soft !== undefined) return Math.max(16, Math.min(1_000, Math.floor(Number(soft) / 2)));
  } catch {
    // no /proc: the default
  }
  return 1_000;
}

/** The address could not be bound (in use, not this machine's, not permitted): nothing was opened. */
export class HttpListenError extends Error {
  override name = 'HttpListenError';
  readonly code: string | undefined;
  constructor(cause: NodeJS.ErrnoException) {
    super(cause.message, { cause });
    this.code = cause.code;
  }
}

/** A connection waiting for a request head: since when, and the bytes it had sent then (0: a new one; ANSWERED). */
interface Waiting {
  since: number;
  sent: number;
}
/** Waiting.sent of a connection answered before its request's body was all in: whatever it sends is that body's rest. */
const ANSWERED = -1;

/** What the Node server serves, seen from the sockets (./endpoint.ts is the one). */
export interface ServedEndpoint {
  /**
   * Answers a request that is answered whatever the server's state (health
   * probes, metrics): true when it did. Sees every request first (it names the
   * replica on each response), but none that was evicted.
   */
  answerAlways(req: IncomingMessage, res: ServerResponse): boolean;
  /** Answers any other request, once the server has admitted it (not draining, within the connection cap). */
  answer(req: IncomingMessage, res: ServerResponse): void;
  /** Requests being answered that shutdown waits for (streams only end when someone ends them: not counted). */
  readonly busy: number;
  /** Shutdown has begun: readiness says so from now on. */
  drain(): void;
  /** Shutdown, once the server accepts no more: ends what only ends when told (streams), cuts what is in flight. */
  close(): Promise<void>;
}

/** The Node server of one endpoint: bound once (`listen`), closed once (`close`). */
export class NodeServer {
  private readonly server: Server;
  private closing = false;
  /** Open connections (those past maxConnections are answered 503). */
  private readonly open = new Set<Socket>();
  /** Connections to answer 503 (Retry-After) when their request arrives: over maxConnections. */
  private readonly overCap = new WeakSet<Socket>();
  /** Connections waiting for a request head (ServerLimits.maxPendingConnections), oldest first (a Map keeps insertion order). */
  private readonly pending = new Map<Socket, Waiting>();
  /**
   * Keep-alive connections between requests that have sent nothing of the
   * next, and the bytes they had sent: not counted among the pending (a
   * client's pool of idle connections would crowd out a new client whose
   * head came in two pieces), until they send part of a head (countStarted).
   */
  private readonly idle = new Map<Socket, Waiting>();
  /** Of each connection, its requests whose response has not ended (Node queues pipelined ones behind the first). */
  private readonly answering = new Map<Socket, number>();
  private sweepTimer: NodeJS.Timeout | undefined;
  /** Connections told 503 by evict: a request that completes on one later is not served. */
  private readonly evicted = new WeakSet<Socket>();
  /**
   * Evicted connections not closed yet (EVICTED_GRACE_MS lets their 503 out),
   * oldest first. They no longer count as open (issue 44: counted for their
   * grace, a flood of half-sent requests kept the server "full" and 162 of 172
   * legitimate requests got 503); past maxPendingConnections of them the
   * oldest is closed at once, so their descriptors stay bounded too.
   */
  private readonly lingering = new Set<Socket>();

  constructor(
    private readonly endpoint: ServedEndpoint,
    private readonly limits: ServerLimits,
    private readonly metrics?: Metrics,
  ) {
    // node:http as Node's own module, not an ES import: that costs every start, --http or not (scripts/build.mjs, ON_DEMAND_BUILTINS).
    this.server = process.getBuiltinModule('node:http').createServer(
      {
        headersTimeout: limits.headersTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        keepAliveTimeout: limits.keepAliveTimeoutMs,
        connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, limits.headersTimeoutMs),
        maxHeaderSize: 16 * 1024,
      },
      (req, res) => this.admit(req, res),
    );
    this.server.setTimeout(limits.idleTimeoutMs);
    // Past maxConnections a connection is answered 503 once its request is in (admit); past this too, Node
    // closes it at once (each is a descriptor: connectionCap keeps half of them for files and the index).
    this.server.maxConnections = limits.maxConnections + 2 * limits.maxPendingConnections;
    this.server.on('connection', (socket: Socket) => this.accept(socket));
    this.server.on('request', (req: IncomingMessage, res: ServerResponse) => this.started(req, res));
    // `Expect: 100-continue`: Node would send 100 before any check, and a client with no token then sent its body.
    // The request is checked first; only one that is being served is told to go on.
    this.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      // As Node would have it without this listener ('request': admitted, counted, the metrics told), then 100.
      this.server.emit('request', req, res);
      if (!res.headersSent && !res.writableEnded && !this.evicted.has(req.socket)) res.writeContinue();
    });
    metrics?.followServer(this.server);
  }

  /**
   * Binds `at`, then runs `bound` in the same turn, before any request is
   * read; if `bound` throws, the server is closed and the throw is passed on.
   * Resolves with the port bound.
   */
  listen(at: HttpListen, bound: () => void): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const failed = (error: NodeJS.ErrnoException) => reject(new HttpListenError(error));
      this.server.once('error', failed);
      this.server.listen(at.port, at.host, () => {
        this.server.off('error', failed);
        try {
          bound();
        } catch (error) {
          this.server.close();
          return reject(error as Error);
        }
        resolve((this.server.address() as AddressInfo).port);
      });
    });
  }

  /** Stops accepting, lets in-flight requests finish (bounded), has the endpoint end its streams, closes every connection. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.endpoint.drain();
    // Drain: a request already sent on an open connection but not yet read would be reset if its
    // connection were closed as idle now (12 of 25 sent 150 ms before SIGTERM were), and
    // server.close() closes idle connections (Node >= 19). So for a moment every request that
    // arrives is answered 503 with `Connection: close`, and those in flight finish; then close.
    const deadline = Date.now() + this.limits.drainMs;
    const graceEnd = Date.now() + Math.min(DRAIN_GRACE_MS, this.limits.drainMs);
    // A connection with no request read yet (`pending`) may hold one the loop has not got to: on a loaded
    // machine that is more than the grace. It is waited for too, up to the drain's deadline.
    while (((this.endpoint.busy > 0 || this.requestsComing()) && Date.now() < deadline) || Date.now() < graceEnd) await delay(20);
    const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    await this.endpoint.close();
    this.server.closeIdleConnections();
    await Promise.race([stopped, delay(1_000)]);
    this.server.closeAllConnections();
    await stopped;
  }

  /** A request in: answered by the endpoint, or refused here (draining, over the connection cap). */
  private admit(req: IncomingMessage, res: ServerResponse): void {
    if (this.evicted.has(req.socket)) return; // already told 503; closed in a moment
    // /healthz, /readyz and /metrics are answered while draining (readyz then says 503) or over the connection cap.
    if (this.endpoint.answerAlways(req, res)) return;
    if (this.closing) {
      this.metrics?.refused('draining');
      return refuse(res, 503, 'Service Unavailable: shutting down', { connection: 'close' });
    }
    // Over the cap when it came; room since (connections closed or evicted), and it is served.
    if (this.overCap.has(req.socket) && this.open.size <= this.limits.maxConnections) this.overCap.delete(req.socket);
    if (this.overCap.has(req.socket)) {
      this.metrics?.refused('connection_cap');
      return refuse(res, 503, `Service Unavailable: ${this.limits.maxConnections} connections are open`, { connection: 'close', 'retry-after': '1' });
    }
    this.endpoint.answer(req, res);
  }

  private accept(socket: Socket): void {
    this.open.add(socket);
    if (this.open.size > this.limits.maxConnections) this.overCap.add(socket);
    socket.once('close', () => {
      this.open.delete(socket);
      this.pending.delete(socket);
      this.idle.delete(socket);
      this.answering.delete(socket);
    });
    this.wait(socket, 0);
  }

  /** `socket` waits for a request head (again), from `sent`, the bytes it had sent by then. */
  private wait(socket: Socket, sent: number): void {
    // Idle between requests: not counted until it sends part of a head (countStarted); Node closes it after keepAliveTimeout.
    if (sent > 0) this.idle.set(socket, { since: performance.now(), sent });
    else this.pending.set(socket, { since: performance.now(), sent });
    if (this.pending.size + this.idle.size > this.limits.maxPendingConnections) this.countStarted();
    if (this.pending.size > this.limits.maxPendingConnections) this.evictHalfSent();
  }

  /** The idle keep-alive connections that have sent part of their next head since: pending from now. */
  private countStarted(): void {
    for (const [socket, waiting] of this.idle) {
      if (socket.bytesRead === waiting.sent) continue;
      this.idle.delete(socket);
      this.pending.set(socket, waiting);
    }
  }

  /**
   * A request head is in: the connection is being answered. Once every
   * request on it is answered it waits for a head again (wait): idle, or
   * pending at once when its body is still coming (the rest of a refused
   * request's body is evicted as a half-sent head is). A body still coming
   * ANSWERED_BODY_MS after its answer ends the connection.
   */
  private started(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    this.pending.delete(socket);
    this.idle.delete(socket);
    this.answering.set(socket, (this.answering.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const left = (this.answering.get(socket) ?? 1) - 1;
      if (left > 0) return void this.answering.set(socket, left);
      this.answering.delete(socket);
      if (socket.destroyed || this.closing || this.evicted.has(socket)) return;
      this.wait(socket, req.complete ? socket.bytesRead : ANSWERED);
      if (req.complete) return;
      setTimeout(() => req.complete || socket.destroy(), ANSWERED_BODY_MS).unref();
      // Its body all in after all: an idle keep-alive connection, counted no more (wait).
      req.once('end', () => {
        if (this.pending.get(socket)?.sent !== ANSWERED) return;
        this.pending.delete(socket);
        this.wait(socket, socket.bytesRead);
      });
    });
  }

  /** A request may be on its way that no one has read yet: a new connection, or one that has sent part of its next head. */
  private requestsComing(): boolean {
    // Pending: new, or promoted from idle by part of a head (countStarted); not a refused body's rest.
    for (const { sent } of this.pending.values()) if (sent !== ANSWERED) return true;
    for (const [socket, { sent }] of this.idle) if (socket.bytesRead > sent) return true;
    return false;
  }

  /**
   * Tells `socket` 503 (Retry-After, Connection: close), and closes it a
   * moment later whatever it does. One answered with its body still coming
   * is closed at once: it has its answer, and a 503 would answer no request.
   */
  private evict(socket: Socket): void {
    const waiting = this.pending.get(socket);
    this.metrics?.refused('pending_cap');
    this.pending.delete(socket);
    this.open.delete(socket);
    this.evicted.add(socket);
    if (waiting?.sent === ANSWERED) return void socket.destroy();
    this.lingering.add(socket);
    socket.once('close', () => this.lingering.delete(socket));
    socket.end(SERVICE_UNAVAILABLE_RAW);
    setTimeout(() => socket.destroy(), EVICTED_GRACE_MS).unref();
    for (const oldest of this.lingering) {
      if (this.lingering.size <= this.limits.maxPendingConnections) break;
      this.lingering.delete(oldest);
      oldest.destroy();
    }
  }

  /**
   * Past maxPendingConnections, the oldest connection that has sent part of
   * a request head and not the rest (what a flood of half-sent requests
   * does) is evicted at once. One that has sent nothing Node has read yet is
   * not: a burst of clients is accepted before any of them is read, and
   * evicting those at accept time reset clients whose whole request was
   * already in the socket's buffer (451 and 499 of 900, issue 34). They are
   * evicted past PENDING_GRACE_MS (sweepPending).
   */
  private evictHalfSent(): void {
    for (const [socket, waiting] of this.pending) {
      if (socket.bytesRead > waiting.sent) return this.evict(socket);
    }
    this.sweepTimer ??= setTimeout(() => this.sweepPending(), PENDING_GRACE_MS).unref();
  }

  /** The oldest connections past maxPendingConnections that have sent no request head after PENDING_GRACE_MS. */
  private sweepPending(): void {
    this.sweepTimer = undefined;
    const now = performance.now();
    for (const [oldest, { since }] of this.pending) {
      if (this.pending.size <= this.limits.maxPendingConnections) return;
      if (now - since < PENDING_GRACE_MS) {
        this.sweepTimer = setTimeout(() => this.sweepPending(), PENDING_GRACE_MS - (now - since)).unref();
        return;
      }
      this.evict(oldest);
    }
  }
}

/** A JSON-RPC error with no id (the request was not read, or not as JSON-RPC) as the whole answer. */
export function rpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }));
}

/** A refusal before the request is read: -32000 with the HTTP status that says why. */
export function refuse(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  rpcError(res, status, -32000, message, headers);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
