// When one machine is enough: the capacity of one `--http` process at
// p99 <= 50 ms for 2026-07-28 list pages, reads and searches, and the same
// through nginx (deploy/nginx/folder-mcp.conf) in front of three replicas.
// A scenario of its own beside `http` (whose workload and server it reuses):
// results merge into latest.json a scenario at a time, so a capacity run
// does not replace the mixed-load figures of tables 8 and 9, nor they it.
import { CAPACITY_KINDS, clusterCapacity, P99_TARGET_MS, rampCapacity, rssOf, type CapacityRun } from '../capacity.ts';
import { isSkipped, sizeLabel, type Scenario, type Skipped } from '../context.ts';
import { fmtMs } from '../stats.ts';
import { asker, modernHttpClient, serveHttp, workload } from './http.ts';
import { existsSync } from 'node:fs';

export interface CapacityResult {
  one: CapacityRun;
  cluster: CapacityRun | Skipped;
}

export const capacity: Scenario<CapacityResult> = {
  name: 'capacity',
  async run(ctx): Promise<CapacityResult | Skipped> {
    const want = ctx.quick ? 10_000 : 100_000;
    if (ctx.tree.size !== want) return { skipped: `the capacity runs at ${sizeLabel(want)} files${ctx.quick ? ' (quick)' : ''}` };
    if (!existsSync(ctx.db)) return { skipped: 'no index from the cold scenario (run it first)' };
    const stepMs = ctx.quick ? 1_000 : 3_000;
    // The first start builds the content index when the index came without one: minutes at 100k on a busy machine.
    const served = await serveHttp(ctx, 120_000 + ctx.tree.size * 3);
    let one: CapacityRun;
    let w;
    try {
      const client = await modernHttpClient(served.url);
      w = await workload(ctx, asker(client));
      await client.close();
      const curves = await rampCapacity(served.url, w, stepMs, ctx.log, '1 process');
      one = { target: '1 process', replicas: 1, curves, rssMiB: [rssOf(served.child.pid)] };
    } finally {
      await served.stop();
    }
    ctx.log(`[${ctx.tree.size}] capacity: through nginx, three replicas ...`);
    const cluster = await clusterCapacity(ctx, w, stepMs);
    if (typeof cluster === 'string') ctx.log(`[${ctx.tree.size}] capacity through nginx skipped: ${cluster}`);
    return { one, cluster: typeof cluster === 'string' ? { skipped: cluster } : cluster };
  },
  tables(bySize) {
    const rows: string[][] = [];
    for (const { size, result: r } of bySize) {
      if (isSkipped(r)) continue;
      for (const run of [r.one, r.cluster]) {
        if (isSkipped(run)) {
          rows.push([sizeLabel(size), 'nginx + 3 replicas', `n/a: ${run.skipped}`, '', '', '', '', '', '', '']);
          continue;
        }
        for (const kind of CAPACITY_KINDS) {
          const curve = run.curves.find((c) => c.kind === kind)!;
          const top = curve.steps.reduce((a, s) => (s.perSecond > a.perSecond ? s : a), curve.steps[0]!);
          const best = curve.best;
          rows.push([
            sizeLabel(size),
            run.target,
            kind,
            best ? best.perSecond.toFixed(0) : `none (p99 ${fmtMs(curve.steps[0]?.p99)} at 1 client)`,
            best ? String(best.clients) : '',
            best ? fmtMs(best.p50) : '',
            best ? fmtMs(best.p99) : '',
            `${top.perSecond.toFixed(0)} (${top.clients} clients, p99 ${fmtMs(top.p99)})`,
            `${run.rssMiB.map((m) => m ?? '?').join(' / ')} MiB`,
            best ? (best.perSecond / run.replicas).toFixed(0) : '',
          ]);
        }
      }
    }
    return [
      {
        title: `9b. Capacity at p99 <= ${P99_TARGET_MS} ms: 2026-07-28 requests/s of one kind, clients ramped 1 to 32 (one process; nginx in front of three replicas)`,
        header: ['size', 'target', 'kind', `req/s at p99 <= ${P99_TARGET_MS} ms`, 'clients', 'p50', 'p99', 'most req/s seen', 'RSS per replica', 'req/s per replica'],
        rows,
        note:
          'Loopback; the load generator and nginx run on the same cores as the replicas, so three replicas share the CPU one process had: no scaling is expected on 2 cores. ' +
          'The cluster rows show what the routing costs and what each replica holds. A list page is the first page of a folder (default page size); a search is the search tool for one word.',
      },
    ];
  },
};
