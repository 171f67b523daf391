/**
 * One cold start with search on (the default), until the content index is
 * complete: the server's peak RSS (worker threads included, they share the
 * process), the conversion process's peak RSS apart, the scan and content
 * index times from the server's log, the database's size and the content
 * index's share of it (SQLite's dbstat). Issue 34's "1M files, search on"
 * row. Prints a table and writes bench/results/search-cold-<timestamp>.json.
 *
 *   npm run build && nice -n 10 node --import tsx bench/search-cold.ts --size 1000000
 */
import Database from 'better-sqlite3';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gitRev, RESULTS_DIR } from './results.ts';
import { peakRssMiB, settleTimeout, spawnFolderMcp } from './client.ts';
import { benchHome, ensureTree } from './tree.ts';

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '1000000' },
    seed: { type: 'string', default: '1' },
    watcher: { type: 'string' },
    keep: { type: 'boolean' },
    'no-search': { type: 'boolean' },
    'timeout-min': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write('Usage: node --import tsx bench/search-cold.ts [--size N (default 1000000)] [--seed N] [--watcher BACKEND (default: the server default)] [--keep (keep the database)] [--no-search (the same start without the content index, to compare)] [--timeout-min N (default: 4 x 30 s + 1.2 ms per file)]; SIGTERM or SIGINT stops the wait and reports what was reached\n');
  process.exit(0);
}
const size = Number(values.size);
const log = (line: string) => process.stderr.write(`${line}\n`);
const tree = ensureTree(size, Number(values.seed), log);
mkdirSync(benchHome(), { recursive: true });
const work = mkdtempSync(join(benchHome(), 'search-cold-'));
const db = join(work, 'index.db');

/** Children of `pid` (the conversion process), from /proc. */
function children(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const list = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (list) out.push(...list.split(/\s+/).map(Number));
    }
  } catch {
    // gone, or not Linux
  }
  return out;
}

const loads: number[] = [];
const childPeak = new Map<number, number>();
let serverPeak = 0;
let peakAt: { phase: string; s: number } | null = null;
let buildProgress: { done: number; total: number; s: number; perSecond: number } | null = null;
/** The highest RSS sampled (VmRSS, every 250 ms) in each phase the server's log marks. */
const phasePeak: Record<string, number> = {};
/** Resident set (VmRSS) of a process in MiB, or null where /proc is not there. */
function rssMiB(pid: number): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Math.round(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}
const t0 = performance.now();
const search = !values['no-search'];
const conn = await spawnFolderMcp(tree.root, db, [...(values.watcher ? ['--watcher', values.watcher] : []), ...(search ? [] : ['--no-search'])]);
await conn.request('resources/list', {});
const firstPageMs = performance.now() - t0;
const seen: Record<string, number> = {};
const patterns: Record<string, RegExp> = {
  scanMs: /indexed \d+ entries in (\d+) ms/,
  reconcileMs: /index checked against the disk in (\d+) ms/,
  contentIndexMs: /content index: \d+ (?:text )?documents checked in (\d+) ms/,
};
const deadline = performance.now() + (values['timeout-min'] ? Number(values['timeout-min']) * 60_000 : 4 * settleTimeout(size));
// Stopped by hand (a shared machine too loaded to finish in time): the figures reached so far, marked as not done.
let stopped = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => (stopped = true));
let lastLoad = 0;
for (;;) {
  // The server keeps only the last 50,000 characters of stderr: catch each line while it is there.
  const err = conn.stderr();
  for (const [key, re] of Object.entries(patterns)) {
    const m = seen[key] === undefined ? re.exec(err) : null;
    if (m) seen[key] = Number(m[1]);
  }
  const peak = peakRssMiB(conn.pid) ?? 0;
  const phase = seen.scanMs === undefined ? 'scan' : seen.reconcileMs === undefined ? 'disk check' : 'content index';
  // Where the peak was reached: the phase of the sample at which VmHWM last grew.
  if (peak > serverPeak) peakAt = { phase, s: Math.round((performance.now() - t0) / 1000) };
  serverPeak = Math.max(serverPeak, peak);
  // The build's own progress line (every 2 s): how far a run stopped before the end got, and at what rate.
  const progress = [...err.matchAll(/content index: (\d+) of (\d+) documents checked in (\d+) s \((\d+) documents\/s\)/g)].at(-1);
  if (progress) buildProgress = { done: Number(progress[1]), total: Number(progress[2]), s: Number(progress[3]), perSecond: Number(progress[4]) };
  const rss = rssMiB(conn.pid);
  if (rss !== null) phasePeak[phase] = Math.max(phasePeak[phase] ?? 0, rss);
  for (const c of children(conn.pid)) childPeak.set(c, Math.max(childPeak.get(c) ?? 0, peakRssMiB(c) ?? 0));
  if (performance.now() - lastLoad > 10_000) {
    loads.push(loadavg()[0]!);
    lastLoad = performance.now();
  }
  if (((seen.contentIndexMs !== undefined || !search) && seen.reconcileMs !== undefined) || performance.now() > deadline || stopped) break;
  await new Promise((r) => setTimeout(r, 250));
}
const settledMs = performance.now() - t0;
serverPeak = Math.max(serverPeak, peakRssMiB(conn.pid) ?? 0);
await conn.close();

