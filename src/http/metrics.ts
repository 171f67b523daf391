// The process's metrics, in Prometheus's text format (prom-client), on a
// registry of its own: requests by method and outcome with their latency,
// what the HTTP endpoint holds (connections, sessions, listen streams, bytes
// out), the index and its scans, the watcher, and every refusal by the bound
// that refused. Counters that must be counted as they happen are counted
// there (requests, refusals at the HTTP layer); the rest is read when scraped.
// Labels come from fixed sets only: never a URI, a path, or a name as sent.
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { App } from '../app.ts';
import { WATCHER_BACKENDS } from '../watching.ts';
import { REQUEST_HANDLERS } from '../protocol/handlers.ts';
import type { RequestEvent, RequestObserver } from '../protocol/observe.ts';

export const METRICS_PREFIX = 'folder_mcp_';

/** Methods with a label of their own: ours, and the SDK's. Anything else is `other`. */
const KNOWN_METHODS = new Set([...Object.keys(REQUEST_HANDLERS), 'initialize', 'ping', 'server/discover']);
/** The catalog's tools (src/catalog/; test/e2e/http-metrics.test.ts checks this list against tools/list). A name or URI not here is `other`. */
export const KNOWN_TOOLS = ['find', 'search', 'read', 'tree', 'write', 'edit', 'mkdir', 'move'] as const;
const TOOL_URI_PREFIX = 'mcp://tools/';

/**
 * The bounds that refuse work, as labels of folder_mcp_refusals_total:
 * connections over the cap (503, or closed by Node past it), half-sent
 * requests evicted past the pending cap, reads past the read budget's queue,
 * listens naming too many URIs, listen streams past the SDK's cap, bodies over
 * 1 MiB (413), new 2025-era sessions when all are busy (503), requests
 * that arrive while the server drains (503), and answers cut because their
 * clients stopped taking them while the answers held passed their bound
 * (./paced-answers.ts).
 */
export const REFUSAL_BOUNDS = [
  'connection_cap',
  'pending_cap',
  'read_budget',
  'listen_uris',
  'listen_streams',
  'body_too_large',
  'sessions_busy',
  'draining',
  'answer_not_taken',
] as const;
export type RefusalBound = (typeof REFUSAL_BOUNDS)[number];

/** What the HTTP endpoint shows the metrics (src/http/endpoint.ts). */
export interface EndpointGauges {
  /** 2025-era sessions open, and how many new ones were refused because all were busy. */
  readonly sessions: { readonly size: number; readonly refusals: number };
  /** Listen streams open, and the URIs they name. */
  readonly listeners: { readonly size: { streams: number; uris: number } };
}

