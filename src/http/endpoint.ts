// The MCP endpoint: a request in, its handler chosen. The probes and /metrics,
// the guard (Host, Origin, token), the method and path, a capped body, then
// the era: 2026-07-28 requests go to the SDK's stateless handler, 2025-era
// ones to their session or, outside any, to the stateless legacy leg. The
// sockets under it are ./node-server.ts's.
import { toNodeHandler, type NodeMcpRequestHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, isLegacyRequest, type McpHandlerRequestOptions, type McpHttpHandler } from '@modelcontextprotocol/server';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { App } from '../app.ts';
import type { Logger } from '../log.ts';
import { Connection } from '../protocol/connection.ts';
import { AnswerBlobs } from '../protocol/sdk/answer-blobs.ts';
import { toLegacyResponse } from '../protocol/sdk/legacy-not-found-http.ts';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../protocol/wire.ts';
import { createServer, type ServerInfo } from '../server.ts';
import { ArrivalGate, TurnBudget } from '../turns.ts';
import { readBody, refuseBody } from './body.ts';
import { checkRequest, headersOf, type GuardPolicy } from './guard.ts';
import { HealthProbes } from './health.ts';
import { HttpListeners } from './listeners.ts';
import type { Metrics } from './metrics.ts';
import { answerMetrics } from './metrics-serve.ts';
import { refuse, rpcError, type ServedEndpoint } from './node-server.ts';
import { LegacySessions, type SessionLimits } from './sessions.ts';
import { AnswerPacer } from './paced-answers.ts';
import { MAX_UNREAD_STREAM_BYTES, whenAnswered } from './streams.ts';

export const MCP_PATH = '/mcp';
const ALLOWED_METHODS = ['GET', 'POST', 'DELETE'];
/** Messages one JSON-RPC batch may carry (2025-03-26 clients still send them). */
export const MAX_BATCH_MESSAGES = 8;
/** The response header naming the replica that answered (with `--replica-id` only). */
export const REPLICA_HEADER = 'x-folder-mcp-replica';

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

/** What one request may bring, beside what a 2025 session may hold. */
export interface EndpointLimits extends SessionLimits {
  /** Largest request body (as stdio's largest line): a longer one is answered 413 and not read. */
  maxBodyBytes: number;
  /**
   * Long-lived streams at once (2026-07-28 listens, 2025 sessions' GET
   * streams): past it a new one is refused, so that requests always find
   * connections (default: three quarters of maxConnections, STREAM_SHARE).
   */
  maxStreams?: number;
  /** What answers not yet handed to Node may keep in memory, all together (MAX_HELD_ANSWER_BYTES). */
  maxHeldAnswerBytes?: number;
}

export interface EndpointOptions {
  app: App;
  info: ServerInfo;
  policy: GuardPolicy;
  log: Logger;
  limits: EndpointLimits;
  /** Served at /metrics (behind the token, when one is set), and told of the refusals here. */
  metrics?: Metrics;
  /** `--replica-id`: prefixes 2025 session ids (`NAME.`) and names this replica in the `X-Folder-Mcp-Replica` header. */
  replicaId?: string;
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
export class McpEndpoint implements ServedEndpoint {
  readonly sessions: LegacySessions;
  private readonly handler: McpHttpHandler;
  private readonly nodeHandler: NodeMcpRequestHandler;
  private readonly turns = new TurnBudget(SHARED_TURN_MS);
  /** Listen and GET streams open now (streamsFull). */
  private streamsOpen = 0;
  private readonly arrivals = new ArrivalGate(ARRIVAL_TURN_MS, this.turns);
  private readonly probes: HealthProbes;
  /** Made by start(), once the port is bound: the index is not opened, nor its file made, for a port that is taken. */
  private listening: HttpListeners | undefined;
  /** Requests being answered. */
  private readonly inFlight = new Set<ServerResponse>();
  /** Every answer to a POST, written a piece at a time as its client takes it. */
  readonly pacer: AnswerPacer;
  /** The response of each POST being answered, by its parsed body (what the SDK hands the handler of it). */
  private readonly responseOf = new WeakMap<object, ServerResponse>();
  /** What makes an answer's large binary contents as it is read (AnswerBlobs), by answer: paced after the reading ahead. */
  private readonly spliceOf = new WeakMap<Response, (body: ReadableStream<Uint8Array>) => ReadableStream<Uint8Array>>();
  private draining = false;

