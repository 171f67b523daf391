// Serving over Streamable HTTP in tests: the built CLI on 127.0.0.1 with a
// free port, and an SDK client of either era over a real socket.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { z } from 'zod';
import { after, before } from 'node:test';
import { pathToFileURL } from 'node:url';
import { createApp, type App } from '../src/app.ts';
import { allowedHostsFor, guardPolicy } from '../src/http/guard.ts';
import { Metrics } from '../src/http/metrics.ts';
import { serveHttp, type HttpEndpoint, type HttpServeLimits } from '../src/http/serve.ts';
import { prepareLaunch } from '../src/launch.ts';
import { silentLogger } from '../src/log.ts';
import { CLI, Loose, tempDir, writeTree, type LooseResult } from './helpers.ts';

export interface InProcessOptions {
  /** The bearer token clients must send (default: none). */
  token?: string;
  /** Count requests and serve /metrics (src/http/metrics.ts). */
  metrics?: boolean;
  /** More command-line options (after the folder, `--watcher none` and `--db :memory:`). */
  args?: string[];
}

export interface ServedInProcess {
  root: ReturnType<typeof tempDir>;
  app: App;
  endpoint: HttpEndpoint;
  port: number;
  rootUri: string;
  /** With `metrics: true`. */
  metrics?: Metrics;
  /** Closes the endpoint and the App, and removes the tree. */
  close(): Promise<void>;
}

/**
 * A real App on a temp tree (a.txt, sub/b.txt, and `tree`) and its endpoint
 * on 127.0.0.1:0, in this process. It resolves as soon as the port is bound:
 * the first scan has started and, on a large tree, is still running.
 */
export async function startInProcess(
  limits: Partial<HttpServeLimits> = {},
  tree: Record<string, string | Uint8Array> = {},
  options: InProcessOptions = {},
): Promise<ServedInProcess> {
  const root = tempDir();
  let app: App | undefined;
  try {
    writeTree(root.path, { 'a.txt': 'a\n', 'sub/b.txt': 'b\n', ...tree });
    // The binary's start-up (src/launch.ts), then its HTTP serving with the limits given.
    const launch = prepareLaunch([root.path, '--watcher', 'none', '--db', ':memory:', ...(options.args ?? [])], process.env, '0');
    if (launch.kind !== 'serve') throw new Error(`the server would not start: ${launch.text}`);
    const metrics = options.metrics ? new Metrics() : undefined;
    const info = { name: 'folder-mcp', version: '0', write: launch.config.write };
    const made = createApp(launch.config, launch.roots, launch.dbFile, silentLogger, info, metrics?.observe);
    app = made;
    const endpoint = await serveHttp({
      app: made,
      info,
      listen: { host: '127.0.0.1', port: 0 },
      policy: guardPolicy(allowedHostsFor('127.0.0.1'), options.token),
      log: silentLogger,
      limits,
      ...(metrics && { metrics }),
    });
    return {
      root,
      app: made,
      endpoint,
      port: Number(new URL(endpoint.url).port),
      rootUri: pathToFileURL(launch.roots[0]!.path).href + '/',
      ...(metrics && { metrics }),
      async close() {
        await endpoint.close();
        await made.close();
        root.cleanup();
      },
    };
  } catch (error) {
    await app?.close();
    root.cleanup();
    throw error;
  }
}

/** startInProcess for one describe block: started before its tests, closed after. */
export function serveInProcess(limits: Partial<HttpServeLimits> = {}, tree: Record<string, string | Uint8Array> = {}, options: InProcessOptions = {}) {
  const served = {} as ServedInProcess;
  before(async () => void Object.assign(served, await startInProcess(limits, tree, options)));
  after(async () => {
    await served.close?.();
  });
  return served;
}

export interface HttpProcess {
  url: string;
  child: ChildProcess;
  stderr(): string;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Spawns `folder-mcp --http 127.0.0.1:0 ...args` and waits for the line naming its URL. */
export async function startHttp(args: string[], env: Record<string, string> = {}): Promise<HttpProcess> {
  const child = spawn(process.execPath, [CLI, '--http', '127.0.0.1:0', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, FOLDER_MCP_TOKEN: '', FOLDER_MCP_CURSOR_KEY: '', ...env },
  });
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL on stderr within 60 s:\n${stderr}`)), 60_000);
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[0]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code} before listening:\n${stderr}`));
    });
  });
  return {
    url,
    child,
    stderr: () => stderr,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export interface HttpClient {
  era: 'legacy' | 'modern';
  client: Client | V1Client;
  request(method: string, params?: Record<string, unknown>): Promise<LooseResult>;
  /** Calls `handler` for each notification of `method` (on the legacy era: on the session's GET stream). */
  onNotification(method: string, handler: (params: LooseResult) => void): void;
  close(): Promise<void>;
}

/** The v1 client (2025-11-25, initialize) or the v2 client pinned to 2026-07-28, over Streamable HTTP. */
export async function connectHttp(url: string, era: 'legacy' | 'modern', token?: string, options: { fetch?: typeof fetch } = {}): Promise<HttpClient> {
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  const transportOptions = { requestInit, ...(options.fetch && { fetch: options.fetch }) };
  if (era === 'legacy') {
    const client = new V1Client({ name: 'folder-mcp-test', version: '0.0.0' });
    await client.connect(new V1StreamableHTTPClientTransport(new URL(url), transportOptions));
    return {
      era,
      client,
      request: (method, params) =>
        (client.request({ method, params }, Loose) as Promise<LooseResult>).catch((error: { code?: number; message: string }) => {
          // The v1 client prefixes "MCP error <code>: "; compare messages as sent.
          error.message = error.message.replace(/^MCP error -?\d+: /, '');
          throw error;
        }),
      onNotification: (method, handler) =>
        client.setNotificationHandler(z.object({ method: z.literal(method), params: Loose.optional() }) as never, ((n: { params?: LooseResult }) =>
          handler(n.params ?? {}))),
      close: () => client.close(),
    };
  }
  const client = new Client({ name: 'folder-mcp-test', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), transportOptions));
  return {
    era,
    client,
    request: (method, params) => client.request({ method, params } as never, Loose as never),
    onNotification: (method, handler) =>
      client.setNotificationHandler(method as never, ((n: { params?: LooseResult }) => handler(n.params ?? {})) as never),
    close: () => client.close(),
  };
}

/** Collects the `notifications/resources/updated` and `list_changed` a client of either era hears. */
export function collectNotes(conn: HttpClient): { updated: string[]; listChanged: number } {
  const notes = { updated: [] as string[], listChanged: 0 };
  conn.onNotification('notifications/resources/updated', (params) => void notes.updated.push(params.uri as string));
  conn.onNotification('notifications/resources/list_changed', () => void notes.listChanged++);
  return notes;
}

/** A request over node:http with any method and headers (fetch forbids setting Host), its body read whole. */
export function rawRequest(url: string, method: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * A raw POST over node:http (fetch forbids setting Host): a 2025-era
 * `initialize` unless `body` says otherwise.
 */
export function rawPost(url: string, headers: Record<string, string>, body?: string, options: { chunked?: boolean } = {}): Promise<RawResponse> {
  const payload =
    body ??
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
    });
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      // The server may close after answering a body it would not read whole.
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    if (!options.chunked) return void req.end(payload);
    // No Content-Length: the size is only known by reading.
    for (let at = 0; at < payload.length; at += 64 * 1024) req.write(payload.slice(at, at + 64 * 1024));
    req.end();
  });
}
