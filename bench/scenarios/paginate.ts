import { chooseDriver, openDatabase } from '../../src/sqlite.ts';
import { existsSync } from 'node:fs';
import { settled, settleTimeout, spawnFolderMcp } from '../client.ts';
import { rowPerSize, type Scenario } from '../context.ts';
import { fmtMs, fmtRatio, summarize, type Stat } from '../stats.ts';
import { PAGE } from './list.ts';

export interface PaginateResult {
  entries: number;
  pages: number;
  /** Full walk over stdio with keyset cursors. */
  serverTotalMs: number;
  /** Per-page round trips over the walk: p50 in the first and the last tenth of the pages. */
  serverFirstTenth: Stat;
  serverLastTenth: Stat;
  /** In-process SQLite, the same pages: keyset (`uri > last`) and OFFSET. */
  keysetTotalMs: number;
  offsetTotalMs: number;
  /** True when the OFFSET total is integrated from sampled pages rather than run in full. */
  offsetEstimated: boolean;
  keysetLastPage: Stat;
  offsetLastPage: Stat;
}

const COLS = 'uri, parent, root, name, ext, kind, size, mtime, mime';

export const paginate: Scenario<PaginateResult> = {
  name: 'paginate',
  async run(ctx) {
    if (!existsSync(ctx.db)) return { skipped: 'no index from the cold scenario (run it first)' };
    const conn = await spawnFolderMcp(ctx.root, ctx.db, ['--page-size', String(PAGE), '--watcher', 'none']);
    await settled(conn, performance.now(), settleTimeout(ctx.tree.size));
    const perPage: number[] = [];
    let entries = 0;
    const t0 = performance.now();
    try {
      let cursor: string | undefined;
      do {
        const p0 = performance.now();
        const result = await conn.request('resources/list', cursor ? { cursor } : {});
        perPage.push(performance.now() - p0);
        entries += (result.resources as unknown[]).length;
        cursor = result.nextCursor as string | undefined;
      } while (cursor);
    } finally {
      await conn.close();
    }
    const serverTotalMs = performance.now() - t0;
    const tenth = Math.max(1, Math.floor(perPage.length / 10));

    const db = openDatabase(ctx.db, chooseDriver(), { readOnly: true });
    try {
      const keyset = db.prepare(`SELECT ${COLS} FROM entries WHERE uri > ? ORDER BY uri LIMIT ${PAGE}`);
      const offset = db.prepare(`SELECT ${COLS} FROM entries ORDER BY uri LIMIT ${PAGE} OFFSET ?`);
      const total = (db.prepare('SELECT count(*) AS n FROM entries').get() as { n: number }).n;
      const pages = Math.ceil(total / PAGE);
      ctx.log(`  paginate: ${pages} pages in-process (keyset)`);
      let k0 = performance.now();
      let last = '';
      for (;;) {
        const rows = keyset.all(last) as { uri: string }[];
        if (rows.length === 0) break;
        last = rows.at(-1)!.uri;
      }
      const keysetTotalMs = performance.now() - k0;
      // OFFSET in full while that stays affordable; past it, integrate sampled page costs (cost grows linearly with the offset).
      const affordable = pages <= 1500;
      let offsetTotalMs = 0;
      if (affordable) {
        ctx.log(`  paginate: ${pages} pages in-process (OFFSET)`);
        k0 = performance.now();
        for (let p = 0; p < pages; p++) offset.all(p * PAGE);
        offsetTotalMs = performance.now() - k0;
      } else {
        const points = 20;
        const samples: number[] = [];
        for (let s = 0; s < points; s++) {
          const p = Math.floor((s * (pages - 1)) / (points - 1));
          const q0 = performance.now();
          offset.all(p * PAGE);
          samples.push(performance.now() - q0);
        }
        // Trapezoid rule over the sampled pages.
        for (let s = 1; s < points; s++) offsetTotalMs += ((samples[s - 1]! + samples[s]!) / 2) * ((pages - 1) / (points - 1));
      }
      const lastOffset = (pages - 1) * PAGE;
      const lastKey = ((offset.all(Math.max(0, lastOffset - 1)) as { uri: string }[])[0]?.uri) ?? '';
      const keysetLast: number[] = [];
      const offsetLast: number[] = [];
      for (let i = 0; i < 7; i++) {
        let q0 = performance.now();
        keyset.all(lastKey);
        keysetLast.push(performance.now() - q0);
        q0 = performance.now();
        offset.all(lastOffset);
        offsetLast.push(performance.now() - q0);
      }
      return {
        entries,
        pages: perPage.length,
        serverTotalMs,
        serverFirstTenth: summarize(perPage.slice(0, tenth)),
        serverLastTenth: summarize(perPage.slice(-tenth)),
        keysetTotalMs,
        offsetTotalMs,
        offsetEstimated: !affordable,
        keysetLastPage: summarize(keysetLast.slice(2)),
        offsetLastPage: summarize(offsetLast.slice(2)),
      };
    } finally {
      db.close();
    }
  },
  tables(bySize) {
    const header = ['size', 'entries', 'pages', 'folder-mcp full walk', 'page p50 first/last tenth', 'SQLite keyset total', 'SQLite OFFSET total', 'OFFSET/keyset', 'last page keyset', 'last page OFFSET'];
    return [
      {
        title: `4. Full pagination (${PAGE} per page): keyset cursors vs OFFSET`,
        header,
        rows: rowPerSize(bySize, header, (r) => [
          String(r.entries),
          String(r.pages),
          fmtMs(r.serverTotalMs),
          `${fmtMs(r.serverFirstTenth.p50)} / ${fmtMs(r.serverLastTenth.p50)}`,
          fmtMs(r.keysetTotalMs),
          fmtMs(r.offsetTotalMs) + (r.offsetEstimated ? ' (est.)' : ''),
          fmtRatio(r.offsetTotalMs / r.keysetTotalMs),
          fmtMs(r.keysetLastPage.p50),
          fmtMs(r.offsetLastPage.p50),
        ]),
        note: 'Keyset: every page costs the same, so a full walk is linear in the tree size. OFFSET re-reads every skipped row: the last page costs O(N) and the walk O(N²). "est." = integrated from 20 sampled pages.',
      },
    ];
  },
};
