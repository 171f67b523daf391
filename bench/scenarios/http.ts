// Streamable HTTP under load: one process answering 50 concurrent clients,
// beside the same requests over stdio; then RSS over many connect/disconnect
// cycles. Loopback only; every count is bounded.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { CLI, Loose, type LooseResult } from '../client.ts';
import { isSkipped, sizeLabel, uriOf, type Scenario, type SizeContext, type Skipped } from '../context.ts';
import { fmtMs, summarize, type Stat } from '../stats.ts';

const CLIENTS = 50;
const PIN = { versionNegotiation: { mode: { pin: '2026-07-28' as const } } };

type Kind = 'list' | 'read' | 'find' | 'search';
const KINDS: readonly Kind[] = ['list', 'read', 'find', 'search'];

export interface LoadRun {
  transport: string;
  clients: number;
  requests: number;
  errors: number;
  firstError?: string;
  wallMs: number;
  perSecond: number;
  all: Stat;
  byKind: Record<Kind, Stat>;
  rssBeforeMiB: number | null;
  rssAfterMiB: number | null;
  peakMiB: number | null;
}

export interface CyclesRun {
  cycles: number;
  errors: number;
  wallMs: number;
  rssBeforeMiB: number | null;
  /** After the first tenth of the cycles (the heap has grown to its working size by then), and after half. */
  rssWarmMiB: number | null;
  rssHalfMiB: number | null;
  rssAfterMiB: number | null;
}

export interface HttpResult {
  http: LoadRun;
  stdio: LoadRun;
  cycles: CyclesRun;
}

type Ask = (method: string, params: Record<string, unknown>) => Promise<LooseResult>;

/** The mixed workload: the same sequence of requests whatever the transport. */
export interface Workload {
  lists: string[];
  reads: string[];
  globs: string[];
  needle: string;
}

function requestFor(w: Workload, i: number): { kind: Kind; method: string; params: Record<string, unknown> } {
  const kind = KINDS[i % KINDS.length]!;
  const n = Math.floor(i / KINDS.length);
  switch (kind) {
    case 'list':
      return { kind, method: 'resources/list', params: { prefix: w.lists[n % w.lists.length]! } };
    case 'read':
      return { kind, method: 'resources/read', params: { uri: w.reads[n % w.reads.length]! } };
    case 'find':
      return { kind, method: 'tools/call', params: { name: 'find', arguments: { glob: w.globs[n % w.globs.length]! } } };
    case 'search':
      return { kind, method: 'tools/call', params: { name: 'search', arguments: { query: w.needle } } };
  }
}

/** Collections and small documents to ask about, from the index itself (the first pages of a few folders). */
export async function workload(ctx: SizeContext, ask: Ask): Promise<Workload> {
  const lists: string[] = [];
  const reads: string[] = [];
  for (const dir of ['src', 'docs', 'lib', 'test', ctx.tree.deepDir, ...ctx.tree.siblingDirs]) {
    const uri = uriOf(ctx, dir, true);
    const page = await ask('resources/list', { prefix: uri }).catch(() => ({ resources: [] }));
    const items = page.resources as { uri: string; resourceType?: string; size?: number }[];
    if (items.length === 0) continue;
    lists.push(uri);
    for (const item of items) {
      if (item.resourceType === 'collection') lists.push(item.uri);
      else if ((item.size ?? 0) < 64 * 1024) reads.push(item.uri);
    }
  }
  if (lists.length === 0 || reads.length === 0) throw new Error('the tree has no folders or small files to ask about');
  const w = { lists: lists.slice(0, 50), reads: reads.slice(0, 200), globs: ['src/**/*.ts', 'docs/**/*.md', '**/*.json'], needle: ctx.tree.needle };
  // Untimed: format conversions are cached in the index, so whichever transport ran first would pay for them.
  for (const uri of w.reads) await ask('resources/read', { uri });
  return w;
}

/** `clients` askers share `total` requests, each sending its next one when the last is answered. */
async function drive(transport: string, asks: Ask[], total: number, w: Workload, pid: number): Promise<LoadRun> {
  const samples: number[] = [];
  const byKind: Record<Kind, number[]> = { list: [], read: [], find: [], search: [] };
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const rssBeforeMiB = rssMiB(pid);
  const t0 = performance.now();
  await Promise.all(
    asks.map(async (ask) => {
      for (let i = next++; i < total; i = next++) {
        const { kind, method, params } = requestFor(w, i);
        const start = performance.now();
        try {
          await ask(method, params);
          const ms = performance.now() - start;
          samples.push(ms);
          byKind[kind].push(ms);
        } catch (error) {
          errors++;
          firstError ??= (error as Error).message.slice(0, 160);
        }
      }
    }),
  );
  const wallMs = performance.now() - t0;
  return {
    transport,
    clients: asks.length,
    requests: total,
    errors,
    ...(firstError && { firstError }),
    wallMs,
    perSecond: (samples.length / wallMs) * 1000,
    all: summarize(samples),
    byKind: Object.fromEntries(KINDS.map((k) => [k, summarize(byKind[k])])) as Record<Kind, Stat>,
    rssBeforeMiB,
    rssAfterMiB: rssMiB(pid),
    peakMiB: peakMiB(pid),
  };
}

