import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { CLI, peakRssMiB, settled, settleTimeout, spawnFolderMcp, type Settled } from '../client.ts';
import { rowPerSize, type Scenario } from '../context.ts';
import { fmtMs, fmtStat, summarize, type Stat } from '../stats.ts';

export interface WarmResult {
  /** Spawn on the index of an earlier run until the first resources/list page is answered. */
  server: Stat;
  /** `node dist/cli.js --version`: process start and module loading, the floor of any spawn. */
  startFloor?: Stat;
  /** Background work after a warm start (last run): the check against the disk. */
  settle?: Settled;
  peakRssMiB: number | null;
}

export const warm: Scenario<WarmResult> = {
  name: 'warm',
  async run(ctx) {
    if (!existsSync(ctx.db)) return { skipped: 'no index from the cold scenario (run it first)' };
    const samples: number[] = [];
    const floor: number[] = [];
    let peak: number | null = null;
    let settle: Settled | undefined;
    const runs = Math.max(ctx.runs, 3);
    for (let i = 0; i < runs + 1; i++) {
      const t0 = performance.now();
      const conn = await spawnFolderMcp(ctx.root, ctx.db, ['--watcher', 'none']);
      await conn.request('resources/list', {});
      const ms = performance.now() - t0;
      if (i > 0) samples.push(ms); // the first spawn warms the OS caches
      if (i === runs) settle = await settled(conn, t0, settleTimeout(ctx.tree.size));
      const f0 = performance.now();
      execFileSync(process.execPath, [CLI, '--version']);
      if (i > 0) floor.push(performance.now() - f0);
      peak = Math.max(peak ?? 0, peakRssMiB(conn.pid) ?? 0) || peak;
      await conn.close();
    }
    return { server: summarize(samples), startFloor: summarize(floor), ...(settle ? { settle } : {}), peakRssMiB: peak };
  },
  tables(bySize) {
    const header = ['size', 'warm spawn→1st page', 'node dist/cli.js --version', 'then: disk check (log)', 'spawn→all done', 'peak RSS'];
    return [
      {
        title: '2. Warm start: second spawn on the same --db until the first answered list',
        header,
        rows: rowPerSize(bySize, header, (r) => [fmtStat(r.server), r.startFloor ? fmtStat(r.startFloor) : 'n/a', fmtMs(r.settle?.reconcileMs), fmtMs(r.settle?.settledMs), r.peakRssMiB === null ? 'n/a' : `${r.peakRssMiB} MiB`]),
        note: 'Includes Node start-up, module loading and the MCP handshake; `--version` (same modules, no index, no stdio) is that floor. The watcher is off here.',
      },
    ];
  },
};
