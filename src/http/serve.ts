import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, isLegacyRequest, type McpHandlerRequestOptions } from '@modelcontextprotocol/server';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import type { App } from '../app.ts';
import type { HttpListen } from '../config.ts';
import type { Logger } from '../log.ts';
import { AnswerBlobs } from '../protocol/sdk/answer-blobs.ts';
import { Connection } from '../protocol/connection.ts';
import { MAX_REQUEST_LINE_BYTES } from '../protocol/sdk/stdio-transport.ts';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../protocol/wire.ts';
import { createServer, type ServerInfo } from '../server.ts';
import { ArrivalGate, TurnBudget } from '../turns.ts';
import { checkRequest, type GuardPolicy } from './guard.ts';
import { HealthProbes } from './health.ts';
import { toLegacyResponse } from '../protocol/sdk/legacy-not-found-http.ts';
import { HttpListeners } from './listeners.ts';
import type { Metrics } from './metrics.ts';
import { answerMetrics } from './metrics-serve.ts';
import { DEFAULT_SESSION_LIMITS, LegacySessions, type SessionLimits } from './sessions.ts';
import { whenAnswered } from './streams.ts';

export const MCP_PATH = '/mcp';
const ALLOWED_METHODS = ['GET', 'POST', 'DELETE'];
/** Messages one JSON-RPC batch may carry (2025-03-26 clients still send them). */
export const MAX_BATCH_MESSAGES = 8;

/** What one client may hold of the server, in bytes and time. */
export interface HttpLimits {
  /** Largest request body (as stdio's largest line): a longer one is answered 413 and not read. */
  maxBodyBytes: number;
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
   * Connections that have not yet sent a whole request head at once: past
   * it the oldest that has sent part of one is told 503 (Retry-After) and
   * closed at once; one that has sent nothing yet (Node reads a burst after
   * accepting it) only after PENDING_GRACE_MS. Half-sent requests need no token, so
   * without this a flood of them (21,000 here) held every descriptor and an
   * authenticated client was reset; with it they only evict each other.
   */
  maxPendingConnections: number;
}

export type HttpServeLimits = HttpLimits & SessionLimits;

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  maxBodyBytes: MAX_REQUEST_LINE_BYTES,
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
 * this long, within maxConnections + maxPendingConnections.
 */
const PENDING_GRACE_MS = 2_000;
/** A connection evicted for want of a request head is closed this long after its 503, whatever it sends. */
const EVICTED_GRACE_MS = 1_000;
/** The 503 an evicted connection gets, written raw: it has sent no request head that Node could answer. */
const SERVICE_UNAVAILABLE_RAW =
  'HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 94\r\n\r\n' +
  '{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Service Unavailable: try again"}}';
/** On shutdown, connections stay open this long so that requests already on their way are read and answered (503). */
const DRAIN_GRACE_MS = 500;
/**
 * The event loop's time per turn for work that many clients share: folding
 * listens, releasing them, and the SDK's handling of large request bodies
 * (TurnBudget). In bench attack 7 (50 listens of 1,000 URIs at once), ping
 * p99 was 253 ms with 5 ms, 77-87 with 1 ms, and no better with 0.5 ms.
 */
const SHARED_TURN_MS = 1;
/** A request body this large waits for the turn budget before the SDK handles it (a listen of 1,000 URIs is ~60 KB). */
const LARGE_BODY_BYTES = 16 * 1024;
/**
 * The event loop's time per turn for handling requests that arrived in that
 * turn (ArrivalGate); the rest wait for the shared turns. In bench attack 7,
 * 50 `server/discover` at once held one turn for 85 ms.
 */
const ARRIVAL_TURN_MS = 1;

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

const DEFAULT_LIMITS: HttpServeLimits = { ...DEFAULT_HTTP_LIMITS, ...DEFAULT_SESSION_LIMITS };

