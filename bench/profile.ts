// Where the cold index spends its time, phase by phase, on one tree:
//   node --import tsx bench/profile.ts <dir> [--scan-only]
//   node --cpu-prof --cpu-prof-dir /tmp/prof --import tsx bench/profile.ts <dir>
// Prints wall time and the process's CPU time (user+system, all threads) per
// phase: on a busy machine CPU time is the steadier of the two.
import fg from 'fast-glob';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDb } from '../src/index/db.ts';
import type { EntryRow } from '../src/entry.ts';
import { FolderIndex } from '../src/index/folder-index.ts';
import { IgnoreRules } from '../src/index/ignore.ts';
import { Walk, entryRow } from '../src/index/scan.ts';
import { scanInThread } from '../src/index/scan-thread.ts';
import { SkipReport } from '../src/index/servable.ts';
import { dirname } from 'node:path';
import type { Stats } from 'node:fs';
import { pathToUri } from '../src/uri.ts';
import { Store } from '../src/index/store.ts';
import { silentLogger } from '../src/log.ts';
import { makeRoot } from '../src/uri.ts';

const root = makeRoot(process.argv[2]!);
const db = join(tmpdir(), 'folder-mcp-bench-profile.db');
const clean = () => {
  for (const s of ['', '-wal', '-shm']) rmSync(db + s, { force: true });
};

async function phase(label: string, fn: () => Promise<unknown> | unknown): Promise<void> {
  const cpu = process.cpuUsage();
  const t = performance.now();
  const extra = await fn();
  const c = process.cpuUsage(cpu);
  console.log(`${label.padEnd(48)} ${String(Math.round(performance.now() - t)).padStart(6)} ms wall ${String(Math.round((c.user + c.system) / 1000)).padStart(6)} ms CPU ${extra ?? ''}`);
}

async function walk(): Promise<number> {
  let n = 0;
  for await (const _ of fg.stream('**', { cwd: root.path, stats: true, onlyFiles: false, dot: true, followSymbolicLinks: false })) n++;
  return n;
}

function upsertAll(rows: EntryRow[], pragma?: string, indexesAfter = false): void {
  clean();
  const opened = openDb(db, silentLogger);
  if (pragma) opened.db.pragma(pragma);
  // The secondary indexes as db.ts declares them, dropped for the load and built once after.
  const indexes = indexesAfter
    ? (opened.db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'entries' AND sql IS NOT NULL`).all() as { sql: string }[])
    : [];
  for (const { sql } of indexes) opened.db.exec(`DROP INDEX ${/INDEX (\w+)/.exec(sql)![1]}`);
  const store = new Store(opened.db);
  for (let i = 0; i < rows.length; i += 2000) store.upsertMany(rows.slice(i, i + 2000));
  for (const { sql } of indexes) opened.db.exec(sql);
  opened.db.close();
}

await walk();
await phase('bare walk (fast-glob, stats)', walk);
/** The scan's own fast-glob options, without its pruning readdir; optionally building rows as the scan does. */
async function walkLikeScan(rowsToo: boolean): Promise<number> {
  let n = 0;
  let lastDir = '';
  let lastDirUri = '';
  const stream = fg.stream('**', { cwd: root.path, absolute: true, onlyFiles: false, dot: true, stats: true, followSymbolicLinks: false, objectMode: true });
  for await (const item of stream as AsyncIterable<{ path: string; name: string; stats: Stats }>) {
    n++;
    if (!rowsToo) continue;
    const dir = dirname(item.path);
    if (dir !== lastDir) {
      lastDir = dir;
      lastDirUri = pathToUri(dir, true);
    }
    entryRow(item.path, item.name, item.stats.isDirectory(), item.stats, lastDirUri, 0);
  }
  return n;
}
await phase('walk, scan options (absolute, objectMode)', () => walkLikeScan(false));
await phase('... + entryRow per entry (no sniff, no prune)', () => walkLikeScan(true));
const rows: EntryRow[] = [];
await phase('walkRoots on this thread (no SQLite)', () => {
  const rules = new IgnoreRules([root], { gitignore: true, exclude: [] });
  const walk = new Walk({ roots: [root], rules, log: silentLogger, skips: new SkipReport() });
  for (let batch = walk.next(2000); batch !== null; batch = walk.next(2000)) rows.push(...batch.rows);
  return rows.length;
});
await phase('walkRoots on its worker thread (no SQLite)', async () => {
  let n = 0;
  for await (const batch of scanInThread({ roots: [root], ignore: { gitignore: true, exclude: [] }, log: silentLogger, skips: new SkipReport(), dbFile: null })) n += batch.rows.uri.length;
  return n;
});
if (!process.argv.includes('--scan-only')) {
  await phase('SQLite upserts only, scan order', () => upsertAll(rows));
  await phase('SQLite upserts only, scan order, sync=OFF', () => upsertAll(rows, 'synchronous = OFF'));
  await phase('SQLite upserts, secondary indexes built after', () => upsertAll(rows, undefined, true));
  await phase('... and sync=OFF', () => upsertAll(rows, 'synchronous = OFF', true));
  const sorted = [...rows].sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0));
  await phase('SQLite upserts only, URI order', () => upsertAll(sorted));
  clean();
  await phase('FolderIndex cold (scan + SQLite)', async () => {
    const fi = new FolderIndex({ roots: [root], dbFile: db, log: silentLogger, gitignore: true, exclude: [] });
    await fi.readiness.reached('scanned');
    fi.close();
  });
}
clean();
