// Both protocol eras side by side: connect time per client mode, page and
// read latency per era (interleaved, same process state), and page latency
// by page size (why the default is what it is).
import type { Client as V2Client } from '@modelcontextprotocol/client';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnFolderMcp, settled, settleTimeout, type Conn, type Era } from '../client.ts';
import { isSkipped, rowPerSize, sizeLabel, uriOf, type Scenario, type Skipped } from '../context.ts';
import { fmtMs, fmtRatio, summarize, type Stat } from '../stats.ts';

export interface ErasResult {
  /** Spawn until the client's connect() resolves, per client mode. */
  connect: Record<Era, Stat>;
  /** p50s per era, sampled alternately on two warm servers. */
  latency: Record<'legacy' | 'modern', { deepPage: Stat; fullPage: Stat; read: Stat }>;
  deepItems: number;
  /** A write in a listened/subscribed folder until `updated` reaches the client, per era. */
  notify: Record<'legacy' | 'modern', Stat | null>;
  /** Page size -> a first page of the root listing, and the pages a whole listing takes. */
  pageSizes: { pageSize: number; items: number; p50: Stat; pages: number }[];
  entries: number;
}

const MODES: Era[] = ['legacy', 'modern', 'auto'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Change-to-notification latency on one era: subscribe (2025) or listen
 * (2026) to a folder, write a file in it after a quiet spell, time until the
 * folder's `updated` arrives.
 */
async function notifyLatency(ctx: Parameters<Scenario<ErasResult>['run']>[0], era: 'legacy' | 'modern', samples: number): Promise<Stat | null> {
  const conn = await spawnFolderMcp(ctx.root, ctx.db, ['--watcher', 'auto', '--no-search'], era);
  const dirRel = ctx.tree.siblingDirs[1];
  const dirUri = uriOf(ctx, dirRel, true);
  const seen: number[] = [];
  const client = conn.client as { fallbackNotificationHandler?: (n: { method: string; params?: { uri?: string } }) => Promise<void> };
  client.fallbackNotificationHandler = async (n) => {
    if (n.method === 'notifications/resources/updated' && n.params?.uri === dirUri) seen.push(performance.now());
  };
  const written: string[] = [];
  try {
    await conn.request('resources/list', {});
    await settled(conn, performance.now(), settleTimeout(ctx.tree.size));
    if (era === 'legacy') await conn.request('resources/subscribe', { uri: dirUri });
    else await (conn.client as V2Client).listen({ resourceSubscriptions: [dirUri] });
    const times: number[] = [];
    for (let i = 0; times.length < samples && i < samples * 3; i++) {
      await sleep(400); // a quiet spell: the leading edge of the coalescing window
      const before = seen.length;
      const path = join(ctx.root, dirRel, `bench-eras-${era}-${i}.txt`);
      written.push(path);
      const t0 = performance.now();
      writeFileSync(path, `${i}\n`);
      const deadline = t0 + 5000;
      while (seen.length === before && performance.now() < deadline) await sleep(1);
      if (seen.length > before) times.push(seen[before]! - t0);
    }
    return times.length ? summarize(times) : null;
  } finally {
    await conn.close();
    for (const path of written) rmSync(path, { force: true });
  }
}
const PAGE_SIZES = [200, 500, 1000, 2000, 5000];

async function connectTimes(root: string, db: string, runs: number): Promise<Record<Era, Stat>> {
  const samples: Record<Era, number[]> = { legacy: [], modern: [], auto: [] };
  for (let i = 0; i < runs; i++) {
    for (const era of MODES) {
      const t0 = performance.now();
      const conn = await spawnFolderMcp(root, db, ['--watcher', 'none', '--no-search'], era);
      samples[era].push(performance.now() - t0);
      await conn.close();
    }
  }
  return { legacy: summarize(samples.legacy), modern: summarize(samples.modern), auto: summarize(samples.auto) };
}

export const eras: Scenario<ErasResult> = {
  name: 'eras',
  async run(ctx): Promise<ErasResult | Skipped> {
    if (!existsSync(ctx.db)) return { skipped: 'no index from the cold scenario (run it first)' };
    const connect = await connectTimes(ctx.root, ctx.db, ctx.quick ? 3 : 10);
    const conns: Record<'legacy' | 'modern', Conn> = {
      legacy: await spawnFolderMcp(ctx.root, ctx.db, ['--watcher', 'none'], 'legacy'),
      modern: await spawnFolderMcp(ctx.root, ctx.db, ['--watcher', 'none'], 'modern'),
    };
    try {
      for (const conn of Object.values(conns)) await settled(conn, performance.now(), settleTimeout(ctx.tree.size));
      const deep = uriOf(ctx, ctx.tree.deepDir, true);
      const small = uriOf(ctx, ctx.tree.notebook).replace(/[^/]*$/, ''); // a folder with small files
      const firstDoc = ((await conns.legacy.request('resources/list', { uri: small })).resources as { uri: string; resourceType: string }[]).find(
        (r) => r.resourceType === 'document',
      )?.uri;
      const deepItems = ((await conns.legacy.request('resources/list', { prefix: deep })).resources as unknown[]).length;
      const samples = { legacy: { deepPage: [] as number[], fullPage: [] as number[], read: [] as number[] }, modern: { deepPage: [] as number[], fullPage: [] as number[], read: [] as number[] } };
      const n = ctx.quick ? 100 : 400;
      for (let i = 0; i < n; i++) {
        // Alternate the order so neither era always runs second.
        for (const era of i % 2 ? (['legacy', 'modern'] as const) : (['modern', 'legacy'] as const)) {
          const conn = conns[era];
          let t0 = performance.now();
          await conn.request('resources/list', { prefix: deep });
          samples[era].deepPage.push(performance.now() - t0);
          t0 = performance.now();
          await conn.request('resources/list', {});
          samples[era].fullPage.push(performance.now() - t0);
          if (firstDoc) {
            t0 = performance.now();
            await conn.request('resources/read', { uri: firstDoc });
            samples[era].read.push(performance.now() - t0);
          }
        }
      }
      const stat = (era: 'legacy' | 'modern') => ({
        deepPage: summarize(samples[era].deepPage),
        fullPage: summarize(samples[era].fullPage),
        read: summarize(samples[era].read.length ? samples[era].read : [NaN]),
      });
      const latency = { legacy: stat('legacy'), modern: stat('modern') };
      await conns.legacy.close();
      await conns.modern.close();

      const pageSizes: ErasResult['pageSizes'] = [];
      const entries = ctx.tree.files + ctx.tree.dirs + 1;
      for (const pageSize of PAGE_SIZES) {
        const conn = await spawnFolderMcp(ctx.root, ctx.db, ['--watcher', 'none', '--no-search', '--page-size', String(pageSize)], 'modern');
        try {
          let items = 0;
          const page: number[] = [];
          for (let i = 0; i < (ctx.quick ? 30 : 100); i++) {
            const t0 = performance.now();
            const result = await conn.request('resources/list', {});
            page.push(performance.now() - t0);
            items = (result.resources as unknown[]).length;
          }
          pageSizes.push({ pageSize, items, p50: summarize(page), pages: Math.ceil(entries / pageSize) });
        } finally {
          await conn.close();
        }
      }
      const notify = {
        legacy: await notifyLatency(ctx, 'legacy', ctx.quick ? 10 : 30),
        modern: await notifyLatency(ctx, 'modern', ctx.quick ? 10 : 30),
      };
      return { connect, latency, deepItems, pageSizes, entries, notify };
    } finally {
      await conns.legacy.close().catch(() => {});
      await conns.modern.close().catch(() => {});
    }
  },
  tables(bySize) {
    const connectHeader = ['size', 'v1 client, 2025-11-25', 'v2 pinned 2026-07-28', 'v2 auto', 'auto / pinned'];
    const latencyHeader = ['size', 'deep prefix page 2025', 'deep prefix page 2026', 'first page 2025', 'first page 2026', 'read 2025', 'read 2026', 'worst 2026/2025', 'change→updated 2025', 'change→updated 2026'];
    const pageHeader = ['size', 'page size', 'items', 'page p50', 'page p99', 'pages for the whole folder', 'within 64 pages'];
    const pageRows: string[][] = [];
    for (const { size, result } of bySize) {
      if (isSkipped(result)) continue;
      for (const p of result.pageSizes) {
        pageRows.push([sizeLabel(size), String(p.pageSize), String(p.items), fmtMs(p.p50.p50), fmtMs(p.p50.p99), String(p.pages), p.pages <= 64 ? 'yes' : 'no']);
      }
    }
    return [
      {
        title: '10. Connect time by client mode (spawn to connected, warm index, p50)',
        header: connectHeader,
        rows: rowPerSize(bySize, connectHeader, (r) => [fmtMs(r.connect.legacy.p50), fmtMs(r.connect.modern.p50), fmtMs(r.connect.auto.p50), fmtRatio(r.connect.auto.p50 / r.connect.modern.p50)]),
        note: 'auto probes server/discover on a throw-away process, then starts the session: the server answers the probe without opening the index.',
      },
      {
        title: '11. Latency by protocol era over stdio (p50, sampled alternately on two warm servers)',
        header: latencyHeader,
        rows: rowPerSize(bySize, latencyHeader, (r) => {
          const l = r.latency.legacy;
          const m = r.latency.modern;
          const worst = Math.max(m.deepPage.p50 / l.deepPage.p50, m.fullPage.p50 / l.fullPage.p50, m.read.p50 / l.read.p50);
          return [
            fmtMs(l.deepPage.p50),
            fmtMs(m.deepPage.p50),
            fmtMs(l.fullPage.p50),
            fmtMs(m.fullPage.p50),
            fmtMs(l.read.p50),
            fmtMs(m.read.p50),
            fmtRatio(worst),
            fmtMs(r.notify?.legacy?.p50),
            fmtMs(r.notify?.modern?.p50),
          ];
        }),
        note: 'Deep prefix: one page under a deep folder; first page: resources/list with no params at the default page size; read: a small text file. change→updated: a write in a folder subscribed (2025) or listened to (2026), default watcher, target p50 <= 50 ms.',
      },
      {
        title: '12. Page latency by page size (2026-07-28 client, first page of the whole folder)',
        header: pageHeader,
        rows: pageRows,
        note: "The v2 client's listResources() follows at most 64 pages: the default page size decides the largest folder it lists whole.",
      },
    ];
  },
};
