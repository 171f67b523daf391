// Meaning search in the real server (issue 35): a generated tree of text
// files, ~10 chunks each, served by the built CLI over stdio with the tests'
// embedding server (test/embed-server.ts) answering 768-dimension vectors;
// measures the embedding of every chunk end to end, then `search` by meaning
// and hybrid as a client sees them (the query's own embedding over HTTP
// included), and the server's peak RSS (VmHWM). Prints a table and writes
// bench/results/meaning-server.json. Usage (after npm run build):
//   nice -n 10 node --import tsx bench/meaning-server.ts [files=10000]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbedServer } from '../test/embed-server.ts';
import { CLI, peakRssMiB, spawnServer } from './client.ts';
import { rng } from './tree.ts';

const FILES = Number(process.argv[2] ?? 10_000);
const DIMENSION = 768;
const QUERIES = 50;
const LINES_PER_FILE = 200; // ~65 characters a line: ~13 KB, ~10 chunks of at most 1,500 characters
const r = rng(36);
const WORDS = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}${'abcdefghij'[i % 10]}`);
const word = () => WORDS[Math.floor(r() * WORDS.length)]!;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

type Call = { structuredContent?: { note?: string; indexing?: unknown; mode?: string; results?: unknown[] } };

const dir = mkdtempSync(join(tmpdir(), 'folder-mcp-meaning-server-'));
const root = join(dir, 'tree');
const provider = await startEmbedServer({ dimension: DIMENSION, record: false });
try {
  for (let f = 0; f < FILES; f++) {
    const sub = join(root, `d${Math.floor(f / 100)}`);
    if (f % 100 === 0) mkdirSync(sub, { recursive: true });
    const lines = Array.from({ length: LINES_PER_FILE }, () => Array.from({ length: 9 }, word).join(' '));
    writeFileSync(join(sub, `f${f}.txt`), lines.join('\n') + '\n');
  }
  const started = performance.now();
  const conn = await spawnServer(CLI, [root, '--db', join(dir, 'index.db'), '--embed-url', provider.origin, '--embed-model', 'bench-768']);
  try {
    const search = (query: string, mode: string) => conn.request('tools/call', { name: 'search', arguments: { query, mode, limit: 20 } }) as Promise<Call>;
    // Every chunk embedded: no note on a search by meaning (it says "covers N of M files so far" until then).
    let last = '';
    for (;;) {
      const result = await search(word(), 'meaning');
      const s = result.structuredContent;
      if (s && !s.indexing && s.note === undefined && s.mode === 'meaning') break;
      if (s?.note && s.note !== last) {
        last = s.note;
        process.stderr.write(`${Math.round((performance.now() - started) / 1000)} s: ${s.note}\n`);
      }
      await new Promise((resolve) => setTimeout(resolve, 5000));
    }
    const embeddedS = (performance.now() - started) / 1000;
    const chunks = /\((\d+) chunks\) embedded/.exec(conn.stderr());
    const times: Record<string, number[]> = { meaning: [], hybrid: [] };
    for (let i = 0; i < QUERIES; i++) {
      for (const mode of ['meaning', 'hybrid']) {
        const t = performance.now();
        await search(`${word()} ${word()}`, mode);
        times[mode]!.push(performance.now() - t);
      }
    }
    const rss = peakRssMiB(conn.pid);
    const stats = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return { p50: Math.round(percentile(sorted, 50) * 10) / 10, p99: Math.round(percentile(sorted, 99) * 10) / 10 };
    };
    const result = {
      files: FILES,
      chunks: chunks ? Number(chunks[1]) : null,
      dimension: DIMENSION,
      spawnToAllEmbeddedS: Math.round(embeddedS),
      meaning: stats(times.meaning!),
      hybrid: stats(times.hybrid!),
      peakRssMiB: rss,
      node: process.version,
      at: new Date().toISOString(),
    };
    console.log(`| files | chunks | spawn -> every chunk embedded | search by meaning p50 / p99 | hybrid p50 / p99 | server peak RSS |`);
    console.log(`|---:|---:|---:|---:|---:|---:|`);
    console.log(
      `| ${FILES} | ${result.chunks ?? '?'} | ${result.spawnToAllEmbeddedS} s | ${result.meaning.p50} / ${result.meaning.p99} ms | ${result.hybrid.p50} / ${result.hybrid.p99} ms | ${rss ?? '?'} MiB |`,
    );
    mkdirSync('bench/results', { recursive: true });
    writeFileSync('bench/results/meaning-server.json', JSON.stringify(result, null, 2) + '\n');
  } finally {
    await conn.close();
  }
} finally {
  await provider.close();
  rmSync(dir, { recursive: true, force: true });
}
