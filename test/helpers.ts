import { Client, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport as V1Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { spawnSync } from 'node:child_process';
import { chownSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { after, before } from 'node:test';
import { z } from 'zod';
import { tempDir, writeTree } from './basics.ts';
import { startInProcess } from './in-process.ts';

export * from './basics.ts';

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** Accepts any result and keeps every field: the SDK's own schemas strip non-spec fields. */
export const Loose = z.looseObject({});
export type LooseResult = Record<string, unknown>;

/**
 * How a test client talks to the server:
 * - `legacy`: the v1 SDK client (`@modelcontextprotocol/sdk`), 2025-11-25 with
 *   the initialize handshake, as most deployed hosts speak today; it passes
 *   error codes through as sent (-32002 for not found);
 * - `modern`: the v2 client pinned to 2026-07-28 (server/discover, the
 *   per-request envelope, subscriptions/listen);
 * - `auto`: the v2 client negotiating (it must land on the modern era).
 */
export type Era = 'legacy' | 'modern' | 'auto';

/** The eras every protocol suite runs against. */
export const ERAS: readonly Era[] = ['legacy', 'modern'];

/** A result without what only the modern era adds (serverInfo `_meta`, cache hints): for comparing the eras. */
export function eraNeutral(result: LooseResult): LooseResult {
  const { _meta, ttlMs, cacheScope, ...rest } = result;
  return rest;
}

/** Resource not found, as each era's spec says: -32002 on 2025-11-25, -32602 on 2026-07-28 (SEP-2164). */
export function notFoundCode(era: Era): number {
  return era === 'legacy' ? -32002 : -32602;
}

export interface Connected {
  era: Era;
  client: Client | V1Client;
  stderr: () => string;
  /** The server process's pid (for RSS and signals). */
  pid: number | undefined;
  /** Sends a request and returns the raw result, every field kept. */
  request(method: string, params?: Record<string, unknown>, options?: RequestOptions): Promise<LooseResult>;
  /** Calls `handler` for each notification of `method`, with its params. */
  onNotification(method: string, handler: (params: LooseResult) => void): void;
  /**
   * Asks to hear `updated` for `uri`: resources/subscribe on the legacy era, a
   * subscriptions/listen stream naming it on the modern one.
   */
  subscribe(uri: string): Promise<void>;
  /** Undoes subscribe: resources/unsubscribe, or closing that listen stream. */
  unsubscribe(uri: string): Promise<void>;
  /** Asks to hear list_changed: nothing to do on the legacy era (every client hears it), a listen stream on the modern one. */
  listenListChanged(): Promise<void>;
  close(): Promise<void>;
}

export interface RequestOptions {
  onprogress?: (progress: { progress: number; total?: number; message?: string }) => void;
  timeout?: number;
}

/** The v1 client prefixes "MCP error <code>: " to an error's message; tests compare the message as sent. */
function unprefixed(error: unknown): never {
  const e = error as { code?: unknown; message?: unknown };
  const prefix = `MCP error ${String(e.code)}: `;
  if (typeof e.message === 'string' && e.message.startsWith(prefix)) e.message = e.message.slice(prefix.length);
  throw error;
}

/** Spawns the built CLI over real stdio and connects an SDK client of the given era (the FOLDER_MCP_TEST_ERA default, else legacy). */
export async function connect(
  args: string[],
  options: {
    env?: Record<string, string>;
    era?: Era;
    /** Another build of the bin (a copy with broken packages). */
    cli?: string;
    /** Another Node.js binary to run it with (another SQLite driver: test/e2e/sqlite-drivers.e2e.test.ts). */
    node?: string;
    user?: Unprivileged;
  } = {},
): Promise<Connected> {
  const era = options.era ?? defaultEra();
  const params = {
    command: options.node ?? process.execPath,
    args: [...(options.user ? dropPrivileges(options.user) : []), options.cli ?? CLI, ...args],
    stderr: 'pipe' as const,
    env: { ...(process.env as Record<string, string>), ...options.env },
  };
  let stderr = '';
  const onStderr = (chunk: Buffer) => {
    stderr += chunk.toString();
  };
  const transport = era === 'legacy' ? new V1StdioClientTransport(params) : new StdioClientTransport(params);
  transport.stderr?.on('data', onStderr);
  return attachClient(era, transport, {
    stderr: () => stderr,
    pid: () => transport.pid ?? undefined,
    close: async () => {},
  });
}

/** A user to run the server as, when the tests run as root (who reads a folder whatever its mode). */
export interface Unprivileged {
  uid: number;
  gid: number;
}

/**
 * The user the unreadable-folder tests run the server as: as root, nobody
 * (65534), since root ignores a mode of 000 when reading; otherwise none
 * (the test's own chmod applies to the test's own user). The folders it
 * serves must be reachable by that user (see shareWith).
 */
export function unprivilegedUser(): Unprivileged | undefined {
  return process.getuid?.() === 0 && nobodyCanRunServer() ? NOBODY : undefined;
}

const NOBODY: Unprivileged = { uid: 65534, gid: 65534 };
let nobodyProbe: boolean | undefined;

/**
 * Whether nobody can run this Node.js and read the built server: not when
 * either lies under a folder only root may enter (a checkout in a 0700
 * temporary folder, a Node.js in /root/.npm). Probed once, by trying.
 */
function nobodyCanRunServer(): boolean {
  nobodyProbe ??=
    spawnSync(process.execPath, [...dropPrivileges(NOBODY), '-e', `require('node:fs').accessSync(${JSON.stringify(CLI)}, 4)`], { stdio: 'ignore', timeout: 30_000 }).status === 0;
  return nobodyProbe;
}

/**
 * Why a test that needs a folder unreadable to the server cannot run here, or
 * false: as root, the server must run as nobody, and nobody must be able to
 * run it (see nobodyCanRunServer).
 */
export function unreadableFoldersSkip(): string | false {
  if (process.getuid?.() !== 0) return false;
  return nobodyCanRunServer() ? false : `as root, the server runs as nobody to meet mode 000, and nobody cannot run ${process.execPath} on ${CLI} here (a folder on the way is closed to others)`;
}

/** Lets `user` reach `dir` (a temp folder, mode 700): it becomes theirs. Nothing to do without one. */
export function shareWith(dir: string, user: Unprivileged | undefined): void {
  if (user) chownSync(dir, user.uid, user.gid);
}

/** Node options that drop root for `user` before the CLI loads (no file: a data: URL imported first). */
function dropPrivileges(user: Unprivileged): string[] {
  const code = `process.setgroups([]);process.setgid(${user.gid});process.setuid(${user.uid});`;
  return ['--import', `data:text/javascript,${encodeURIComponent(code)}`];
}

/**
 * The server in this process (test/in-process.ts: the binary's start-up and
 * stdio wire over in-memory streams) and an SDK client of the given era: what
 * the era and watcher matrices use. No pid: a test that signals or measures
 * the server process uses connect.
 */
export async function connectInProcess(
  args: string[],
  options: { env?: Record<string, string>; era?: Era } = {},
): Promise<Connected> {
  const server = startInProcess(args, options.env);
  return attachClient(options.era ?? defaultEra(), server.transport as V1Transport & Transport, {
    stderr: server.stderr,
    pid: () => undefined,
    close: server.close,
  });
}

function defaultEra(): Era {
  return (process.env.FOLDER_MCP_TEST_ERA as Era | undefined) ?? 'legacy';
}

/**
 * Connects an SDK client of `era` over `transport` and wraps it as a
 * Connected; `server` is what the transport does not tell: the server's
 * stderr, its pid, and what closing it takes after the client has closed.
 */
export async function attachClient(
  era: Era,
  transport: V1Transport & Transport,
  server: { stderr: () => string; pid: () => number | undefined; close: () => Promise<void> },
): Promise<Connected> {
  /** A server that dies before it answers: say what it wrote. */
  const withStderr = (error: Error): never => {
    error.message += `; the server's stderr:\n${server.stderr()}`;
    throw error;
  };
  if (era === 'legacy') {
    const client = new V1Client({ name: 'folder-mcp-test', version: '0.0.0' });
    await client.connect(transport).catch(withStderr);
    return {
      era,
      client,
      stderr: server.stderr,
      pid: server.pid(),
      request: (method, p, o) => (client.request({ method, params: p }, Loose, o) as Promise<LooseResult>).catch(unprefixed),
      onNotification: (method, handler) =>
        client.setNotificationHandler(z.object({ method: z.literal(method), params: Loose.optional() }) as never, ((n: { params?: LooseResult }) =>
          handler(n.params ?? {}))),
      subscribe: async (uri) => void (await client.request({ method: 'resources/subscribe', params: { uri } }, Loose)),
      unsubscribe: async (uri) => void (await client.request({ method: 'resources/unsubscribe', params: { uri } }, Loose)),
      listenListChanged: async () => {},
      close: async () => {
        await client.close();
        await server.close();
      },
    };
  }
  const client = new Client(
    { name: 'folder-mcp-test', version: '0.0.0' },
    { versionNegotiation: { mode: era === 'auto' ? 'auto' : { pin: '2026-07-28' } } },
  );
  await client.connect(transport).catch(withStderr);
  const listens = new Map<string, { close(): Promise<void> }>();
  return {
    era,
    client,
    stderr: server.stderr,
    pid: server.pid(),
    request: (method, p, o) => client.request({ method, params: p } as never, Loose as never, o as never),
    onNotification: (method, handler) =>
      client.setNotificationHandler(method as never, ((n: { params?: LooseResult }) => handler(n.params ?? {})) as never),
    subscribe: async (uri) => {
      if (!listens.has(uri)) listens.set(uri, await client.listen({ resourceSubscriptions: [uri] }));
    },
    unsubscribe: async (uri) => {
      await listens.get(uri)?.close();
      listens.delete(uri);
    },
    listenListChanged: async () => {
      if (!listens.has('list_changed')) listens.set('list_changed', await client.listen({ resourcesListChanged: true }));
    },
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

/** What a suite's tree holds: path -> content (a path ending in '/' is a folder), or a function that writes it. */
export type TreeFiles = Record<string, string | Uint8Array> | ((root: string) => void);

/** How `serve` starts a server: `connect`, or a wrapper of it (connectWithNotes). */
export type Connector<C extends Connected> = (args: string[], options: { era?: Era; env?: Record<string, string> }) => Promise<C>;

export interface ServeOptions<C extends Connected> {
  era?: Era;
  env?: Record<string, string>;
  /** Defaults to `connectInProcess`; `connect` runs the built binary. */
  connect?: Connector<C>;
}

export interface TempTree {
  /** The served folder: a fresh temp dir holding the files given. */
  readonly root: string;
  /** A second temp dir for what is not served (the index file). */
  readonly state: string;
  /** The root's collection URI (with its trailing slash). */
  readonly rootUri: string;
  /** The URI of a path relative to the root, each segment percent-encoded. */
  uriOf(rel: string): string;
  /**
   * One more server on this tree, started before the describe's tests (after
   * the servers asked for earlier) and closed after them, before the dirs go.
   */
  serve<C extends Connected = Connected>(args: (dirs: { root: string; state: string }) => string[], options?: ServeOptions<C>): { readonly conn: C };
}

export interface ServedTree<C extends Connected = Connected> extends TempTree {
  readonly conn: C;
}

function need<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('tempTree: used outside the tests of its describe block');
  return value;
}

/**
 * The setup the end-to-end suites share, as hooks of the enclosing
 * `describe`: before its tests, a temp tree written from `files` and a state
 * dir; after them, every server `serve` started closed, then both dirs
 * removed. For the suites that start their servers in the tests themselves.
 */
export function tempTree(files: TreeFiles): TempTree {
  let root: ReturnType<typeof tempDir> | undefined;
  let state: ReturnType<typeof tempDir> | undefined;
  const servers: Connected[] = [];
  before(() => {
    root = tempDir();
    state = tempDir('folder-mcp-state-');
    if (typeof files === 'function') files(root.path);
    else writeTree(root.path, files);
  });
  after(async () => {
    for (const conn of servers.splice(0).reverse()) await conn.close();
    root?.cleanup();
    state?.cleanup();
  });
  const tree: TempTree = {
    get root() {
      return need(root).path;
    },
    get state() {
      return need(state).path;
    },
    get rootUri() {
      return pathToFileURL(need(root).path).href + '/';
    },
    uriOf: (rel) => tree.rootUri + rel.split('/').map(encodeURIComponent).join('/'),
    serve<C extends Connected = Connected>(args: (dirs: { root: string; state: string }) => string[], options: ServeOptions<C> = {}) {
      let conn: C | undefined;
      const { connect: start = connectInProcess as unknown as Connector<C>, ...rest } = options;
      before(async () => {
        conn = await start(args({ root: tree.root, state: tree.state }), rest);
        servers.push(conn);
      });
      return {
        get conn() {
          return need(conn);
        },
      };
    },
  };
  return tree;
}

/**
 * The setup most end-to-end suites share: `tempTree(files)` and the built
 * server on it (`args` says how), started before the describe's tests and
 * closed after them.
 */
export function serveTree<C extends Connected = Connected>(
  files: TreeFiles,
  args: (dirs: { root: string; state: string }) => string[],
  options: ServeOptions<C> = {},
): ServedTree<C> {
  const tree = tempTree(files);
  const server = tree.serve(args, options);
  return Object.defineProperty(tree, 'conn', { get: () => server.conn, enumerable: true }) as ServedTree<C>;
}

/** Pages through a list method to the end, returning every item and the pages seen. */
export async function listAll(
  conn: Connected,
  method: string,
  key: string,
  params: Record<string, unknown> = {},
): Promise<{ items: LooseResult[]; pages: number }> {
  const items: LooseResult[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const result = await conn.request(method, cursor ? { ...params, cursor } : params);
    items.push(...(result[key] as LooseResult[]));
    cursor = result.nextCursor as string | undefined;
    pages++;
    if (pages > 100_000) throw new Error('pagination does not end');
  } while (cursor);
  return { items, pages };
}

/** Expects a JSON-RPC error with `code` (and a message containing `message`). */
export async function rejectsWith(promise: Promise<unknown>, code: number, message?: string | RegExp): Promise<{ code: number; message: string; data?: unknown }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { code: number; message: string; data?: unknown };
    if (e.code !== code) throw new Error(`expected error code ${code}, got ${e.code}: ${e.message}`);
    if (message !== undefined) {
      const ok = typeof message === 'string' ? e.message.includes(message) : message.test(e.message);
      if (!ok) throw new Error(`expected message ${String(message)}, got: ${e.message}`);
    }
    return e;
  }
  throw new Error(`expected error ${code}, but the request succeeded`);
}

