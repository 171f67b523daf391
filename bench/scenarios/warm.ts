import { existsSync } from 'node:fs';
import { peakRssMiB, spawnFolderMcp } from '../client.ts';
import { sizeLabel, skippedRow, type Scenario } from '../context.ts';
import { fmtStat, summarize, type Stat } from '../stats.ts';

export interface WarmResult {
  /** Spawn on the index of an earlier run until the first resources/list page is answered. */
  server: Stat;
  peakRssMiB: number | null;
}

export const warm: Scenario<WarmResult> = {
  name: 'warm',
  async run(ctx) {
    if (!existsSync(ctx.db)) return { skipped: 'no index from the cold scenario (run it first)' };
    const samples: number[] = [];
    let peak: number | null = null;
    const runs = Math.max(ctx.runs, 3);
    for (let i = 0; i < runs + 1; i++) {
      const t0 = performance.now();
      const conn = await spawnFolderMcp(ctx.root, ctx.db, ['--watcher', 'none']);
      await conn.request('resources/list', {});
      const ms = performance.now() - t0;
      if (i > 0) samples.push(ms); // the first spawn warms the OS caches
      peak = Math.max(peak ?? 0, peakRssMiB(conn.pid) ?? 0) || peak;
      await conn.close();
    }
    return { server: summarize(samples), peakRssMiB: peak };
  },
  tables(bySize) {
    const header = ['size', 'warm spawn→1st page', 'peak RSS'];
    return [
      {
        title: '2. Warm start: second spawn on the same --db until the first answered list',
        header,
        rows: bySize.map(({ size, result: r }) =>
          'skipped' in r
            ? skippedRow(size, r, header.length)
            : [sizeLabel(size), fmtStat(r.server), r.peakRssMiB === null ? 'n/a' : `${r.peakRssMiB} MiB`],
        ),
        note: 'Includes Node start-up (~50–100 ms) and the MCP handshake; the watcher is off here.',
      },
    ];
  },
};
