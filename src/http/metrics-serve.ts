// GET /metrics: on the --http listener next to /mcp, and on a listener of its
// own with `--metrics [HOST:]PORT` (also beside a stdio server). Either way
// behind the same checks as /mcp: Host and Origin, and the bearer token when
// one is set (the figures say how large the folders are and how they are used).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpListen } from '../config.ts';
import type { Logger } from '../log.ts';
import { checkRequest, headersOf, type GuardPolicy } from './guard.ts';
import type { Metrics } from './metrics.ts';

export const METRICS_PATH = '/metrics';
const METRICS_METHODS = ['GET', 'HEAD'];
/** A scraper or two, and a person with curl: the metrics listener needs few descriptors. */
const METRICS_MAX_CONNECTIONS = 32;

/** Answers `req` when it asks for /metrics, and returns true; false for any other path (nothing written). */
export function answerMetrics(metrics: Metrics, policy: GuardPolicy, req: IncomingMessage, res: ServerResponse, path: string): boolean {
  if (path !== METRICS_PATH) return false;
  const refusal = checkRequest(policy, headersOf(req));
  if (refusal) {
    sendJson(res, refusal.status, refusal.message, refusal.headers);
    return true;
  }
  if (!METRICS_METHODS.includes(req.method ?? '')) {
    sendJson(res, 405, 'Method Not Allowed', { allow: METRICS_METHODS.join(', ') });
    return true;
  }
  metrics.text().then(
    (text) => {
      res.writeHead(200, { 'content-type': metrics.contentType, 'content-length': String(Buffer.byteLength(text)), 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : text);
    },
    // A gauge read the index as it closed (shutdown): no figures this time.
    () => sendJson(res, 503, 'Service Unavailable: the metrics cannot be read now', { 'retry-after': '5' }),
  );
  return true;
}

export interface MetricsEndpoint {
  /** `http://HOST:PORT/metrics`, with the port actually bound. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * `--metrics [HOST:]PORT`: a listener that serves /metrics and nothing else
 * (no /mcp, no probes: 404). Rejects with the listen error (EADDRINUSE) when
 * the address cannot be bound.
 */
export async function serveMetrics(options: { metrics: Metrics; listen: HttpListen; policy: GuardPolicy; log: Logger }): Promise<MetricsEndpoint> {
  const { metrics, listen, policy, log } = options;
  // node:http as Node's own module, not an ES import (scripts/build.mjs, ON_DEMAND_BUILTINS).
  const server = process.getBuiltinModule('node:http').createServer({ headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000, maxHeaderSize: 16 * 1024 }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (answerMetrics(metrics, policy, req, res, path)) return;
    sendJson(res, 404, `Not Found: this listener serves ${METRICS_PATH} only`);
  });
  server.maxConnections = METRICS_MAX_CONNECTIONS;
  server.setTimeout(120_000);
  server.on('clientError', (error, socket) => {
    log.debug(`metrics: ${error.message}`);
    socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${host}:${port}${METRICS_PATH}`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function sendJson(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error: message }));
}