  constructor(private readonly options: EndpointOptions) {
    const { app, info, policy, metrics } = options;
    const report = (error: Error) => {
      // The SDK refuses a listen past its cap in band, and says so only here.
      if (error.message.includes('subscription limit reached')) metrics?.refused('listen_streams');
      options.log.debug(`http: ${error.message}`);
    };
    // 2026-07-28 requests, and 2025-era requests outside any session: a throw-away Connection per request (nothing is held).
    this.handler = createMcpHandler(() => createServer(app.services, new Connection(), info, app.observe), { legacy: 'stateless', onerror: report });
    this.sessions = new LegacySessions(app, options.limits, report, options.replicaId === undefined ? '' : `${options.replicaId}.`);
    this.nodeHandler = toNodeHandler({ fetch: (request, requestOptions) => this.route(request, requestOptions) }, { onerror: report });
    this.probes = new HealthProbes(policy, () => this.draining);
    this.pacer = new AnswerPacer({
      ...(options.limits.maxHeldAnswerBytes === undefined ? {} : { maxHeldBytes: options.limits.maxHeldAnswerBytes }),
      onCut: ({ bytes, idleMs }) => {
        metrics?.refused('answer_not_taken');
        options.log.debug(`http: an answer's client asked for none of it for ${Math.round(idleMs)} ms while the answers held passed their bound: cut, ${bytes} bytes let go`);
      },
    });
  }

  /**
   * A long-lived server: the first scan starts now, not on the first
   * client's request. Called once the port is bound, in the same turn, so
   * before any request is read.
   */
  start(): void {
    const { app, metrics } = this.options;
    const services = app.services();
    this.listening = new HttpListeners(services.ctx, this.handler.notify, this.turns);
    this.probes.follow(services.index);
    metrics?.followApp(app);
    metrics?.followEndpoint({ sessions: this.sessions, listeners: this.listening });
  }

  get listeners(): HttpListeners {
    if (this.listening === undefined) throw new Error('the endpoint is not started');
    return this.listening;
  }

  get busy(): number {
    return this.inFlight.size;
  }

  drain(): void {
    this.draining = true;
  }

  async close(): Promise<void> {
    // Listen streams get the graceful end (their empty result); what is still in flight is cut.
    await this.handler.close();
    this.listening?.close();
    await this.sessions.closeAll();
  }

  answerAlways(req: IncomingMessage, res: ServerResponse): boolean {
    const { metrics, policy, replicaId } = this.options;
    // Which replica answered, for whoever debugs a load balancer (and for the cluster test to prove the rotation).
    if (replicaId !== undefined) res.setHeader(REPLICA_HEADER, replicaId);
    // /healthz and /readyz: no token, and answered while draining (readyz then says 503) or over the connection cap.
    if (this.probes.answer(req, res, pathOf(req.url))) return true;
    return metrics !== undefined && answerMetrics(metrics, policy, req, res, pathOf(req.url));
  }

  answer(req: IncomingMessage, res: ServerResponse): void {
    const refusal = checkRequest(this.options.policy, headersOf(req));
    if (refusal) return refuse(res, refusal.status, refusal.message, refusal.headers);
    // Streamable HTTP has three methods; anything else (TRACE, PUT, ...) is 405, not an internal error.
    if (!ALLOWED_METHODS.includes(req.method ?? '')) return refuse(res, 405, 'Method Not Allowed', { allow: ALLOWED_METHODS.join(', ') });
    if (pathOf(req.url) !== MCP_PATH) return refuse(res, 404, `Not Found: the MCP endpoint is ${MCP_PATH}`);
    this.serve(req, res).catch((error: unknown) => {
      // No stack and no path to the client: the log has the detail.
      this.options.log.debug(`http: ${(error as Error).message}`);
      if (!res.headersSent) refuse(res, 500, 'Internal server error');
      else res.destroy();
    });
  }