/** Latency buckets, in seconds: from a cached page (~1 ms) to a search at its budget and a read waiting for a cold scan. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class Metrics {
  readonly registry = new Registry();
  /** Give this to createApp: every request's outcome and time, on every transport. */
  readonly observe: RequestObserver = (event) => this.onRequest(event);
  private app: App | undefined;
  private endpoint: EndpointGauges | undefined;
  /** The --http listener's open connections (followServer), and the bytes written to those closed since. */
  private readonly sockets = new Set<Socket>();
  private closedBytesOut = 0;
  private serving = false;
  private readonly refusals = new Map<RefusalBound, number>(REFUSAL_BOUNDS.map((bound) => [bound, 0]));
  private readonly requests: Counter<'method' | 'outcome'>;
  private readonly latency: Histogram<'method'>;
  private readonly toolCalls: Counter<'tool' | 'outcome'>;
  private readonly toolLatency: Histogram<'tool'>;
  private readonly responses: Counter<'code'>;

  constructor() {
    const registers = [this.registry];
    const name = (text: string) => `${METRICS_PREFIX}${text}`;
    collectDefaultMetrics({ register: this.registry, prefix: METRICS_PREFIX });
    this.requests = new Counter({
      name: name('requests_total'),
      help: 'JSON-RPC requests answered, by method (unknown methods: other) and outcome (ok, error, refused: a bound said busy)',
      labelNames: ['method', 'outcome'],
      registers,
    });
    this.latency = new Histogram({
      name: name('request_duration_seconds'),
      help: "Time from a request's handler starting to its result, by method (waiting for the first scan included; queueing and sending not)",
      labelNames: ['method'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.toolCalls = new Counter({
      name: name('tool_calls_total'),
      help: 'tools/call requests by tool (unknown tools: other) and outcome (error: a protocol error or an isError result)',
      labelNames: ['tool', 'outcome'],
      registers,
    });
    this.toolLatency = new Histogram({
      name: name('tool_call_duration_seconds'),
      help: 'Time of a tools/call, by tool',
      labelNames: ['tool'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.responses = new Counter({
      name: name('http_responses_total'),
      help: 'HTTP responses of the --http listener by status code (a stream counts when it ends)',
      labelNames: ['code'],
      registers,
    });
    registerScrapeMetrics(this.registry, {
      refusals: this.refusals,
      app: () => this.app,
      endpoint: () => this.endpoint,
      http: () => (this.serving ? { sockets: this.sockets, closedBytesOut: this.closedBytesOut } : undefined),
    });
  }

  /** The App whose index, watcher and content index the gauges read. */
  followApp(app: App): void {
    this.app = app;
  }

  /**
   * The --http listener: its connections and the bytes written to them, its
   * responses by status, and the connections Node closes at once past its
   * maxConnections (a refusal by the connection cap).
   */
  followServer(server: HttpServer): void {
    this.serving = true;
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => {
        this.closedBytesOut += socket.bytesWritten;
        this.sockets.delete(socket);
      });
    });
    server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
      res.once('close', () => res.headersSent && this.responded(res.statusCode));
    });
    server.on('drop', () => this.refused('connection_cap'));
  }

  /** The HTTP endpoint whose sessions and streams the gauges read. */
  followEndpoint(endpoint: EndpointGauges): void {
    this.endpoint = endpoint;
  }

  /** A bound refused something (at the event: the HTTP layer). */
  refused(bound: RefusalBound): void {
    this.refusals.set(bound, this.refusals.get(bound)! + 1);
  }

  /** The HTTP listener answered with `status` (counted when the response ends). */
  private responded(status: number): void {
    this.responses.inc({ code: String(status) });
  }

  /** The text exposition (content type: `contentType`). */
  async text(): Promise<string> {
    // prom-client 15.1 writes NaN as `Nan` (its lib/util.js); the format says `NaN` (the event loop's mean lag is NaN
    // between two scrapes closer than its sampling interval). Prometheus reads either; a strict parser does not.
    return (await this.registry.metrics()).replace(/ Nan$/gm, ' NaN');
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private onRequest(event: RequestEvent): void {
    const method = event.method !== null && KNOWN_METHODS.has(event.method) ? event.method : 'other';
    this.requests.inc({ method, outcome: event.outcome });
    this.latency.observe({ method }, event.seconds);
    if (method === 'tools/call') {
      const tool = toolLabel(event.tool);
      this.toolCalls.inc({ tool, outcome: event.outcome });
      this.toolLatency.observe({ tool }, event.seconds);
    }
  }
}

/** Where the values read at scrape time come from. */
interface ScrapeSources {
  /** Refusals counted at the event (the HTTP layer). */
  refusals: ReadonlyMap<RefusalBound, number>;
  app(): App | undefined;
  endpoint(): EndpointGauges | undefined;
  http(): { sockets: ReadonlySet<Socket>; closedBytesOut: number } | undefined;
}

/** The metrics whose values are read when scraped (collect callbacks): refusals, the endpoint, the index, the watcher. */
function registerScrapeMetrics(registry: Registry, { refusals, app, endpoint, http }: ScrapeSources): void {
  const registers = [registry];
  const name = (text: string) => `${METRICS_PREFIX}${text}`;
  new Counter({
    name: name('refusals_total'),
    help: 'Work refused by a bound, by bound',
    labelNames: ['bound'],
    registers,
    collect() {
      const services = started(app());
      const counts = new Map(refusals);
      counts.set('read_budget', counts.get('read_budget')! + (services?.ctx.readBudget.refusals ?? 0));
      counts.set('sessions_busy', counts.get('sessions_busy')! + (endpoint()?.sessions.refusals ?? 0));
      this.reset();
      for (const [bound, n] of counts) this.inc({ bound }, n);
    },
  });
  const gauge = (metric: string, help: string, value: () => number | undefined) =>
    new Gauge({
      name: name(metric),
      help,
      registers,
      collect() {
        const v = value();
        if (v === undefined) this.reset();
        else this.set(v);
      },
    });
  // The HTTP endpoint (absent over stdio).
  gauge('http_connections_open', 'HTTP connections open', () => http()?.sockets.size);
  new Counter({
    name: name('http_response_bytes_total'),
    help: 'Bytes written to HTTP connections (headers and bodies)',
    registers,
    collect() {
      const served = http();
      let bytes = served?.closedBytesOut ?? 0;
      for (const socket of served?.sockets ?? []) bytes += socket.bytesWritten;
      this.reset();
      this.inc(bytes);
    },
  });
  gauge('sessions_open', '2025-era sessions open (Mcp-Session-Id)', () => endpoint()?.sessions.size);
  gauge('listen_streams_open', '2026-07-28 subscriptions/listen streams open', () => endpoint()?.listeners.size.streams);
  gauge('listen_uris', 'URIs named by the open listen streams', () => endpoint()?.listeners.size.uris);
  // The index, once the services have started (a probe does not start them, nor does a scrape).
  gauge('index_entries', 'Entries (files and folders) in the index', () => started(app())?.index.store.count());
  gauge('scan_entries', 'Entries the first scan has indexed so far', () => started(app())?.index.scanned);
  gauge('scan_complete', '1 once the first scan has finished (at once on a warm start), else 0', () => {
    const state = started(app())?.index.readiness.state;
    // Over either way: a failed scan is complete too, as it is for the requests (they report its error).
    return flag(state === undefined ? undefined : state !== 'scanning');
  });
  gauge('content_index_documents_checked', "Documents the content index's build has checked", () => started(app())?.search?.progress.done);
  gauge('content_index_documents_total', "Documents the content index's build will check", () => started(app())?.search?.progress.total);
  gauge('content_index_complete', "1 once the content index's first build has finished, else 0", () => flag(started(app())?.search?.progress.complete));
  gauge('read_budget_bytes_in_use', 'Bytes of files being read now, against the read budget', () => started(app())?.ctx.readBudget.inUse);
  gauge('reads_waiting', 'Reads waiting for the read budget', () => started(app())?.ctx.readBudget.queued);
  gauge('watcher_backlog', 'Paths a watcher reported that are not yet looked at', () => started(app())?.live.backlog);
  new Gauge({
    name: name('watcher_backend'),
    help: '1 for the watcher backend running now (chokidar, dirs, poll, none); none at all before the first scan ends',
    labelNames: ['backend'],
    registers,
    collect() {
      this.reset();
      const running = started(app())?.live.backend;
      for (const backend of WATCHER_BACKENDS) this.set({ backend }, backend === running ? 1 : 0);
    },
  });
  new Counter({
    name: name('watcher_fallbacks_total'),
    help: 'Watcher fallbacks: failed (a running backend failed, e.g. out of inotify watches, and the next took over), not_started (a backend could not start)',
    labelNames: ['reason'],
    registers,
    collect() {
      this.reset();
      const fallbacks = started(app())?.live.fallbacks;
      this.inc({ reason: 'failed' }, fallbacks?.failed ?? 0);
      this.inc({ reason: 'not_started' }, fallbacks?.notStarted ?? 0);
    },
  });
}

/** A tool's name as sent (a name, or its `mcp://tools/<group>/<name>` URI), as a label: one of KNOWN_TOOLS, or `other`. */
export function toolLabel(sent: string | undefined): string {
  if (sent === undefined) return 'other';
  const name = sent.startsWith(TOOL_URI_PREFIX) ? sent.slice(sent.lastIndexOf('/') + 1) : sent;
  return (KNOWN_TOOLS as readonly string[]).includes(name) ? name : 'other';
}

/** The services, when they have started: a scrape never starts them. Undefined once they are closing (the index may be closed). */
function started(app: App | undefined) {
  return app?.started ? app.services() : undefined;
}

function flag(value: boolean | undefined): number | undefined {
  return value === undefined ? undefined : value ? 1 : 0;
}
