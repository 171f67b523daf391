import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inotifyWatches, listAll, peakRssMiB, settled, settleTimeout, spawnFolderMcp, type Conn } from '../client.ts';
import { isSkipped, sizeLabel, uriOf, type Scenario, type SizeContext } from '../context.ts';
import { fmtMs, summarize, type Stat } from '../stats.ts';

export const BACKENDS = ['chokidar', 'dirs', 'poll'] as const;
const BURST_DIR = 'bench-burst';
const PROBE_PREFIX = 'bench-live-';

export interface BackendResult {
  backend: string;
  skipped?: string;
  /** Spawn until the first change notification arrives (the watcher is up). */
  readyMs?: number | null;
  /** The server's own "watcher: X (...), ready in N ms" (start of the backend alone). */
  watcherStartMs?: number | null;
  /** Backend the server reports running (it may fall back). */
  running?: string;
  /** Write of a file in a subscribed collection until `notifications/resources/updated` at the client. */
  latency?: Stat | null;
  burstFiles?: number;
  /** Burst creation start until a full list under the burst dir equals the disk. */
  burstConvergeMs?: number | null;
  burstNotifications?: number;
  inotifyWatches?: number | null;
  peakRssMiB?: number | null;
}

export type WatchResult = Record<string, BackendResult>;

interface Seen {
  method: string;
  uri?: string;
  at: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(seen: Seen[], from: number, pred: (s: Seen) => boolean, timeoutMs: number): Promise<number | null> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const hit = seen.find((s) => s.at >= from && pred(s));
    if (hit) return hit.at - from;
    if (performance.now() > deadline) return null;
    await sleep(5);
  }
}

function cleanTree(ctx: SizeContext): void {
  rmSync(join(ctx.root, BURST_DIR), { recursive: true, force: true });
  const dir = join(ctx.root, ctx.tree.siblingDirs[0]);
  for (const name of readdirSync(dir)) if (name.startsWith(PROBE_PREFIX)) rmSync(join(dir, name), { force: true });
}

async function runBackend(ctx: SizeContext, backend: string): Promise<BackendResult> {
  const seen: Seen[] = [];
  const spawned = performance.now();
  const conn: Conn = await spawnFolderMcp(ctx.root, ctx.db, ['--watcher', backend]);
  conn.client.fallbackNotificationHandler = async (n) => {
    seen.push({ method: n.method, uri: (n.params as { uri?: string } | undefined)?.uri, at: performance.now() });
  };
  const dirRel = ctx.tree.siblingDirs[0];
  const dirAbs = join(ctx.root, dirRel);
  const dirUri = uriOf(ctx, dirRel, true);
  const updated = (s: Seen) => s.method === 'notifications/resources/updated' && s.uri === dirUri;
  try {
    await conn.request('resources/list', {});
    await conn.request('resources/subscribe', { uri: dirUri });
    // Probe until the watcher answers: its start-up on a big tree is part of what users wait for.
    let readyMs: number | null = null;
    const readyDeadline = performance.now() + (ctx.tree.size >= 1_000_000 ? 180_000 : 60_000);
    for (let i = 0; readyMs === null && performance.now() < readyDeadline; i++) {
      const t0 = performance.now();
      writeFileSync(join(dirAbs, `${PROBE_PREFIX}probe-${i}.txt`), `probe ${i}\n`);
      if ((await waitFor(seen, t0, updated, 2_000)) !== null) readyMs = performance.now() - spawned;
    }
    if (readyMs === null) return { backend, skipped: 'no notifications/resources/updated for a subscribed folder' };
    await settled(conn, spawned, settleTimeout(ctx.tree.size)); // latency in steady state, not against the start-up reconcile
    await sleep(500);
    const started = /watcher: (\w+) \([^)]*\), ready in (\d+) ms/.exec(conn.stderr());

    const latencies: number[] = [];
    const n = ctx.quick ? 8 : 25;
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      writeFileSync(join(dirAbs, `${PROBE_PREFIX}${i}.txt`), `latency ${i}\n`);
      const ms = await waitFor(seen, t0, updated, 10_000);
      if (ms !== null) latencies.push(ms);
      await sleep(250); // let each coalescing window close, so every write is timed alone
    }

    // Burst: many files at once; converged when a full list under the burst dir equals the disk.
    const burstFiles = ctx.quick ? 2_000 : 10_000;
    const perDir = 100;
    const burstUri = uriOf(ctx, BURST_DIR, true);
    const expected = burstFiles + burstFiles / perDir + 1;
    const b0 = performance.now();
    for (let d = 0; d < burstFiles / perDir; d++) {
      const dir = join(ctx.root, BURST_DIR, `d${d}`);
      mkdirSync(dir, { recursive: true });
      for (let f = 0; f < perDir; f++) writeFileSync(join(dir, `f${f}.txt`), `burst ${d} ${f}\n`);
    }
    let burstConvergeMs: number | null = null;
    const burstDeadline = b0 + 180_000;
    while (performance.now() < burstDeadline) {
      const { uris } = await listAll(conn, { prefix: burstUri });
      const under = uris.filter((u) => u.startsWith(burstUri)).length;
      if (under === expected) {
        burstConvergeMs = performance.now() - b0;
        break;
      }
      await sleep(100);
    }
    await sleep(1_000); // late notifications of the burst still count
    const burstNotifications = seen.filter((s) => s.at >= b0).length;
    return {
      backend,
      readyMs,
      watcherStartMs: started ? Number(started[2]) : null,
      running: started?.[1] ?? 'unknown',
      latency: latencies.length ? summarize(latencies) : null,
      burstFiles,
      burstConvergeMs,
      burstNotifications,
      inotifyWatches: inotifyWatches(conn.pid),
      peakRssMiB: peakRssMiB(conn.pid),
    };
  } finally {
    cleanTree(ctx);
    await sleep(1_500); // let the watcher take the removals into the index before the next backend
    await conn.close();
  }
}