  /** A request to /mcp that passed the guard: its body read within the bound, then handed to the SDK in its turn. */
  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { limits, metrics } = this.options;
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
    } else if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) {
      // A GET's or a DELETE's body means nothing, but the Node adapter read it whole, up to its own 4 MiB: within
      // the same bound as a POST's, and dropped (a red-team pass held 4.4 MiB a connection with DELETE bodies).
      if ((await readBody(req, limits.maxBodyBytes)) === null) {
        metrics?.refused('body_too_large');
        return refuseBody(req, res, `Payload Too Large: request bodies are limited to ${limits.maxBodyBytes} bytes`);
      }
    }
    // Streams (2026 listens, a 2025 session's GET) only end when someone ends them: they are not waited for.
    if (req.method !== 'GET' && !isListen(parsed)) {
      if (typeof parsed === 'object' && parsed !== null) this.responseOf.set(parsed, res);
      this.inFlight.add(res);
      res.on('close', () => this.inFlight.delete(res));
    }
    // A large body's handling (the SDK's checks of every item, ours) runs as one microtask chain: at most one such a
    // turn, however it arrived. Every other request takes its turn's arrival budget, or waits with the backlog.
    if (bodyBytes >= LARGE_BODY_BYTES) await this.turns.slice();
    else await this.arrivals.admit(this.sessions.known(req.headers['mcp-session-id']));
    await this.nodeHandler(req, res, parsed);
  }

  /** By era: a 2025-era request to its session (or statelessly, outside any), a 2026-07-28 listen to its stream, the rest statelessly. */
  private async route(request: Request, requestOptions?: McpHandlerRequestOptions): Promise<Response> {
    const body = requestOptions?.parsedBody;
    // An answer goes a piece at a time (./paced-answers.ts); a GET's stream is a notification stream, bounded as such.
    const paced = (response: Response) => {
      if (request.method !== 'POST') return response;
      const res = typeof body === 'object' && body !== null ? this.responseOf.get(body) : undefined;
      return this.pacer.pace(response, () => res?.destroy(), this.spliceOf.get(response));
    };
    if (await isLegacyRequest(request, body)) {
      if (request.method === 'GET' && this.streamsFull()) return this.streamsRefused(null);
      const response = (await this.sessions.handle(request, body)) ?? (await this.statelessly(request, requestOptions, toLegacyResponse));
      return request.method === 'GET' ? this.countStream(request, response) : paced(response);
    }
    if (isListen(body)) {
      if (this.streamsFull()) return this.streamsRefused(body.id as string | number);
      return this.countStream(request, await this.listen(body, request, requestOptions));
    }
    return paced(await this.statelessly(request, requestOptions));
  }

  /**
   * A request outside any session: its answers go out on its own response
   * only, so a read's large binary content is written as that response is
   * sent (src/protocol/sdk/answer-blobs.ts). Never in a 2025 session, where an
   * answer may go out on another stream (one resumed with Last-Event-ID, or
   * a duplicate id's) or be dropped (cancelled) with the request's still open.
   */
  private async statelessly(
    request: Request,
    requestOptions: McpHandlerRequestOptions | undefined,
    wrap: (response: Response) => Response | Promise<Response> = (response) => response,
  ): Promise<Response> {
    const blobs = hasRead(requestOptions?.parsedBody) ? AnswerBlobs.open(request, this.turns) : undefined;
    let response: Response;
    try {
      response = await wrap(await this.handler.fetch(request, requestOptions));
    } catch (error) {
      blobs?.release();
      throw error;
    }
    if (blobs === undefined) return response;
    if (response.body === null) return blobs.splice(response); // nothing to splice: the placeholders let go
    // Spliced as the answer is paced (every answer to a POST is), between its reading ahead and its pieces.
    this.spliceOf.set(response, (body) => blobs.splice(new Response(body)).body!);
    return response;
  }

  /**
   * Whether the long-lived streams take their share of the connections
   * already: one token holder's 1,000 listens, kept open by their
   * keep-alives, left every other client 503 for as long as it liked (a
   * red-team finding).
   */
  private streamsFull(): boolean {
    return this.streamsOpen >= (this.options.limits.maxStreams ?? Infinity);
  }

  private streamsRefused(id: string | number | null): Response {
    this.options.metrics?.refused('listen_streams');
    const message = `Service Unavailable: ${this.streamsOpen} streams are open, the most kept for them (the other connections are for requests); try again later`;
    // A listen is refused in band (200), as its other refusals; a GET stream with 503, as a session's.
    return id === null
      ? Response.json({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }, { status: 503, headers: { 'retry-after': '5' } })
      : Response.json({ jsonrpc: '2.0', id, error: { code: -32000, message } });
  }

  /** A stream answer (text/event-stream) counts among the streams open until its body ends, however it ends. */
  private countStream(request: Request, response: Response): Response {
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return response;
    this.streamsOpen++;
    let ended = false;
    return whenAnswered(request, response, () => {
      if (ended) return;
      ended = true;
      this.streamsOpen--;
    });
  }

  /** A listen stream: what it names is tracked until its body ends, however it ends. */
  private async listen(message: Record<string, unknown>, request: Request, requestOptions?: McpHandlerRequestOptions): Promise<Response> {
    const listeners = this.listeners;
    const opened = await listeners.open(message);
    // Over its bound: answered in band (200, as the SDK answers a handler's -32602), no stream.
    if ('refused' in opened) {
      this.options.metrics?.refused('listen_uris');
      return Response.json(opened.refused);
    }
    const { stream } = opened;
    const release = () => listeners.release(stream);
    let response: Response;
    try {
      // Folded in turns, listens arriving together end their folding together: the SDK's checks of each (1,000 URIs)
      // take turns too.
      await this.turns.slice();
      response = await this.handler.fetch(request, requestOptions);
    } catch (error) {
      release();
      throw error;
    }
    // Refused (a bad filter, the subscription cap): a JSON answer, no stream.
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      release();
      return response;
    }
    return whenAnswered(request, response, release, MAX_UNREAD_STREAM_BYTES);
  }
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
