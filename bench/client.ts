import { Client as V2Client } from '@modelcontextprotocol/client';
import { StdioClientTransport as V2StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
export const SERVER_FILESYSTEM = fileURLToPath(
  new URL('../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url),
);

/** Keeps every field of a result: the SDK's own result schemas strip extension fields. */
export const Loose = z.looseObject({});
export type LooseResult = Record<string, unknown>;

export interface Conn {
  client: Client | V2Client;
  pid: number;
  stderr(): string;
  request(method: string, params?: Record<string, unknown>): Promise<LooseResult>;
  /** Server capabilities as sent on the wire (the SDK client strips unknown keys from its own copy). */
  capabilities: LooseResult;
  close(): Promise<void>;
}

/** Spawns a stdio MCP server (`node script args...`) and connects the SDK Client, as a user's client would. */
export async function spawnServer(script: string, args: string[], node = process.execPath, env?: Record<string, string>): Promise<Conn> {
  const transport = new StdioClientTransport({ command: node, args: [script, ...args], stderr: 'pipe', ...(env ? { env } : {}) });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-50_000);
  });
  let capabilities: LooseResult = {};
  // Peek at the raw initialize result: the Client keeps only the capabilities it knows.
  const onmessage = () => transport.onmessage;
  const client = new Client({ name: 'folder-mcp-bench', version: '0.0.0' }, { capabilities: {} });
  const connecting = client.connect(transport);
  const inner = onmessage();
  if (inner) {
    transport.onmessage = (message) => {
      const result = (message as { result?: { capabilities?: LooseResult } }).result;
      if (result?.capabilities && Object.keys(capabilities).length === 0) capabilities = result.capabilities;
      inner(message);
    };
  }
  await connecting;
  if (Object.keys(capabilities).length === 0) capabilities = (client.getServerCapabilities() ?? {});
  return {
    client,
    pid: transport.pid ?? -1,
    stderr: () => stderr,
    request: (method, params) =>
      client.request({ method, params }, Loose, { timeout: 600_000 }),
    capabilities,
    close: () => client.close(),
  };
}

/**
 * How a bench client connects: `legacy` is the v1 SDK client (2025-11-25,
 * initialize); `modern` the v2 client pinned to 2026-07-28; `auto` the v2
 * client negotiating (it probes with server/discover on a throw-away process
 * first).
 */
export type Era = 'legacy' | 'modern' | 'auto';

/** Spawns a stdio server and connects the v2 SDK client in the given mode. */
export async function spawnServerV2(script: string, args: string[], era: 'modern' | 'auto'): Promise<Conn> {
  const transport = new V2StdioClientTransport({ command: process.execPath, args: [script, ...args], stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-50_000);
  });
  const client = new V2Client(
    { name: 'folder-mcp-bench', version: '0.0.0' },
    { versionNegotiation: { mode: era === 'auto' ? 'auto' : { pin: '2026-07-28' } } },
  );
  await client.connect(transport);
  return {
    client,
    pid: transport.pid ?? -1,
    stderr: () => stderr,
    request: (method, params) =>
      client.request({ method, params } as never, Loose as never, { timeout: 600_000 } as never),
    capabilities: (client.getServerCapabilities() ?? {}),
    close: () => client.close(),
  };
}

/** Starts folder-mcp on `root` with the given extra options (info logs on stderr, for `settled`). */
export function spawnFolderMcp(root: string, db: string, extra: string[] = [], era: Era = 'legacy'): Promise<Conn> {
  const args = ['--db', db, '--log-level', 'info', ...extra, root];
  return era === 'legacy' ? spawnServer(CLI, args) : spawnServerV2(CLI, args, era);
}

/** A Node.js binary and the SQLite driver folder-mcp uses on it (bench/scenarios/drivers.ts). */
export interface Runtime {
  node: string;
  driver: 'node' | 'better-sqlite3';
}

/** folder-mcp on another Node.js, its driver forced, with `env` added to this process's environment. */
export function spawnOn(runtime: Runtime, root: string, db: string, extra: string[] = [], env: Record<string, string> = {}): Promise<Conn> {
  const args = ['--db', db, '--log-level', 'info', '--sqlite-driver', runtime.driver, ...extra, root];
  return spawnServer(CLI, args, runtime.node, { ...(process.env as Record<string, string>), ...env });
}

/** What the server does in the background after start, as its info log lines report it. */
export interface Settled {
  /** Check of the index against the disk after start-up: what changed during a cold scan, or a diff of the tree. */
  reconcileMs: number | null;
  /** After a cold scan, the check looked only at the paths the scan's watches named (true), or diffed the whole tree (false). */
  fromScanWatches: boolean | null;
  /** Full-text content index build (with the search tool). */
  contentIndexMs: number | null;
  /** Spawn (or `since`) until both were logged. */
  settledMs: number | null;
}

/**
 * Waits until the server's background work after start-up is done, so that
 * steady-state timings are not measured against a reconcile or a content
 * index build running alongside. Gives up after `timeoutMs`.
 */
export async function settled(conn: Conn, since: number, timeoutMs: number): Promise<Settled> {
  const hasSearch = await conn
    .request('tools/list', {})
    .then((r) => (r.tools as { name: string }[]).some((t) => t.name.endsWith('search')))
    .catch(() => false);
  const deadline = performance.now() + timeoutMs;
  const num = (re: RegExp) => {
    const m = re.exec(conn.stderr());
    return m ? Number(m[1]) : null;
  };
  for (;;) {
    const reconcileMs = num(/index checked against the disk in (\d+) ms/);
    const fromScanWatches = reconcileMs === null ? null : /index checked against the disk in \d+ ms \(\d+ path\(s\) changed during the scan\)/.test(conn.stderr());
    const contentIndexMs = num(/content index: \d+ (?:text )?documents checked in (\d+) ms/);
    const done = reconcileMs !== null && (contentIndexMs !== null || !hasSearch);
    if (done || performance.now() > deadline) {
      return { reconcileMs, fromScanWatches, contentIndexMs, settledMs: done ? performance.now() - since : null };
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** How long to wait for background work on a tree of `size` files. */
export function settleTimeout(size: number): number {
  return 30_000 + size * 0.3;
}

/** Peak resident set (VmHWM) of a process in MiB, or null where /proc is not there. */
export function peakRssMiB(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /VmHWM:\s+(\d+) kB/.exec(status);
    return match ? Math.round(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** Clock ticks a second, as /proc counts CPU time. */
let clockTicks: number | undefined;

/** utime + stime of a process, in seconds (/proc/PID/stat, clock ticks). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

/** inotify watches a process holds (lines `inotify wd:` across its fdinfo), or null without /proc. */
export function inotifyWatches(pid: number): number | null {
  try {
    let n = 0;
    for (const fd of readdirSync(`/proc/${pid}/fdinfo`)) {
      try {
        const text = readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
        for (const line of text.split('\n')) if (line.startsWith('inotify wd:')) n++;
      } catch {
        // fd closed meanwhile
      }
    }
    return n;
  } catch {
    return null;
  }
}

/** Pages through resources/list to the end; returns the item count and pages. */
export async function listAll(conn: Conn, params: Record<string, unknown> = {}): Promise<{ items: number; pages: number; uris: string[] }> {
  const uris: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const result = await conn.request('resources/list', cursor ? { ...params, cursor } : params);
    for (const r of result.resources as { uri: string }[]) uris.push(r.uri);
    cursor = result.nextCursor as string | undefined;
    pages++;
  } while (cursor);
  return { items: uris.length, pages, uris };
}
