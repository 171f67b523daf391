// Capacity at a latency target: how many 2026-07-28 requests per second one
// kind of request (a list page, a read, a search) sustains while its p99
// stays within P99_TARGET_MS, found by ramping the number of clients. Run
// against one process and against nginx in front of three replicas
// (deploy/nginx/folder-mcp.conf, as `npm run test:cluster` runs it). The
// load generator shares the machine with the servers.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clusterMissing, freePort, startNginx, startReplica, type Replica } from '../test/cluster-helpers.ts';
import { Loose, type LooseResult } from './client.ts';
import type { SizeContext } from './context.ts';
import { summarize } from './stats.ts';

export const P99_TARGET_MS = 50;
/** Clients at once, step by step; the ramp stops after two steps in a row over the target that added no throughput. */
const LEVELS = [1, 2, 4, 8, 16, 32];
const PIN = { versionNegotiation: { mode: { pin: '2026-07-28' as const } } };

export type CapacityKind = 'list' | 'read' | 'search';
export const CAPACITY_KINDS: readonly CapacityKind[] = ['list', 'read', 'search'];

export interface CapacityStep {
  clients: number;
  requests: number;
  errors: number;
  perSecond: number;
  p50: number;
  p99: number;
}

export interface CapacityCurve {
  kind: CapacityKind;
  steps: CapacityStep[];
  /** The step with the most requests per second among those whose p99 is within the target; null when none is. */
  best: CapacityStep | null;
}

export interface CapacityRun {
  target: string;
  replicas: number;
  curves: CapacityCurve[];
  /** Each replica's RSS after the ramps (MiB). */
  rssMiB: (number | null)[];
}

/** What the capacity ramps ask: folders to list, small files to read, a word to search for. */
export interface CapacityWork {
  lists: string[];
  reads: string[];
  needle: string;
}

function requestOf(kind: CapacityKind, w: CapacityWork, i: number): { method: string; params: Record<string, unknown> } {
  switch (kind) {
    case 'list':
      return { method: 'resources/list', params: { prefix: w.lists[i % w.lists.length]! } };
    case 'read':
      return { method: 'resources/read', params: { uri: w.reads[i % w.reads.length]! } };
    case 'search':
      return { method: 'tools/call', params: { name: 'search', arguments: { query: w.needle } } };
  }
}

type Ask = (method: string, params: Record<string, unknown>) => Promise<LooseResult>;

async function clientsOf(url: string, n: number): Promise<{ asks: Ask[]; close(): Promise<void> }> {
  const clients = await Promise.all(
    Array.from({ length: n }, async () => {
      const client = new Client({ name: 'folder-mcp-bench', version: '0' }, PIN);
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      return client;
    }),
  );
  return {
    asks: clients.map((client) => (method, params) => client.request({ method, params } as never, Loose as never, { timeout: 120_000 } as never)),
    close: async () => void (await Promise.all(clients.map((c) => c.close()))),
  };
}

/** `clients` clients send `kind` back to back for `ms` (after a short unmeasured start). */
async function step(asks: Ask[], kind: CapacityKind, w: CapacityWork, ms: number): Promise<CapacityStep> {
  const samples: number[] = [];
  let errors = 0;
  let next = 0;
  const warmUntil = performance.now() + Math.min(300, ms / 5);
  const end = warmUntil + ms;
  let measuredFrom = 0;
  await Promise.all(
    asks.map(async (ask) => {
      while (performance.now() < end) {
        const { method, params } = requestOf(kind, w, next++);
        const t0 = performance.now();
        try {
          await ask(method, params);
          if (t0 >= warmUntil) {
            samples.push(performance.now() - t0);
            measuredFrom ||= t0;
          }
        } catch {
          errors++;
        }
      }
    }),
  );
  const wall = performance.now() - (measuredFrom || warmUntil);
  const stat = summarize(samples);
  return { clients: asks.length, requests: samples.length, errors, perSecond: (samples.length / wall) * 1000, p50: stat.p50, p99: stat.p99 };
}

