// `serveHttp`: the MCP endpoint (./endpoint.ts: a request -> its handler) on
// a Node HTTP server (./node-server.ts: sockets, limits, drain), bound to one
// address.
import type { App } from '../app.ts';
import type { HttpListen } from '../config.ts';
import type { Logger } from '../log.ts';
import { MAX_REQUEST_LINE_BYTES } from '../protocol/sdk/stdio-transport.ts';
import type { ServerInfo } from '../server.ts';
import { MCP_PATH, McpEndpoint } from './endpoint.ts';
import type { GuardPolicy } from './guard.ts';
import type { HttpListeners } from './listeners.ts';
import type { Metrics } from './metrics.ts';
import { DEFAULT_SERVER_LIMITS, NodeServer, type ServerLimits } from './node-server.ts';
import { DEFAULT_SESSION_LIMITS, type SessionLimits } from './sessions.ts';

export { HttpListenError } from './node-server.ts';

/** What one client may hold of the server, in bytes and time. */
export interface HttpLimits extends ServerLimits {
  /** Largest request body (as stdio's largest line): a longer one is answered 413 and not read. */
  maxBodyBytes: number;
  /** What answers not yet handed to Node may keep in memory, all together (./paced-answers.ts; tests set it low). */
  maxHeldAnswerBytes?: number;
  /** Long-lived streams at once (EndpointLimits.maxStreams; default STREAM_SHARE of maxConnections). */
  maxStreams?: number;
}

export type HttpServeLimits = HttpLimits & SessionLimits;

export const DEFAULT_HTTP_LIMITS: HttpLimits = { ...DEFAULT_SERVER_LIMITS, maxBodyBytes: MAX_REQUEST_LINE_BYTES };

const DEFAULT_LIMITS: HttpServeLimits = { ...DEFAULT_HTTP_LIMITS, ...DEFAULT_SESSION_LIMITS };
/** Of the connections, the share long-lived streams may hold (EndpointLimits.maxStreams): the rest are for requests. */
const STREAM_SHARE = 3 / 4;

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

export interface HttpEndpoint {
  /** `http://HOST:PORT/mcp`, with the port actually bound. */
  readonly url: string;
  readonly listeners: HttpListeners;
  /** 2025-era sessions open now. */
  readonly sessions: { readonly size: number; readonly busy: number };
  /** Answers being written, and their bytes not yet handed to Node (./paced-answers.ts). */
  readonly answers: { readonly size: number; readonly heldBytes: number };
  /** Stops accepting, lets in-flight requests finish (bounded), ends listen streams, closes every connection. */
  close(): Promise<void>;
}

/**
 * Streamable HTTP at /mcp, both eras, for any number of clients of one App
 * (McpEndpoint says how a request is served). Rejects with HttpListenError,
 * having opened nothing, when the address cannot be bound.
 */
export async function serveHttp(options: HttpServeOptions): Promise<HttpEndpoint> {
  const given = { ...DEFAULT_LIMITS, ...options.limits };
  const limits = { ...given, maxStreams: given.maxStreams ?? Math.floor(given.maxConnections * STREAM_SHARE) };
  const endpoint = new McpEndpoint({ ...options, limits });
  const server = new NodeServer(endpoint, limits, options.metrics);
  // The services start once the port is bound, in the same turn: the index is not opened, nor its file made, for a
  // port that is taken, and the first scan starts now, not on the first client's request.
  const port = await server.listen(options.listen, () => endpoint.start());
  const host = options.listen.host.includes(':') ? `[${options.listen.host}]` : options.listen.host;
  return {
    url: `http://${host}:${port}${MCP_PATH}`,
    listeners: endpoint.listeners,
    sessions: endpoint.sessions,
    answers: endpoint.pacer,
    close: () => server.close(),
  };
}
