// The two SQLite drivers side by side (src/sqlite.ts): better-sqlite3 on this
// machine's Node 20 and node:sqlite on Node 24 (npm's `node` package), the two
// installs users get. better-sqlite3 cannot be built for Node 24 here (no
// headers offline) and node:sqlite is not in Node 20, so each driver runs on
// its own Node: a row compares what a user gets, runtime included. Runs
// alternate (20, 24, 20, 24, ...) so that machine noise hits both alike.
//
// Per run and runtime, on the bench tree with a new index file each time:
//   cold       spawn until the first resources/list page (the scan's own
//              "indexed N entries in X ms" beside it), then the content
//              index build, and the peak RSS of the whole
//   pages      every page of resources/list (200 a page), one at a time
//   search     the search tool, a few words, after the content index is built
//   warm       spawn on that index until the first page: with no compiled
//              code cached (NODE_COMPILE_CACHE a new folder), then cached
// and once per runtime, on a small folder of its own: write -> updated, the
// write tool until `notifications/resources/updated` for the file.
import { mkdtempSync, mkdirSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { newerNode } from '../../scripts/newer-node.ts';
import { chooseDriver, SqliteDriverError } from '../../src/sqlite.ts';
import { peakRssMiB, settled, settleTimeout, spawnOn, type Conn, type Runtime } from '../client.ts';
import { rowPerSize, type Scenario, type SizeContext } from '../context.ts';
import { fmtMs, fmtRatio, fmtStat, summarize, type Stat } from '../stats.ts';
import { updatedWatcher } from './write.ts';

// Words of the bench tree's text files (bench/tree.ts), and one in none of them.
const SEARCH_WORDS = ['export', 'const', 'notes', 'config*', 'xylophone'];
const WRITES = 20;
/** Pause between two timed writes: each notification's coalescing window closes first. */
const WRITE_PAUSE_MS = 250;

export interface DriverRow {
  label: string;
  node: string;
  driver: Runtime['driver'];
  coldFirstPage: Stat;
  scan: Stat | null;
  contentIndex: Stat | null;
  page: Stat;
  search: Stat;
  warmNoCodeCache: Stat;
  warm: Stat;
  writeToUpdated: Stat | null;
  peakRssMiB: number | null;
  dbMiB: number | null;
}

export interface DriversResult {
  rows: DriverRow[];
}

/** better-sqlite3 on the Node running the bench (when it loads there) and node:sqlite on Node 24. */
export function runtimes(): { runtime: Runtime; label: string }[] {
  const found: { runtime: Runtime; label: string }[] = [];
  try {
    if (chooseDriver('better-sqlite3') === 'better-sqlite3') found.push({ runtime: { node: process.execPath, driver: 'better-sqlite3' }, label: `better-sqlite3, Node ${process.versions.node}` });
  } catch (error) {
    if (!(error instanceof SqliteDriverError)) throw error;
  }
  found.push({ runtime: { node: newerNode(), driver: 'node' }, label: 'node:sqlite, Node 24' });
  return found;
}

const logged = (conn: Conn, re: RegExp): number | null => {
  const m = re.exec(conn.stderr());
  return m ? Number(m[1]) : null;
};

async function firstPage(runtime: Runtime, ctx: SizeContext, db: string, env: Record<string, string> = {}): Promise<{ conn: Conn; ms: number }> {
  const t0 = performance.now();
  const conn = await spawnOn(runtime, ctx.root, db, ['--watcher', 'none'], env);
  await conn.request('resources/list', {});
  return { conn, ms: performance.now() - t0 };
}

async function pageTimes(conn: Conn, pages: number[]): Promise<void> {
  let cursor: string | undefined;
  do {
    const t0 = performance.now();
    const result = await conn.request('resources/list', cursor ? { cursor } : {});
    pages.push(performance.now() - t0);
    cursor = result.nextCursor as string | undefined;
  } while (cursor);
}

async function writeToUpdated(runtime: Runtime, work: string): Promise<Stat | null> {
  const root = realpathSync(mkdtempSync(join(work, 'drivers-write-')));
  mkdirSync(join(root, 'docs'));
  writeFileSync(join(root, 'docs', 'a.md'), 'start\n');
  const conn = await spawnOn(runtime, root, join(root, '..', `${runtime.driver}-write.db`), ['--write']);
  try {
    const updated = updatedWatcher(conn);
    const uri = pathToFileURL(join(root, 'docs', 'a.md')).href;
    await conn.request('resources/list', {});
    await conn.request('resources/subscribe', { uri });
    const samples: number[] = [];
    for (let i = 0; i < WRITES; i++) {
      const t0 = performance.now();
      await conn.request('tools/call', { name: 'write', arguments: { path: 'docs/a.md', content: `write ${i}\n` } });
      const ms = await updated(uri, t0);
      if (ms !== null) samples.push(ms);
      await new Promise((resolve) => setTimeout(resolve, WRITE_PAUSE_MS));
    }
    return samples.length > 0 ? summarize(samples) : null;
  } finally {
    await conn.close();
    rmSync(root, { recursive: true, force: true });
  }
}

function dbSizeMiB(db: string): number | null {
  try {
    // After the server closed, its WAL is checkpointed into the file.
    return Math.round((statSync(db).size / 2 ** 20) * 10) / 10;
  } catch {
    return null;
  }
}

export const drivers: Scenario<DriversResult> = {
  name: 'drivers',
  async run(ctx) {
    const all = runtimes();
    if (all.length < 2) return { skipped: 'better-sqlite3 does not load on this Node (run the bench on Node 20)' };
    const runs = ctx.runs;
    const acc = all.map(() => ({ cold: [] as number[], scan: [] as number[], content: [] as number[], pages: [] as number[], search: [] as number[], warmCold: [] as number[], warm: [] as number[], peak: null as number | null, db: null as number | null }));
    for (let run = 0; run < runs; run++) {
      for (const [i, { runtime, label }] of all.entries()) {
        ctx.log(`  drivers run ${run + 1}/${runs}: ${label}`);
        const a = acc[i]!;
        const db = join(ctx.work, `drivers-${runtime.driver}-${ctx.tree.size}.db`);
        for (const suffix of ['', '-wal', '-shm']) rmSync(db + suffix, { force: true });
        const t0 = performance.now();
        const cold = await firstPage(runtime, ctx, db);
        a.cold.push(cold.ms);
        const done = await settled(cold.conn, t0, settleTimeout(ctx.tree.size));
        const scan = logged(cold.conn, /indexed \d+ entries in (\d+) ms/);
        if (scan !== null) a.scan.push(scan);
        if (done.contentIndexMs !== null) a.content.push(done.contentIndexMs);
        await pageTimes(cold.conn, a.pages);
        for (const word of SEARCH_WORDS) {
          const s0 = performance.now();
          await cold.conn.request('tools/call', { name: 'search', arguments: { query: word } });
          a.search.push(performance.now() - s0);
        }
        a.peak = Math.max(a.peak ?? 0, peakRssMiB(cold.conn.pid) ?? 0) || a.peak;
        await cold.conn.close();
        a.db = dbSizeMiB(db);
        // Warm index; first with an empty compile cache, then with the one that start filled (Node >= 22.1).
        const codeCache = mkdtempSync(join(ctx.work, 'code-cache-'));
        for (const into of [a.warmCold, a.warm]) {
          const warm = await firstPage(runtime, ctx, db, { NODE_COMPILE_CACHE: codeCache });
          into.push(warm.ms);
          await warm.conn.close();
        }
        rmSync(codeCache, { recursive: true, force: true });
      }
    }
    const rows: DriverRow[] = [];
    for (const [i, { runtime, label }] of all.entries()) {
      const a = acc[i]!;
      rows.push({
        label,
        node: runtime.node === process.execPath ? process.version : 'v24',
        driver: runtime.driver,
        coldFirstPage: summarize(a.cold),
        scan: a.scan.length ? summarize(a.scan) : null,
        contentIndex: a.content.length ? summarize(a.content) : null,
        page: summarize(a.pages),
        search: summarize(a.search),
        warmNoCodeCache: summarize(a.warmCold),
        warm: summarize(a.warm),
        writeToUpdated: await writeToUpdated(runtime, ctx.work),
        peakRssMiB: a.peak,
        dbMiB: a.db,
      });
    }
    return { rows };
  },
  tables(bySize) {
    const header = ['size', 'runtime', 'cold: spawn→1st page', 'scan (log)', 'content index (log)', 'page p50', 'search p50', 'warm start, no code cache', 'warm start', 'write→updated p50', 'peak RSS', 'index file'];
    const rows = bySize.flatMap(({ size, result }) => {
      const perSize = rowPerSize([{ size, result }], ['size'], () => []);
      if ('skipped' in result) return perSize;
      const [base, other] = result.rows;
      return result.rows.map((r) => [
        perSize[0]![0]!,
        r.label,
        fmtStat(r.coldFirstPage),
        fmtStat(r.scan),
        fmtStat(r.contentIndex),
        fmtMs(r.page.p50),
        fmtMs(r.search.p50),
        fmtStat(r.warmNoCodeCache),
        fmtStat(r.warm),
        fmtMs(r.writeToUpdated?.p50),
        r.peakRssMiB === null ? 'n/a' : `${r.peakRssMiB} MiB`,
        r.dbMiB === null ? 'n/a' : `${r.dbMiB} MiB`,
      ]).concat(base && other ? [[perSize[0]![0]!, 'node:sqlite / better-sqlite3', fmtRatio(other.coldFirstPage.p50 / base.coldFirstPage.p50), fmtRatio((other.scan?.p50 ?? NaN) / (base.scan?.p50 ?? NaN)), fmtRatio((other.contentIndex?.p50 ?? NaN) / (base.contentIndex?.p50 ?? NaN)), fmtRatio(other.page.p50 / base.page.p50), fmtRatio(other.search.p50 / base.search.p50), fmtRatio(other.warmNoCodeCache.p50 / base.warmNoCodeCache.p50), fmtRatio(other.warm.p50 / base.warm.p50), fmtRatio((other.writeToUpdated?.p50 ?? NaN) / (base.writeToUpdated?.p50 ?? NaN)), fmtRatio((other.peakRssMiB ?? NaN) / (base.peakRssMiB ?? NaN)), '']] : []);
    });
    return [
      {
        title: '17. SQLite drivers side by side: better-sqlite3 on Node 20, node:sqlite on Node 24',
        header,
        rows,
        note: 'Runs alternate between the two. Each driver runs on its own Node (better-sqlite3 cannot be built for Node 24 offline, node:sqlite is not in Node 20): a row is what a user of that install gets. Ratios are of medians; below 1.00 node:sqlite is faster.',
      },
    ];
  },
};