export interface HttpServeOptions {
  app: App;
  info: ServerInfo;
  listen: HttpListen;
  policy: GuardPolicy;
  log: Logger;
  limits?: Partial<HttpServeLimits>;
  /** Served at /metrics (behind the token, when one is set), and told of the refusals here. */
  metrics?: Metrics;
  /** `--replica-id`: prefixes 2025 session ids (`NAME.`) and names this replica in the `X-Folder-Mcp-Replica` header. */
  replicaId?: string;
}

/** The response header naming the replica that answered (with `--replica-id` only). */
export const REPLICA_HEADER = 'x-folder-mcp-replica';

export interface HttpEndpoint {
  /** `http://HOST:PORT/mcp`, with the port actually bound. */
  readonly url: string;
  readonly listeners: HttpListeners;
  /** 2025-era sessions open now. */
  readonly sessions: { readonly size: number; readonly busy: number };
  /** Stops accepting, lets in-flight requests finish (bounded), ends listen streams, closes every connection. */
  close(): Promise<void>;
}

/**
 * Streamable HTTP at /mcp, both eras, for any number of clients of one App:
 * one index, one watcher, one content index. Every request passes the guard
 * (Host, Origin, token) before its body is read, and a capped body before
 * any handler. 2026-07-28 requests go to the SDK's stateless handler
 * (`createMcpHandler`), which builds a cheap server instance per request over
 * the shared services; 2025-era clients get sessions (./sessions.ts), so
 * that their subscriptions and `list_changed` reach them on a GET stream.
 */
/** The address could not be bound (in use, not this machine's, not permitted): nothing was opened. */
export class HttpListenError extends Error {
  override name = 'HttpListenError';
  readonly code: string | undefined;
  constructor(cause: NodeJS.ErrnoException) {
    super(cause.message, { cause });
    this.code = cause.code;
  }
}