const fileMiB = (f: string) => {
  try {
    return statSync(f).size / 2 ** 20;
  } catch {
    return 0;
  }
};
const dbMiB = fileMiB(db);
const walMiB = fileMiB(`${db}-wal`);
// Every table and index by its pages; the content index is what --no-search would not create.
const sqlite = new Database(db, { readonly: true });
let byName: { name: string; bytes: number }[] = [];
try {
  byName = sqlite.prepare('SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC').all() as typeof byName;
} catch (error) {
  log(`dbstat not available: ${(error as Error).message}`);
}
sqlite.close();
// The content index's tables (src/index/db.ts): search_docs, search_fts and its shadow tables, search_chunks...
const isSearch = (name: string) => /(^|_)search_/.test(name);
const searchBytes = byName.filter((r) => isSearch(r.name)).reduce((s, r) => s + r.bytes, 0);
const totalBytes = byName.reduce((s, r) => s + r.bytes, 0);

const result = {
  at: new Date().toISOString(),
  commit: gitRev(),
  size,
  files: tree.files,
  watcher: values.watcher ?? 'default',
  search,
  done: seen.reconcileMs !== undefined && (seen.contentIndexMs !== undefined || !search),
  firstPageMs: Math.round(firstPageMs),
  scanMs: seen.scanMs ?? null,
  reconcileMs: seen.reconcileMs ?? null,
  contentIndexMs: seen.contentIndexMs ?? null,
  settledMs: Math.round(settledMs),
  serverPeakRssMiB: serverPeak,
  peakReachedIn: peakAt,
  contentIndexProgress: buildProgress,
  sampledRssPeakByPhaseMiB: phasePeak,
  conversionPeakRssMiB: childPeak.size ? Math.max(...childPeak.values()) : null,
  dbMiB: +dbMiB.toFixed(1),
  walMiB: +walMiB.toFixed(1),
  searchMiB: +(searchBytes / 2 ** 20).toFixed(1),
  searchShare: totalBytes ? +(searchBytes / totalBytes).toFixed(3) : null,
  loadavg1: { min: Math.min(...loads), max: Math.max(...loads), mean: +(loads.reduce((a, b) => a + b, 0) / loads.length).toFixed(1) },
  tables: byName.map((r) => ({ name: r.name, MiB: +(r.bytes / 2 ** 20).toFixed(1) })),
};
const rows: [string, string][] = [
  ['files', String(tree.files)],
  ['spawn → first page', `${result.firstPageMs} ms`],
  ['scan (log)', `${result.scanMs} ms`],
  ['disk check (log)', `${result.reconcileMs} ms`],
  ['content index (log)', `${result.contentIndexMs} ms`],
  ['content index progress (last log line)', buildProgress ? `${buildProgress.done} of ${buildProgress.total} in ${buildProgress.s} s (${buildProgress.perSecond}/s)` : '—'],
  ['spawn → all done', `${result.settledMs} ms${result.done ? '' : ' (timed out)'}`],
  ['server peak RSS (VmHWM, threads included)', `${serverPeak} MiB`],
  ['peak reached in (phase, s after spawn)', peakAt ? `${peakAt.phase}, ${peakAt.s} s` : '—'],
  ['sampled RSS peak by phase', Object.entries(phasePeak).map(([k, v]) => `${k} ${v}`).join(', ') + ' MiB'],
  ['conversion process peak RSS', result.conversionPeakRssMiB === null ? 'not seen' : `${result.conversionPeakRssMiB} MiB`],
  ['database / -wal', `${result.dbMiB} / ${result.walMiB} MiB`],
  ['content index (dbstat)', `${result.searchMiB} MiB (${((result.searchShare ?? 0) * 100).toFixed(0)}%)`],
  ['load average (1 min, min–max)', `${result.loadavg1.min.toFixed(1)}–${result.loadavg1.max.toFixed(1)}`],
];
for (const [k, v] of rows) process.stdout.write(`${k.padEnd(44)} ${v}\n`);
for (const t of result.tables) process.stdout.write(`  ${t.name.padEnd(40)} ${t.MiB} MiB${isSearch(t.name) ? ' (search)' : ''}\n`);
mkdirSync(RESULTS_DIR, { recursive: true });
const out = join(RESULTS_DIR, `search-cold-${search ? '' : 'no-search-'}${result.at.replace(/[:.]/g, '-')}.json`);
writeFileSync(out, JSON.stringify(result, null, 1));
log(`wrote ${out}`);
if (!values.keep) rmSync(work, { recursive: true, force: true });
