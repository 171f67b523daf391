// Meaning search in the real server (issue 35) at 100k chunks: a generated
// tree of text files is indexed by the built CLI (no embeddings), then every
// indexed document gets 8 chunks of random 768-dimension vectors written
// straight into the index (embedding 100k chunks through a provider takes
// tens of minutes on a loaded 2-core machine; the embedding path has its own
// figures in bench/meaning.ts and its tests), and the server is started again
// on it, warm, with the tests' embedding server answering 768 dimensions:
// `search` by meaning and hybrid as a client sees them (the query's own
// embedding over HTTP included), and the server's peak RSS (VmHWM), beside
// the same server and queries with embeddings off. Prints a table and writes
// bench/results/meaning-server.json. Usage (after npm run build):
//   nice -n 10 node --import tsx bench/meaning-server.ts [files=12500]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDb, setMeta } from '../src/index/db.ts';
import { silentLogger } from '../src/log.ts';
import { quantise } from '../src/search/vectors.ts';
import { startEmbedServer } from '../test/embed-server.ts';
import { CLI, peakRssMiB, spawnServer } from './client.ts';
import { rng } from './tree.ts';

const FILES = Number(process.argv[2] ?? 12_500);
const CHUNKS_PER_DOC = 8;
const DIMENSION = 768;
const QUERIES = 50;
const LINES_PER_FILE = 20;
const r = rng(36);
const WORDS = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}${'abcdefghij'[i % 10]}`);
const word = () => WORDS[Math.floor(r() * WORDS.length)]!;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

type Call = { structuredContent?: { note?: string; indexing?: unknown; mode?: string; results?: unknown[]; truncated?: boolean } };

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
  const db = join(dir, 'index.db');
  // 1. The index, without embeddings: entries and the content index, complete.
  let conn = await spawnServer(CLI, [root, '--db', db]);
  try {
    for (;;) {
      const result = (await conn.request('tools/call', { name: 'search', arguments: { query: word(), mode: 'text' } })) as Call;
      if (!result.structuredContent?.indexing) break;
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  } finally {
    await conn.close();
  }
  // 2. Vectors for every document, as embeddings.ts writes them (ids that only grow, the model and dimension in meta).
  const index = openDb(db, silentLogger).db;
  const docs = index.prepare(`SELECT id, mtime, size FROM search_docs WHERE text = 1 ORDER BY id`).all() as { id: number; mtime: number; size: number }[];
  const insertChunk = index.prepare(
    `INSERT INTO search_chunks (id, doc, start, length, line_start, line_end, place, hash, scale, vec) VALUES (?, ?, 0, 60, 1, 1, NULL, ?, ?, ?)`,
  );
  const insertEmbedded = index.prepare(`INSERT INTO search_embedded (doc, mtime, size) VALUES (?, ?, ?)`);
  let id = 1;
  for (let i = 0; i < docs.length; i += 500) {
    index.transaction(() => {
      for (const d of docs.slice(i, i + 500)) {
        for (let c = 0; c < CHUNKS_PER_DOC; c++) {
          const v = new Float32Array(DIMENSION);
          for (let k = 0; k < DIMENSION; k++) v[k] = r() * 2 - 1;
          const q = quantise(v);
          insertChunk.run(id++, d.id, `h${id}`, q.scale, new Uint8Array(q.bytes.buffer));
        }
        insertEmbedded.run(d.id, d.mtime, d.size);
      }
    })();
  }
  setMeta(index, 'embed_model', 'bench-768');
  setMeta(index, 'embed_dimension', String(DIMENSION));
  setMeta(index, 'embed_next_chunk', String(id));
  index.close();
  const chunks = id - 1;
  // 3. The same index served warm, with embeddings off, then on; the same queries.
  const stats = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return { p50: Math.round(percentile(sorted, 50) * 10) / 10, p99: Math.round(percentile(sorted, 99) * 10) / 10 };
  };
  const runs: Record<string, { rss: number | null; times: Record<string, { p50: number; p99: number }> }> = {};
  for (const embeddings of [false, true]) {
    conn = await spawnServer(CLI, [root, '--db', db, ...(embeddings ? ['--embed-url', provider.origin, '--embed-model', 'bench-768'] : [])]);
    try {
      const search = (query: string, mode: string) => conn.request('tools/call', { name: 'search', arguments: { query, mode, limit: 20 } }) as Promise<Call>;
      const modes = embeddings ? ['meaning', 'hybrid', 'text'] : ['text'];
      // The first search by meaning loads the vectors on the search thread, a budget at a time: until it is done, results say truncated.
      if (embeddings) {
        for (;;) {
          const result = (await search(word(), 'meaning')) as Call & { structuredContent?: { truncated?: boolean } };
          if (result.structuredContent?.note !== undefined) throw new Error(`unexpected note: ${result.structuredContent.note}`);
          if (!result.structuredContent?.truncated) break;
        }
      } else await search(word(), 'text');
      const times: Record<string, number[]> = Object.fromEntries(modes.map((m) => [m, []]));
      for (let i = 0; i < QUERIES; i++) {
        for (const mode of modes) {
          const t = performance.now();
          await search(`${word()} ${word()}`, mode);
          times[mode]!.push(performance.now() - t);
        }
      }
      runs[embeddings ? 'on' : 'off'] = { rss: peakRssMiB(conn.pid), times: Object.fromEntries(modes.map((m) => [m, stats(times[m]!)])) };
    } finally {
      await conn.close();
    }
  }
  const on = runs.on!;
  const off = runs.off!;
  const result = { files: FILES, docs: docs.length, chunks, dimension: DIMENSION, queries: QUERIES, off, on, node: process.version, at: new Date().toISOString() };
  console.log(`${FILES} files, ${docs.length} documents with text, ${chunks} chunks of ${DIMENSION} dimensions; ${QUERIES} queries of each kind, over stdio`);
  console.log('');
  console.log('| embeddings | search by meaning p50 / p99 | hybrid p50 / p99 | text p50 / p99 | server peak RSS |');
  console.log('|---|---:|---:|---:|---:|');
  const cell = (t?: { p50: number; p99: number }) => (t ? `${t.p50} / ${t.p99} ms` : '-');
  console.log(`| off | - | - | ${cell(off.times.text)} | ${off.rss ?? '?'} MiB |`);
  console.log(`| on | ${cell(on.times.meaning)} | ${cell(on.times.hybrid)} | ${cell(on.times.text)} | ${on.rss ?? '?'} MiB |`);
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/meaning-server.json', JSON.stringify(result, null, 2) + '\n');
} finally {
  await provider.close();
  rmSync(dir, { recursive: true, force: true });
}