export async function serveHttp(options: HttpServeOptions): Promise<HttpEndpoint> {
  const { app, info, policy, log, metrics } = options;
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const report = (error: Error) => {
    // The SDK refuses a listen past its cap in band, and says so only here.
    if (error.message.includes('subscription limit reached')) metrics?.refused('listen_streams');
    log.debug(`http: ${error.message}`);
  };
  // 2026-07-28 requests, and 2025-era requests outside any session: a throw-away Connection per request (nothing is held).
  const handler = createMcpHandler(() => createServer(app.services, new Connection(), info, app.observe), { legacy: 'stateless', onerror: report });
  const turns = new TurnBudget(SHARED_TURN_MS);
  const arrivals = new ArrivalGate(ARRIVAL_TURN_MS, turns);
  // Made once the port is bound (below): the index is not opened, nor its file made, for a port that is taken.
  let listeners!: HttpListeners;
  const sessions = new LegacySessions(app, limits, report, options.replicaId === undefined ? '' : `${options.replicaId}.`);

  const endpoint = {
    async fetch(request: Request, requestOptions?: McpHandlerRequestOptions): Promise<Response> {
      const body = requestOptions?.parsedBody;
      if (await isLegacyRequest(request, body)) {
        return (await sessions.handle(request, body)) ?? statelessly(request, requestOptions, toLegacyResponse);
      }
      if (isListen(body)) return listen(body, request, requestOptions);
      return statelessly(request, requestOptions);
    },
  };

  /**
   * A request outside any session: its answers go out on its own response
   * only, so a read's large binary content is written as that response is
   * sent (src/protocol/sdk/answer-blobs.ts). Never in a 2025 session, where an
   * answer may go out on another stream (one resumed with Last-Event-ID, or
   * a duplicate id's) or be dropped (cancelled) with the request's still open.
   */
  async function statelessly(
    request: Request,
    requestOptions: McpHandlerRequestOptions | undefined,
    wrap: (response: Response) => Response | Promise<Response> = (response) => response,
  ): Promise<Response> {
    const blobs = hasRead(requestOptions?.parsedBody) ? AnswerBlobs.open(request, turns) : undefined;
    let response: Response;
    try {
      response = await wrap(await handler.fetch(request, requestOptions));
    } catch (error) {
      blobs?.release();
      throw error;
    }
    return blobs ? blobs.splice(response) : response;
  }

  /** A listen stream: what it names is tracked until its body ends, however it ends. */
  async function listen(message: Record<string, unknown>, request: Request, requestOptions?: McpHandlerRequestOptions): Promise<Response> {
    const opened = await listeners.open(message);
    // Over its bound: answered in band (200, as the SDK answers a handler's -32602), no stream.
    if ('refused' in opened) {
      metrics?.refused('listen_uris');
      return Response.json(opened.refused);
    }
    const { stream } = opened;
    const release = () => listeners.release(stream);
    let response: Response;
    try {
      // Folded in turns, listens arriving together end their folding together: the SDK's checks of each (1,000 URIs)
      // take turns too.
      await turns.slice();
      response = await handler.fetch(request, requestOptions);
    } catch (error) {
      release();
      throw error;
    }
    // Refused (a bad filter, the subscription cap): a JSON answer, no stream.
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      release();
      return response;
    }
    return whenAnswered(request, response, release);
  }

  const nodeHandler = toNodeHandler(endpoint, { onerror: report });
  /** Requests being answered. */
  const busy = new Set<ServerResponse>();
  let closing = false;
  const probes = new HealthProbes(policy, () => closing);

  const server = createHttpServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, limits.headersTimeoutMs),
      maxHeaderSize: 16 * 1024,
    },
    (req, res) => {
      if (evicted.has(req.socket)) return; // already told 503; closed in a moment
      // Which replica answered, for whoever debugs a load balancer (and for the cluster test to prove the rotation).
      if (options.replicaId !== undefined) res.setHeader(REPLICA_HEADER, options.replicaId);
      // /healthz and /readyz: no token, and answered while draining (readyz then says 503) or over the connection cap.
      if (probes.answer(req, res, pathOf(req.url))) return;
      if (metrics && answerMetrics(metrics, policy, req, res, pathOf(req.url))) return;
      if (closing) {
        metrics?.refused('draining');
        return refuse(res, 503, 'Service Unavailable: shutting down', { connection: 'close' });
      }
      if (overCap.has(req.socket)) {
        metrics?.refused('connection_cap');
        return refuse(res, 503, `Service Unavailable: ${limits.maxConnections} connections are open`, { connection: 'close', 'retry-after': '1' });
      }
      const refusal = checkRequest(policy, {
        host: req.headers.host,
        origin: req.headers.origin,
        authorization: req.headers.authorization,
      });
      if (refusal) return refuse(res, refusal.status, refusal.message, refusal.headers);
      // Streamable HTTP has three methods; anything else (TRACE, PUT, ...) is 405, not an internal error.
      if (!ALLOWED_METHODS.includes(req.method ?? '')) return refuse(res, 405, 'Method Not Allowed', { allow: ALLOWED_METHODS.join(', ') });
      if (pathOf(req.url) !== MCP_PATH) return refuse(res, 404, `Not Found: the MCP endpoint is ${MCP_PATH}`);
      serve(req, res).catch((error: unknown) => {
        // No stack and no path to the client: the log has the detail.
        log.debug(`http: ${(error as Error).message}`);
        if (!res.headersSent) refuse(res, 500, 'Internal server error');
        else res.destroy();
      });
    },
  );
  server.setTimeout(limits.idleTimeoutMs);
  // Past maxConnections a connection is answered 503 once its request is in (below); past this too, Node
  // closes it at once (each is a descriptor: connectionCap keeps half of them for files and the index).
  server.maxConnections = limits.maxConnections + limits.maxPendingConnections;
  /** Open connections (the 503 above is for those past maxConnections). */
  const open = new Set<Socket>();
  /** Connections to answer 503 (Retry-After) when their request arrives: over maxConnections. */
  const overCap = new WeakSet<Socket>();
  // Connections whose first request head is not in yet, with when they came, oldest first (a Map keeps insertion order).
  const pending = new Map<Socket, number>();
  let sweepTimer: NodeJS.Timeout | undefined;
  /** Connections told 503 by evict: a request that completes on one later is not served. */
  const evicted = new WeakSet<Socket>();
  /** Tells `socket` 503 (Retry-After, Connection: close), and closes it a moment later whatever it does. */
  const evict = (socket: Socket) => {
    metrics?.refused('pending_cap');
    pending.delete(socket);
    evicted.add(socket);
    socket.end(SERVICE_UNAVAILABLE_RAW);
    setTimeout(() => socket.destroy(), EVICTED_GRACE_MS).unref();
  };
  /**
   * Past maxPendingConnections, the oldest connection that has sent part of
   * a request head and not the rest (what a flood of half-sent requests
   * does) is evicted at once. One that has sent nothing Node has read yet is
   * not: a burst of clients is accepted before any of them is read, and
   * evicting those at accept time reset clients whose whole request was
   * already in the socket's buffer (451 and 499 of 900, issue 34). They are
   * evicted past PENDING_GRACE_MS (sweepPending).
   */
  const evictHalfSent = () => {
    for (const socket of pending.keys()) {
      if (socket.bytesRead > 0) return evict(socket);
    }
    sweepTimer ??= setTimeout(sweepPending, PENDING_GRACE_MS).unref();
  };
  /** The oldest connections past maxPendingConnections that have sent no request head after PENDING_GRACE_MS. */
  const sweepPending = () => {
    sweepTimer = undefined;
    const now = performance.now();
    for (const [oldest, since] of pending) {
      if (pending.size <= limits.maxPendingConnections) return;
      if (now - since < PENDING_GRACE_MS) {
        sweepTimer = setTimeout(sweepPending, PENDING_GRACE_MS - (now - since)).unref();
        return;
      }
      evict(oldest);
    }
  };
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    if (open.size > limits.maxConnections) overCap.add(socket);
    pending.set(socket, performance.now());
    socket.once('close', () => {
      open.delete(socket);
      pending.delete(socket);
    });
    if (pending.size > limits.maxPendingConnections) evictHalfSent();
  });
  server.on('request', (req: IncomingMessage) => pending.delete(req.socket));
  metrics?.followServer(server);

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let parsed: unknown;
    let bodyBytes = 0;
    if (req.method === 'POST') {
      const text = await readBody(req, limits.maxBodyBytes);
      if (text === null) {
        metrics?.refused('body_too_large');
        return refuseBody(req, res, `Payload Too Large: request bodies are limited to ${limits.maxBodyBytes} bytes`);
      }
      if (nestedDeeperThan(text, MAX_JSON_DEPTH)) return rpcError(res, 400, -32600, `Invalid Request: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
      bodyBytes = text.length;
      try {
        parsed = JSON.parse(text);
      } catch {
        return rpcError(res, 400, -32700, 'Parse error');
      }
      // A batch's answers are all held until the last is done (no revision since 2025-06-18 has batches):
      // 100 reads of a 4 MiB file in one body held 1.1 GB.
      if (Array.isArray(parsed) && parsed.length > MAX_BATCH_MESSAGES) {
        return rpcError(res, 400, -32600, `Invalid Request: a batch of ${parsed.length} messages exceeds the maximum of ${MAX_BATCH_MESSAGES}`);
      }
    }
    // Streams (2026 listens, a 2025 session's GET) only end when someone ends them: they are not waited for.
    if (req.method !== 'GET' && !isListen(parsed)) {
      busy.add(res);
      res.on('close', () => busy.delete(res));
    }
    // A large body's handling (the SDK's checks of every item, ours) runs as one microtask chain: at most one such a
    // turn, however it arrived. Every other request takes its turn's arrival budget, or waits with the backlog.
    if (bodyBytes >= LARGE_BODY_BYTES) await turns.slice();
    else await arrivals.admit(sessions.known(req.headers['mcp-session-id']));
    await nodeHandler(req, res, parsed);
  }

  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => reject(new HttpListenError(error));
    server.once('error', failed);
    server.listen(options.listen.port, options.listen.host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  // A long-lived server: the first scan starts now, not on the first client's request. In the same turn as
  // the bind, so before any request is read.
  try {
    const services = app.services();
    listeners = new HttpListeners(services.ctx, services.live, handler.notify, turns);
    probes.follow(services.index);
    metrics?.followApp(app);
    metrics?.followEndpoint({ sessions, listeners });
  } catch (error) {
    server.close();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const host = options.listen.host.includes(':') ? `[${options.listen.host}]` : options.listen.host;

  return {
    url: `http://${host}:${port}${MCP_PATH}`,
    listeners,
    sessions,
    async close() {
      if (closing) return;
      closing = true;
      // Drain: a request already sent on an open connection but not yet read would be reset if its
      // connection were closed as idle now (12 of 25 sent 150 ms before SIGTERM were), and
      // server.close() closes idle connections (Node >= 19). So for a moment every request that
      // arrives is answered 503 with `Connection: close`, and those in flight finish; then close.
      const deadline = Date.now() + limits.drainMs;
      const graceEnd = Date.now() + Math.min(DRAIN_GRACE_MS, limits.drainMs);
      // A connection with no request read yet (`pending`) may hold one the loop has not got to: on a loaded
      // machine that is more than the grace. It is waited for too, up to the drain's deadline.
      while (((busy.size > 0 || pending.size > 0) && Date.now() < deadline) || Date.now() < graceEnd) await delay(20);
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // Listen streams get the graceful end (their empty result); what is still in flight is cut.
      await handler.close();
      listeners.close();
      await sessions.closeAll();
      server.closeIdleConnections();
      await Promise.race([stopped, delay(1_000)]);
      server.closeAllConnections();
      await stopped;
    },
  };
}