/** Ramps each kind against `url`: the highest requests/s with p99 within P99_TARGET_MS. */
export async function rampCapacity(url: string, w: CapacityWork, stepMs: number, log: (line: string) => void, label: string): Promise<CapacityCurve[]> {
  const { asks, close } = await clientsOf(url, LEVELS.at(-1)!);
  try {
    const curves: CapacityCurve[] = [];
    for (const kind of CAPACITY_KINDS) {
      const steps: CapacityStep[] = [];
      let over = 0;
      let most = 0;
      for (const level of LEVELS) {
        const s = await step(asks.slice(0, level), kind, w, stepMs);
        steps.push(s);
        log(`  capacity ${label} ${kind}: ${level} clients, ${s.perSecond.toFixed(0)} req/s, p99 ${s.p99.toFixed(1)} ms${s.errors ? `, ${s.errors} errors` : ''}`);
        // Past the target, more clients only queue: stop after two such steps that brought no more throughput
        // (so the table still shows how many requests/s the target saturates at).
        const grew = s.perSecond > most * 1.1;
        most = Math.max(most, s.perSecond);
        over = (s.p99 > P99_TARGET_MS || s.errors > 0) && !grew ? over + 1 : 0;
        if (over >= 2) break;
      }
      const within = steps.filter((s) => s.p99 <= P99_TARGET_MS && s.errors === 0);
      const best = within.reduce<CapacityStep | null>((a, s) => (a === null || s.perSecond > a.perSecond ? s : a), null);
      curves.push({ kind, steps, best });
    }
    return curves;
  } finally {
    await close();
  }
}

export function rssOf(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Math.round(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/**
 * Three replicas of the bench tree (each on its own copy of the warm index),
 * behind nginx with the shipped config; the same ramps through nginx. A
 * string when nginx is not installed (the reason the row is skipped).
 */
export async function clusterCapacity(ctx: SizeContext, w: CapacityWork, stepMs: number): Promise<CapacityRun | string> {
  const missing = clusterMissing(['nginx']);
  if (missing) return missing;
  const dir = join(ctx.work, 'capacity-cluster');
  mkdirSync(join(dir, 'nginx'), { recursive: true });
  writeFileSync(join(dir, 'cursor-key'), `${'k'.repeat(32)}\n`);
  const replicas: Replica[] = [];
  let nginx: Awaited<ReturnType<typeof startNginx>> | undefined;
  try {
    const ports = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    for (const [i, id] of ['r1', 'r2', 'r3'].entries()) {
      const db = join(dir, `${id}.db`);
      copyFileSync(ctx.db, db);
      for (const suffix of ['-wal', '-shm']) if (existsSync(ctx.db + suffix)) copyFileSync(ctx.db + suffix, db + suffix);
      replicas.push(
        await startReplica({
          id,
          port: ports[i]!,
          folder: ctx.root,
          db,
          args: ['--watcher', 'none', '--log-level', 'info', '--cursor-key-file', join(dir, 'cursor-key')],
        }),
      );
    }
    // Settled as the one-process run is: the start's check against the disk done, the content index loaded.
    for (const replica of replicas) {
      await replica.waitForOutput(/index checked against the disk/, 60_000 + ctx.tree.size * 0.5);
      await replica.waitForOutput(/content index: \d+ (text )?documents/, 60_000 + ctx.tree.size * 0.5);
    }
    nginx = await startNginx(join(dir, 'nginx'), replicas.map((r) => r.port), ports[3]!);
    // Conversions are cached in each index: read every file once through each replica, untimed.
    for (const replica of replicas) {
      const { asks, close } = await clientsOf(replica.url, 1);
      for (const uri of w.reads) await asks[0]!('resources/read', { uri });
      await close();
    }
    const curves = await rampCapacity(nginx.url, w, stepMs, ctx.log, 'nginx + 3 replicas');
    return { target: 'nginx + 3 replicas', replicas: 3, curves, rssMiB: replicas.map((r) => rssOf(r.child.pid)) };
  } finally {
    await nginx?.stop('SIGTERM');
    await Promise.all(replicas.map((r) => r.stop('SIGTERM')));
  }
}