export interface Served {
  child: ChildProcess;
  url: string;
  stderr(): string;
  stop(): Promise<number | null>;
}

/**
 * `folder-mcp --http 127.0.0.1:0` on the warm index, once its background
 * work (reconcile, content index) is done, or `settleMs` has passed (then
 * it is stopped and this throws).
 */
export async function serveHttp(ctx: SizeContext, settleMs = 60_000 + ctx.tree.size * 0.5): Promise<Served> {
  const child = spawn(process.execPath, [CLI, '--http', '127.0.0.1:0', '--db', ctx.db, '--watcher', 'none', '--log-level', 'info', ctx.root], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, FOLDER_MCP_TOKEN: '' },
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-50_000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const deadline = performance.now() + settleMs;
  for (;;) {
    const url = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(stderr)?.[0];
    if (url && /index checked against the disk/.test(stderr) && /content index: \d+ (text )?documents/.test(stderr)) {
      return { child, url, stderr: () => stderr, stop: () => (child.kill('SIGTERM'), exited) };
    }
    if (child.exitCode !== null || performance.now() > deadline) {
      // Not left behind: a live child keeps the bench process from exiting.
      child.kill('SIGKILL');
      throw new Error(`http server did not settle:\n${stderr.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function modernHttpClient(url: string): Promise<Client> {
  const client = new Client({ name: 'folder-mcp-bench', version: '0' }, PIN);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

export function asker(client: Client): Ask {
  return (method, params) => client.request({ method, params } as never, Loose as never, { timeout: 120_000 } as never);
}

async function httpLoad(ctx: SizeContext, total: number): Promise<{ run: LoadRun; served: Served }> {
  const served = await serveHttp(ctx);
  try {
    const clients = await Promise.all(Array.from({ length: CLIENTS }, () => modernHttpClient(served.url)));
    const w = await workload(ctx, asker(clients[0]!));
    const run = await drive(`HTTP (${CLIENTS} clients, 1 process)`, clients.map(asker), total, w, served.child.pid!);
    await Promise.all(clients.map((c) => c.close()));
    return { run, served };
  } catch (error) {
    await served.stop();
    throw error;
  }
}

/** The same requests over stdio: one process, one client, 50 requests in flight. */
async function stdioLoad(ctx: SizeContext, total: number): Promise<LoadRun> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, '--db', ctx.db, '--watcher', 'none', '--log-level', 'info', ctx.root],
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-50_000)));
  const client = new Client({ name: 'folder-mcp-bench', version: '0' }, PIN);
  await client.connect(transport);
  try {
    const ask = asker(client);
    await ask('resources/list', {});
    const deadline = performance.now() + 60_000 + ctx.tree.size * 0.5;
    while (!(/index checked against the disk/.test(stderr) && /content index: \d+ (text )?documents/.test(stderr)) && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const w = await workload(ctx, ask);
    return await drive(`stdio (1 client, ${CLIENTS} in flight)`, Array.from({ length: CLIENTS }, () => ask), total, w, transport.pid!);
  } finally {
    await client.close();
  }
}

/**
 * Clients that come and go: half 2026-07-28 clients that open a listen stream
 * (a collection and list changes), list once and leave without closing it;
 * half 2025-11-25 clients that initialize, subscribe, list and leave. The
 * server's RSS before, once warm, and after.
 */
async function cycles(ctx: SizeContext, served: Served, n: number): Promise<CyclesRun> {
  const pid = served.child.pid!;
  const rssBeforeMiB = rssMiB(pid);
  let rssWarmMiB: number | null = null;
  let rssHalfMiB: number | null = null;
  let errors = 0;
  let next = 0;
  const dir = uriOf(ctx, 'src', true);
  const t0 = performance.now();
  const one = async (i: number) => {
    if (i % 2 === 0) {
      const client = await modernHttpClient(served.url);
      await client.listen({ resourceSubscriptions: [dir], resourcesListChanged: true });
      await client.request({ method: 'resources/list', params: { prefix: dir } } as never, Loose as never);
      await client.close();
    } else {
      const client = new V1Client({ name: 'folder-mcp-bench', version: '0' });
      await client.connect(new V1StreamableHTTPClientTransport(new URL(served.url)));
      await client.request({ method: 'resources/subscribe', params: { uri: dir } }, Loose);
      await client.request({ method: 'resources/list', params: { prefix: dir } }, Loose);
      await client.close();
    }
  };
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      for (let i = next++; i < n; i = next++) {
        await one(i).catch(() => errors++);
        if (i === Math.floor(n / 10)) rssWarmMiB = rssMiB(pid);
        if (i === Math.floor(n / 2)) rssHalfMiB = rssMiB(pid);
      }
    }),
  );
  const wallMs = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 1000));
  return { cycles: n, errors, wallMs, rssBeforeMiB, rssWarmMiB, rssHalfMiB, rssAfterMiB: rssMiB(pid) };
}

function procStatus(pid: number, field: string): number | null {
  try {
    const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Math.round(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}

const rssMiB = (pid: number) => procStatus(pid, 'VmRSS');
const peakMiB = (pid: number) => procStatus(pid, 'VmHWM');

export const http: Scenario<HttpResult> = {
  name: 'http',
  async run(ctx): Promise<HttpResult | Skipped> {
    const want = ctx.quick ? 10_000 : 100_000;
    if (ctx.tree.size !== want) return { skipped: `the HTTP load runs at ${sizeLabel(want)} files${ctx.quick ? ' (quick)' : ''}` };
    if (!existsSync(ctx.db)) return { skipped: 'no index from the cold scenario (run it first)' };
    const total = ctx.quick ? 2_000 : 20_000;
    const { run: httpRun, served } = await httpLoad(ctx, total);
    let cycleRun: CyclesRun;
    try {
      ctx.log(`[${ctx.tree.size}] http: ${httpRun.perSecond.toFixed(0)} req/s, ${httpRun.errors} errors; connect/disconnect cycles ...`);
      cycleRun = await cycles(ctx, served, ctx.quick ? 1_000 : 10_000);
    } finally {
      await served.stop();
    }
    ctx.log(`[${ctx.tree.size}] http: stdio side ...`);
    const stdioRun = await stdioLoad(ctx, total);
    return { http: httpRun, stdio: stdioRun, cycles: cycleRun };
  },
  tables(bySize) {
    const header = ['size', 'transport', 'requests', 'errors', 'req/s', 'p50', 'p99', 'list p50', 'read p50', 'find p50', 'search p50', 'RSS before → after (peak)'];
    const rows: string[][] = [];
    const cycleRows: string[][] = [];
    for (const { size, result: r } of bySize) {
      if (isSkipped(r)) {
        rows.push([sizeLabel(size), `n/a: ${r.skipped}`, ...Array(header.length - 2).fill('')]);
        continue;
      }
      for (const run of [r.http, r.stdio]) {
        rows.push([
          sizeLabel(size),
          run.transport,
          String(run.requests),
          String(run.errors),
          run.perSecond.toFixed(0),
          fmtMs(run.all.p50),
          fmtMs(run.all.p99),
          ...KINDS.map((k) => fmtMs(run.byKind[k].p50)),
          `${run.rssBeforeMiB ?? '?'} → ${run.rssAfterMiB ?? '?'} MiB (${run.peakMiB ?? '?'})`,
        ]);
      }
      const c = r.cycles;
      cycleRows.push([
        sizeLabel(size),
        String(c.cycles),
        String(c.errors),
        `${(c.wallMs / 1000).toFixed(1)} s`,
        `${c.rssBeforeMiB ?? '?'} MiB`,
        `${c.rssWarmMiB ?? '?'} MiB`,
        `${c.rssHalfMiB ?? '?'} MiB`,
        `${c.rssAfterMiB ?? '?'} MiB`,
      ]);
    }
    return [
      {
        title: `8. Streamable HTTP: ${CLIENTS} concurrent clients of one process vs the same requests over stdio (list with prefix, read, find, search)`,
        header,
        rows,
        note: 'Loopback; the load generator shares the machine. stdio serves one client per process: 50 stdio clients are 50 processes, each with its own RSS.',
      },
      {
        title: '9. HTTP clients coming and going: server RSS over connect / listen or subscribe / list / disconnect cycles',
        header: ['size', 'cycles', 'errors', 'wall', 'RSS before', 'RSS after 1/10', 'RSS after 1/2', 'RSS after'],
        rows: cycleRows,
        note: 'Half 2026-07-28 clients with a listen stream left open until they disconnect, half 2025-11-25 clients that subscribe; 10 at a time.',
      },
    ];
  },
};
