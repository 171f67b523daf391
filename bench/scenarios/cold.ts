import fg from 'fast-glob';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { ScanChangeRecord } from '../../src/watch/scan-changes.ts';
import { silentLogger } from '../../src/log.ts';
import { makeRoot } from '../../src/uri.ts';
import { peakRssMiB, settled, settleTimeout, spawnFolderMcp, type Settled } from '../client.ts';
import { rowPerSize, type Scenario, type SizeContext } from '../context.ts';
import { fmtMs, fmtRatio, fmtStat, summarize, type Stat } from '../stats.ts';

export interface ColdResult {
  entries: number;
  /** The physical limit: a bare fast-glob walk with stats of the same tree. */
  walk: Stat;
  /** In-process: new FolderIndex(...) until its readiness is `scanned`. */
  index: Stat;
  /** Spawn of dist/cli.js on an empty index until the first resources/list page is answered. */
  server: Stat;
  /** The server's own "indexed N entries in X ms" log line. */
  serverScan: Stat | null;
  /** Background work after the first page (last run): reconcile, content index, spawn until both done. */
  settle?: Settled;
  peakRssMiB: number | null;
}

/** The bare walk the index is measured against: what any indexer must at least do. */
export async function bareWalk(root: string): Promise<number> {
  let n = 0;
  const stream = fg.stream('**', { cwd: root, stats: true, onlyFiles: false, dot: true, followSymbolicLinks: false });
  for await (const _ of stream) n++;
  return n;
}

function removeDb(file: string): void {
  for (const s of ['', '-wal', '-shm']) rmSync(file + s, { force: true });
}

export const cold: Scenario<ColdResult> = {
  name: 'cold',
  async run(ctx: SizeContext) {
    const runs = ctx.runs;
    const entries = await bareWalk(ctx.root); // warm-up: every run below sees the same (hot) dentry cache
    const walk: number[] = [];
    const index: number[] = [];
    const server: number[] = [];
    const serverScan: number[] = [];
    let peak: number | null = null;
    let settle: Settled | undefined;
    // Interleaved, so machine noise hits all three alike.
    for (let i = 0; i < runs; i++) {
      ctx.log(`  cold run ${i + 1}/${runs}`);
      let t0 = performance.now();
      await bareWalk(ctx.root);
      walk.push(performance.now() - t0);

      const dbFile = join(ctx.work, `inproc-${ctx.tree.size}.db`);
      removeDb(dbFile);
      t0 = performance.now();
      // As the server builds it: on Linux the scan also watches each directory it reads (see ScanChangeRecord).
      const scanChanges = process.platform === 'linux' ? new ScanChangeRecord() : undefined;
      const fi = new FolderIndex({ roots: [makeRoot(ctx.root)], dbFile, log: silentLogger, gitignore: true, exclude: [], ...(scanChanges ? { scanObserver: scanChanges } : {}) });
      await fi.readiness.reached('scanned');
      index.push(performance.now() - t0);
      scanChanges?.close();
      fi.close();
      removeDb(dbFile);

      removeDb(ctx.db);
      t0 = performance.now();
      const conn = await spawnFolderMcp(ctx.root, ctx.db, ['--watcher', 'none']);
      await conn.request('resources/list', {});
      server.push(performance.now() - t0);
      // The scan's own log line; and on the last run, how long the background work after it takes.
      if (i === runs - 1) settle = await settled(conn, t0, settleTimeout(ctx.tree.size));
      peak = Math.max(peak ?? 0, peakRssMiB(conn.pid) ?? 0) || peak;
      const m = /indexed \d+ entries in (\d+) ms/.exec(conn.stderr());
      if (m) serverScan.push(Number(m[1]));
      await conn.close();
    }
    return {
      entries,
      walk: summarize(walk),
      index: summarize(index),
      server: summarize(server),
      serverScan: serverScan.length ? summarize(serverScan) : null,
      ...(settle ? { settle } : {}),
      peakRssMiB: peak,
    };
  },
  tables(bySize) {
    const header = ['size', 'entries', 'bare walk', 'index (in-process)', 'index/walk', 'server spawn→1st page', 'server/walk', 'server scan (log)', 'then: disk check / content index (log)', 'spawn→all done', 'peak RSS'];
    return [
      {
        title: '1. Cold index vs the physical limit (bare fast-glob walk with stats)',
        header,
        rows: rowPerSize(bySize, header, (r) => [
          String(r.entries),
          fmtStat(r.walk),
          fmtStat(r.index),
          fmtRatio(r.index.p50 / r.walk.p50),
          fmtStat(r.server),
          fmtRatio(r.server.p50 / r.walk.p50),
          r.serverScan ? fmtMs(r.serverScan.p50) : 'n/a',
          r.settle ? `${fmtMs(r.settle.reconcileMs)} / ${fmtMs(r.settle.contentIndexMs)}` : 'n/a',
          fmtMs(r.settle?.settledMs),
          r.peakRssMiB === null ? 'n/a' : `${r.peakRssMiB} MiB`,
        ]),
        note: 'Medians (p99, min–max). Target: index <= 1.3x the bare walk. The server time includes Node start-up and the MCP handshake. After the first page the server goes on in the background: a check against the disk of what changed during the scan (the paths its watches named, on Linux; elsewhere a diff of the whole tree) and the full-text content index (one run, from its log); peak RSS includes them.',
      },
    ];
  },
};