function isListen(body: unknown): body is Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const { method, id } = body as Record<string, unknown>;
  return method === 'subscriptions/listen' && (typeof id === 'string' || typeof id === 'number');
}

/** A `resources/read`, alone or in a batch. */
function hasRead(body: unknown): boolean {
  const isRead = (message: unknown) => typeof message === 'object' && message !== null && (message as Record<string, unknown>).method === 'resources/read';
  return Array.isArray(body) ? body.some(isRead) : isRead(body);
}

function pathOf(url: string | undefined): string {
  const q = (url ?? '/').indexOf('?');
  return q === -1 ? (url ?? '/') : url!.slice(0, q);
}

/** The body as text, or null when it is over `max` bytes (then it is not read further; the answer closes the connection). */
function readBody(req: IncomingMessage, max: number): Promise<string | null> {
  if (Number(req.headers['content-length']) > max) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      req.off('data', onData);
      req.pause();
      resolve(null);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks, size).toString('utf8')));
    req.once('error', reject);
  });
}

/** Of a body refused as too large, what is read and dropped before its connection closes (see refuseBody). */
export const MAX_DISCARDED_BODY_BYTES = 64 * 1024 * 1024;
/** ...and for how long at most. */
const DISCARD_BODY_MS = 5_000;

/**
 * 413 for a body over the limit, and the connection closed without a reset.
 * Closing a socket whose client is still sending resets it (RST), and a
 * client busy sending a 1 GB body then saw EPIPE or ECONNRESET instead of the
 * answer. So the whole answer goes out at once (with its length, and
 * `Connection: close`), and the rest of the body is read and dropped until it
 * ends, up to MAX_DISCARDED_BODY_BYTES or DISCARD_BODY_MS; only then does the
 * response end and Node close the connection. A client that sends more than
 * that still has had the whole answer long before its connection closes.
 */
function refuseBody(req: IncomingMessage, res: ServerResponse, message: string): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } });
  res.writeHead(413, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' });
  res.write(body);
  if (req.complete) return void res.end();
  let dropped = 0;
  const timer = setTimeout(() => finish(), DISCARD_BODY_MS).unref();
  const finish = () => {
    clearTimeout(timer);
    req.off('data', drop);
    req.off('end', finish);
    req.off('error', finish);
    if (!res.writableEnded) res.end();
  };
  const drop = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > MAX_DISCARDED_BODY_BYTES) finish();
  };
  req.on('data', drop);
  req.once('end', finish);
  req.once('error', finish);
  req.resume();
}

function rpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }));
}

function refuse(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  rpcError(res, status, -32000, message, headers);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
