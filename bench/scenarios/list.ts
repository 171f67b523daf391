import { chooseDriver, openDatabase, type Database } from '../../src/sqlite.ts';
import fg from 'fast-glob';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import picomatch from 'picomatch';
import { pathToUri } from '../../src/uri.ts';
import { peakRssMiB, settled, settleTimeout, spawnFolderMcp } from '../client.ts';
import { sampleWithin, sizeLabel, skippedRow, uriOf, type Scenario, type SizeContext } from '../context.ts';
import { fmtMs, fmtRatio, summarize, type Stat } from '../stats.ts';

export const PAGE = 100;

interface Query {
  key: string;
  label: string;
  params: Record<string, unknown>;
  /** Does a returned URI satisfy the request? (A server that ignores the param fails this.) */
  accepts(uri: string): boolean;
  /** The floor: the bare SQLite query a page needs at least, with its arguments. */
  floorSql: string;
  floorArgs: unknown[];
  /** The alternative without an index: walk (part of) the disk per request, filter, sort, take a page. */
  naive(): Promise<string[]>;
}

const COLS = 'uri, parent, root, name, ext, kind, size, mtime, mime';

function successor(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

/** Walks `dir` with stats (what a server without an index does per request) and keeps a sorted page of URIs. */
async function walkPage(dir: string, pattern: string, keep: (uri: string, name: string) => boolean, deep = true): Promise<string[]> {
  const uris: string[] = [];
  const stream = fg.stream(pattern, { cwd: dir, stats: true, onlyFiles: false, dot: true, followSymbolicLinks: false, deep: deep ? Infinity : 1, objectMode: true });
  for await (const e of stream as AsyncIterable<{ path: string; name: string; dirent: { isDirectory(): boolean } }>) {
    const uri = pathToUri(join(dir, e.path), e.dirent.isDirectory());
    if (keep(uri, e.name)) uris.push(uri);
  }
  return uris.sort().slice(0, PAGE);
}

/** Entries under a collection URI (itself excluded), counted in the index. */
function subtreeSize(db: Database, dir: string): number {
  return ((db.prepare('SELECT count(*) AS n FROM entries WHERE uri > ? AND uri < ?').get(dir, successor(dir)) as { n: number }).n);
}

/**
 * The page the goal 4a names, "a deep-prefix page (about 20
 * items)": from the tree's deep directory, down into the child directory
 * with the smallest subtree of at least 10 entries, while the subtree holds
 * more than 30. The deep directory's own prefix is a full 100-item page at
 * every size (312 entries under it at 10k files, 851 at 100k).
 */
export function smallDeepDir(db: Database, deep: string): string {
  let dir = deep;
  for (let size = subtreeSize(db, dir); size > 30; ) {
    const children = (db.prepare('SELECT uri FROM entries WHERE parent = ? AND kind = 1').all(dir) as { uri: string }[]).map((r) => r.uri)
      .map((uri) => ({ uri, size: subtreeSize(db, uri) }))
      .filter((c) => c.size >= 10)
      .sort((x, y) => x.size - y.size || (x.uri < y.uri ? -1 : 1));
    if (children.length === 0) break;
    dir = children[0]!.uri;
    size = children[0]!.size;
  }
  return dir;
}

export function queries(ctx: SizeContext, db: Database): Query[] {
  const deep = uriOf(ctx, ctx.tree.deepDir, true);
  const small = smallDeepDir(db, deep);
  const [a, b] = ctx.tree.siblingDirs.map((d) => uriOf(ctx, d));
  const src = uriOf(ctx, 'src', true);
  const isTs = picomatch('*.ts');
  const mdUnderSrc = `${src}**/*.md`;
  const isMdUnderSrc = picomatch(mdUnderSrc);
  const inPath = (p: string) => (u: string) => u === p || u.startsWith(`${p}/`) || u.startsWith(`${p}?`) || u.startsWith(`${p}#`);
  const nameOf = (u: string) => decodeURIComponent(u.replace(/\/$/, '').split('/').pop() ?? '');
  return [
    {
      key: 'prefix',
      label: 'prefix (deep dir)',
      params: { prefix: deep },
      accepts: (u) => u.startsWith(deep),
      floorSql: `SELECT ${COLS} FROM entries WHERE uri >= ? AND uri < ? ORDER BY uri LIMIT ${PAGE}`,
      floorArgs: [deep, successor(deep)],
      naive: () => walkPage(join(ctx.root, ctx.tree.deepDir), '**', () => true),
    },
    {
      key: 'prefixSmall',
      label: `prefix (deep dir of about 20 entries: ${decodeURIComponent(small.slice(deep.length))})`,
      params: { prefix: small },
      accepts: (u) => u.startsWith(small),
      floorSql: `SELECT ${COLS} FROM entries WHERE uri >= ? AND uri < ? ORDER BY uri LIMIT ${PAGE}`,
      floorArgs: [small, successor(small)],
      naive: () => walkPage(fileURLToPath(small), '**', () => true),
    },
    {
      key: 'uri_paths',
      label: 'filters.uri_paths (a sibling pair)',
      params: { filters: { uri_paths: [a, b] } },
      accepts: (u) => inPath(a!)(u) || inPath(b!)(u),
      // Two range scans merged (an OR of ranges would make SQLite scan the table).
      floorSql: `SELECT * FROM (SELECT ${COLS} FROM entries WHERE uri >= ? AND uri < ? ORDER BY uri LIMIT ${PAGE})
        UNION ALL SELECT * FROM (SELECT ${COLS} FROM entries WHERE uri >= ? AND uri < ? ORDER BY uri LIMIT ${PAGE}) ORDER BY uri LIMIT ${PAGE}`,
      floorArgs: [`${a}/`, successor(`${a}/`), `${b}/`, successor(`${b}/`)],
      naive: async () => {
        const [pa, pb] = await Promise.all(ctx.tree.siblingDirs.map((d) => walkPage(join(ctx.root, d), '**', () => true)));
        return [...pa!, ...pb!].sort().slice(0, PAGE);
      },
    },
    {
      key: 'namePatterns',
      label: 'filter.namePatterns ["*.ts"]',
      params: { filter: { namePatterns: ['*.ts'] } },
      accepts: (u) => isTs(nameOf(u)),
      floorSql: `SELECT ${COLS} FROM entries WHERE ext = 'ts' AND uri >= '' ORDER BY uri LIMIT ${PAGE}`,
      floorArgs: [],
      naive: () => walkPage(ctx.root, '**', (_u, name) => isTs(name)),
    },
    {
      key: 'uriPatterns',
      label: 'filter.uriPatterns ["<root>/src/**/*.md"]',
      params: { filter: { uriPatterns: [mdUnderSrc] } },
      accepts: (u) => isMdUnderSrc(u),
      floorSql: `SELECT ${COLS} FROM entries WHERE uri >= ? AND uri < ? AND ext = 'md' ORDER BY uri LIMIT ${PAGE}`,
      floorArgs: [src, successor(src)],
      naive: () => walkPage(join(ctx.root, 'src'), '**', (u) => isMdUnderSrc(u)),
    },
    {
      key: 'children',
      label: 'uri (children of src/)',
      params: { uri: src },
      accepts: (u) => u.startsWith(src) && !u.slice(src.length).replace(/\/$/, '').includes('/'),
      floorSql: `SELECT ${COLS} FROM entries WHERE parent = ? AND uri >= '' ORDER BY uri LIMIT ${PAGE}`,
      floorArgs: [src],
      naive: () => walkPage(join(ctx.root, 'src'), '*', () => true, false),
    },
  ];
}

export interface QueryResult {
  label: string;
  items: number;
  /** False when the page broke the filter: the server ignores the param (not wired yet). */
  honoured: boolean;
  server: Stat;
  floor: Stat;
  naive: Stat;
}

export interface ListResult {
  /** A `ping` round trip: the JSON-RPC-over-stdio floor under every page. */
  ping?: Stat;
  queries: Record<string, QueryResult>;
  peakRssMiB: number | null;
}

export const list: Scenario<ListResult> = {
  name: 'list',
  async run(ctx) {
    if (!existsSync(ctx.db)) return { skipped: 'no index from the cold scenario (run it first)' };
    const iterations = ctx.quick ? 60 : 300;
    const conn = await spawnFolderMcp(ctx.root, ctx.db, ['--page-size', String(PAGE), '--watcher', 'none']);
    await settled(conn, performance.now(), settleTimeout(ctx.tree.size));
    const db = openDatabase(ctx.db, chooseDriver(), { readOnly: true });
    const out: Record<string, QueryResult> = {};
    try {
      for (let i = 0; i < 20; i++) await conn.client.ping();
      const ping = summarize(await sampleWithin(iterations, 5_000, () => conn.client.ping(), 20));
      for (const q of queries(ctx, db)) {
        ctx.log(`  list: ${q.label}`);
        const first = await conn.request('resources/list', q.params);
        const uris = (first.resources as { uri: string }[]).map((r) => r.uri);
        const honoured = uris.length > 0 && uris.every(q.accepts);
        for (let i = 0; i < 10; i++) await conn.request('resources/list', q.params);
        const server = await sampleWithin(iterations, 20_000, () => conn.request('resources/list', q.params), 20);
        const stmt = db.prepare(q.floorSql);
        for (let i = 0; i < 20; i++) stmt.all(...q.floorArgs);
        const floor = await sampleWithin(iterations * 3, 5_000, () => stmt.all(...q.floorArgs), 20);
        const naive = await sampleWithin(ctx.quick ? 5 : 20, ctx.quick ? 5_000 : 15_000, () => q.naive(), 2);
        out[q.key] = { label: q.label, items: uris.length, honoured, server: summarize(server), floor: summarize(floor), naive: summarize(naive) };
      }
      return { ping, queries: out, peakRssMiB: peakRssMiB(conn.pid) };
    } finally {
      db.close();
      await conn.close();
    }
  },
  tables(bySize) {
    const header = ['size', 'query', 'items', 'folder-mcp p50', 'p99', 'min–max', 'SQLite floor p50', 'naive walk p50', 'vs floor', 'naive/folder-mcp', `vs ${sizeLabel(bySize[0]?.size ?? 0)}`];
    const base = bySize[0]?.result;
    const rows: string[][] = [];
    for (const { size, result: r } of bySize) {
      if ('skipped' in r) {
        rows.push(skippedRow(size, r, header.length));
        continue;
      }
      if (r.ping) {
        rows.push([sizeLabel(size), 'ping (stdio round trip, no work)', '', fmtMs(r.ping.p50), fmtMs(r.ping.p99), `${fmtMs(r.ping.min)}–${fmtMs(r.ping.max)}`, '', '', '', '', '']);
      }
      for (const [key, q] of Object.entries(r.queries)) {
        const b = base && !('skipped' in base) ? base.queries[key] : undefined;
        rows.push([
          sizeLabel(size),
          q.label + (q.honoured ? '' : ' (param ignored by server)'),
          String(q.items),
          fmtMs(q.server.p50),
          fmtMs(q.server.p99),
          `${fmtMs(q.server.min)}–${fmtMs(q.server.max)}`,
          fmtMs(q.floor.p50),
          fmtMs(q.naive.p50),
          fmtRatio(q.server.p50 / q.floor.p50),
          fmtRatio(q.naive.p50 / q.server.p50),
          b ? fmtRatio(q.server.p50 / b.server.p50) : 'n/a',
        ]);
      }
    }
    return [
      {
        title: `3. One ${PAGE}-item resources/list page (round trip over stdio)`,
        header,
        rows,
        note: 'Targets: prefix p50 <= 2 ms at 1M and a largest/smallest size ratio <= 2. The floor is the bare SQLite query in-process (no JSON-RPC); the naive walk is fast-glob + filter per request.',
      },
    ];
  },
};