export const watch: Scenario<WatchResult> = {
  name: 'watch',
  async run(ctx) {
    cleanTree(ctx);
    const probe = await spawnFolderMcp(ctx.root, ctx.db, ['--watcher', 'none']);
    const caps = probe.capabilities as { resources?: { subscribe?: boolean } };
    await probe.close();
    if (!caps.resources?.subscribe) return { skipped: 'the server does not declare resources.subscribe' };
    const out: WatchResult = {};
    for (const backend of ctx.backends) {
      ctx.log(`  watch: --watcher ${backend}`);
      try {
        out[backend] = await runBackend(ctx, backend);
      } catch (error) {
        out[backend] = { backend, skipped: `failed: ${(error as Error).message.slice(0, 120)}` };
      }
    }
    return out;
  },
  tables(bySize) {
    const header = ['size', 'backend', 'watcher start (log)', 'spawn→1st event', 'change→updated p50', 'p99', 'burst', 'converged', 'notifications', 'inotify watches', 'peak RSS'];
    const rows: string[][] = [];
    for (const { size, result: r } of bySize) {
      if (isSkipped(r)) {
        rows.push([sizeLabel(size), `n/a: ${r.skipped}`, ...Array(header.length - 2).fill('')]);
        continue;
      }
      for (const b of Object.values(r)) {
        if (b.skipped) {
          rows.push([sizeLabel(size), b.backend, `n/a: ${b.skipped}`, ...Array(header.length - 3).fill('')]);
          continue;
        }
        rows.push([
          sizeLabel(size),
          b.running && b.running !== b.backend ? `${b.backend} (ran: ${b.running})` : b.backend,
          fmtMs(b.watcherStartMs),
          fmtMs(b.readyMs),
          fmtMs(b.latency?.p50),
          fmtMs(b.latency?.p99),
          `${b.burstFiles} files`,
          b.burstConvergeMs === null ? 'not within 180 s' : fmtMs(b.burstConvergeMs),
          String(b.burstNotifications),
          b.inotifyWatches === null || b.inotifyWatches === undefined ? 'n/a' : String(b.inotifyWatches),
          b.peakRssMiB == null ? 'n/a' : `${b.peakRssMiB} MiB`,
        ]);
      }
    }
    return [
      {
        title: '6. Live updates per watcher backend',
        header,
        rows,
        note: 'Target: change→updated p50 < 100 ms, measured after the start-up work has settled. "spawn→1st event" = spawn until a probe write in a subscribed folder is first notified.',
      },
    ];
  },
};
