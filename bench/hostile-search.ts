// A hostile full-text query against a generated tree, served by the built CLI
// over stdio: how long the query takes, and the latency of resources/list
// requests sent every 5 ms while it runs. Usage:
//   node --import tsx bench/hostile-search.ts [files=20000]
import { connect, type Connected } from '../test/helpers.ts';
import { rng } from './tree.ts';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const size = Number(process.argv[2] ?? 20_000);
const tree = proseTree(size);
const state = mkdtempSync(join(tmpdir(), 'folder-mcp-hostile-'));
/**
 * A tree of prose-like files (about 300 words each from a 50,000-word random
 * vocabulary), so every file has words starting with every letter: the case
 * where each one-letter prefix term expands to thousands of index terms.
 */
function proseTree(files: number): { root: string; needle: string } {
  const root = join(tmpdir(), 'folder-mcp-bench', 'trees', `prose-${files}`);
  const needle = 'zebrafinch';
  if (existsSync(`${root}.done`)) return { root, needle };
  rmSync(root, { recursive: true, force: true });
  const r = rng(7);
  const letters = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const vocab = Array.from({ length: 50_000 }, () => {
    let w = '';
    for (let n = 3 + Math.floor(r() * 8); n > 0; n--) w += letters[Math.floor(r() * 26)];
    return w;
  });
  for (let d = 0; d < 3; d++) vocab.push(...Array.from({ length: 10 }, (_, i) => `${i}${letters[d]}x${i}`));
  for (let i = 0; i < files; i++) {
    const dir = join(root, `d${i % 100}`);
    mkdirSync(dir, { recursive: true });
    const words: string[] = [];
    for (let n = 0; n < 300; n++) words.push(vocab[Math.floor(r() * vocab.length)]!);
    for (let c = 0; c < 10; c++) words.push(`${c}${letters[Math.floor(r() * 26)]}`);
    if (i % 50 === 0) words.push(needle);
    writeFileSync(join(dir, `f${i}.txt`), words.join(' ').replace(/(([^ ]+ ){12})/g, '$1\n'));
  }
  writeFileSync(`${root}.done`, '');
  return { root, needle };
}

const HOSTILE = 'w* f* a* b* c* d* e* g* h* i* j* k* l* m* n* o* p* q* r* s* t* u* v* x* y* z* 1* 2* 3* 4* 5* 6*';

/** The broadest query the parser accepts: 4 three-letter prefix terms (src/search/search-query.ts). */
const BROAD = 'abc* cde* efg* ghi*';

async function search(conn: Connected, query: string) {
  return conn.request('tools/call', { name: 'search', arguments: { query } });
}

const conn = await connect(['--db', join(state, 'i.db'), '--watcher', 'none', tree.root]);
try {
  const started = performance.now();
  for (;;) {
    const r = (await search(conn, tree.needle)) as { structuredContent?: { indexing?: unknown } };
    if (r.structuredContent && !r.structuredContent.indexing) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  process.stderr.write(`content index built in ${Math.round(performance.now() - started)} ms\n`);
  for (const [label, query] of [['hostile', HOSTILE], ['broad', BROAD], ['needle', tree.needle]] as const) {
    const latencies: number[] = [];
    let done = false;
    const t0 = performance.now();
    const pending = search(conn, query).then((r) => {
      done = true;
      return r;
    });
    const pinger = (async () => {
      while (!done) {
        const s = performance.now();
        await conn.request('resources/list', {});
        latencies.push(performance.now() - s);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const result = (await pending) as { structuredContent?: Record<string, unknown>; isError?: boolean; content?: { text?: string }[] };
    const took = performance.now() - t0;
    await pinger;
    latencies.sort((a, b) => a - b);
    const pct = (p: number) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(1) : '-');
    const sc = result.structuredContent ?? {};
    console.log(
      `${label.padEnd(8)} files=${size} query_ms=${took.toFixed(0)} results=${(sc.results as unknown[] | undefined)?.length ?? '-'} ` +
        `truncated=${JSON.stringify(sc.truncated ?? null)} isError=${result.isError ?? false} ` +
        `concurrent_list n=${latencies.length} p50=${pct(0.5)} p99=${pct(0.99)} max=${pct(1)} ms` +
        (result.isError ? ` (${result.content?.[0]?.text})` : ''),
    );
  }
} finally {
  await conn.close();
  rmSync(state, { recursive: true, force: true });
}
