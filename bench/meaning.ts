// Meaning search's costs (issue 35), against the tests' embedding server
// (test/embed-server.ts: a trivial model, so throughput measures folder-mcp's
// side, HTTP and JSON, not a real model's): embedding throughput through
// EmbedProvider, index growth per 10k chunks, and the exact cosine scan's
// query time at 10k and 100k chunks of 768 dimensions (nomic-embed-text's).
// Prints a table and writes bench/results/meaning.json. Usage:
//   node --import tsx bench/meaning.ts [chunks=10000,100000]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDb, setMeta } from '../src/index/db.ts';
import { silentLogger } from '../src/log.ts';
import { EMBED_BATCH, EmbedProvider } from '../src/search/embed-provider.ts';
import { MeaningReader } from '../src/search/meaning-reader.ts';
import { cosineInt8, normalise, quantise } from '../src/search/vectors.ts';
import { startEmbedServer } from '../test/embed-server.ts';
import { rng } from './tree.ts';

const SIZES = (process.argv[2] ?? '10000,100000').split(',').map(Number);
const DIMENSION = 768;
const QUERIES = 50;
/** The rows-read path is slow (seconds at 100k): fewer of its queries. */
const ROWS_QUERIES = 10;
const r = rng(35);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function throughput(chunks: number): Promise<{ chunks: number; ms: number; perSecond: number }> {
  const server = await startEmbedServer();
  try {
    const provider = new EmbedProvider({ url: server.origin, model: 'test', api: 'ollama', timeoutMs: 30_000 });
    const texts = Array.from({ length: chunks }, (_, i) => `chunk ${i} `.repeat(100));
    const started = performance.now();
    // As the background embedder sends them: batches of EMBED_BATCH, two in flight.
    for (let i = 0; i < texts.length; i += 2 * EMBED_BATCH) {
      await Promise.all([provider.embed(texts.slice(i, i + EMBED_BATCH)), provider.embed(texts.slice(i + EMBED_BATCH, i + 2 * EMBED_BATCH))]);
    }
    const ms = performance.now() - started;
    return { chunks, ms: Math.round(ms), perSecond: Math.round(chunks / (ms / 1000)) };
  } finally {
    await server.close();
  }
}

function randomVector(): Float32Array {
  const v = new Float32Array(DIMENSION);
  for (let i = 0; i < DIMENSION; i++) v[i] = r() * 2 - 1;
  return v;
}

type Times = { p50: number; p99: number };

/**
 * The search thread's scan before the in-memory store (src/search/vector-store.ts),
 * copied here from meaning-reader.ts at eee65ce so that both run side by side
 * in one process: every kept vector scored in JavaScript (cosineInt8), best
 * chunk per document in a Map, then sorted.
 */
function previousScan(packed: { count: number; dim: number; docs: Float64Array; chunks: Float64Array; bytes: Int8Array }, unitQuery: Float32Array, limit: number): number[] {
  const best = new Map<number, { chunk: number; score: number }>();
  for (let i = 0; i < packed.count; i++) {
    const doc = packed.docs[i]!;
    const score = cosineInt8(unitQuery, packed.bytes.subarray(i * packed.dim, (i + 1) * packed.dim));
    const had = best.get(doc);
    if (!had || score > had.score) best.set(doc, { chunk: packed.chunks[i]!, score });
  }
  return [...best].sort((x, y) => y[1].score - x[1].score).slice(0, limit).map(([doc]) => doc);
}

function queryTimes(chunks: number, dir: string) {
  const { db } = openDb(join(dir, `meaning-${chunks}.db`), silentLogger);
  const perDoc = 10;
  const docs = chunks / perDoc;
  const insertEntry = db.prepare(`INSERT INTO entries (uri, parent, root, name, ext, kind, size, mtime, mime, ino, dev) VALUES (?, 'file:///b/', 0, ?, 'txt', 0, 1, 0, 'text/plain', ?, 0)`);
  const insertDoc = db.prepare(`INSERT INTO search_docs (id, uri, mtime, size, text) VALUES (?, ?, 0, 1, 1)`);
  const insertText = db.prepare(`INSERT INTO search_fts (rowid, body) VALUES (CAST(? AS INTEGER), ?)`);
  const insertChunk = db.prepare(
    `INSERT INTO search_chunks (doc, start, length, line_start, line_end, place, hash, scale, vec) VALUES (?, 0, 10, 1, 1, NULL, ?, ?, ?)`,
  );
  const before = tableBytes(db);
  const packed = { count: chunks, dim: DIMENSION, docs: new Float64Array(chunks), chunks: new Float64Array(chunks), bytes: new Int8Array(chunks * DIMENSION) };
  let slot = 0;
  for (let d = 1; d <= docs; d += 500) {
    db.transaction(() => {
      for (let id = d; id < d + 500 && id <= docs; id++) {
        const uri = `file:///b/f${String(id).padStart(7, '0')}.txt`;
        insertEntry.run(uri, `f${id}.txt`, id);
        insertDoc.run(id, uri);
        insertText.run(id, 'some words of text');
        for (let c = 0; c < perDoc; c++) {
          const q = quantise(randomVector());
          const chunkId = Number(insertChunk.run(id, `h${id}-${c}`, q.scale, new Uint8Array(q.bytes.buffer)).lastInsertRowid);
          packed.docs[slot] = id;
          packed.chunks[slot] = chunkId;
          packed.bytes.set(q.bytes, slot * DIMENSION);
          slot++;
        }
      }
    })();
  }
  setMeta(db, 'embed_model', 'bench');
  setMeta(db, 'embed_dimension', String(DIMENSION));
  const grown = tableBytes(db) - before;
  const scope = { ranges: [{ lo: '', hi: null }], residual: () => true, exact: true };
  const round = (x: number) => Math.round(x * 10) / 10;
  const stats = (times: number[]): Times => {
    times.sort((a, b) => a - b);
    return { p50: round(percentile(times, 50)), p99: round(percentile(times, 99)) };
  };
  const rowsReader = new MeaningReader(db);
  const kept = new MeaningReader(db, true);
  // The first search by meaning loads the vectors (with no deadline here: the search thread does it a budget at a time).
  const loadStarted = performance.now();
  kept.search(normalise(randomVector()), scope, 20);
  const loadMs = round(performance.now() - loadStarted);
  const memory = kept.memory!;
  const rows: number[] = [];
  const previous: number[] = [];
  const now: number[] = [];
  let agree = 0;
  // Alternating, each query on each: the machine's load falls on all three alike.
  for (let i = 0; i < QUERIES; i++) {
    const query = normalise(randomVector());
    let started = performance.now();
    if (i < ROWS_QUERIES) {
      rowsReader.search(query, scope, 20);
      rows.push(performance.now() - started);
    }
    started = performance.now();
    const old = previousScan(packed, query, 20);
    previous.push(performance.now() - started);
    started = performance.now();
    const found = kept.search(query, scope, 20).hits;
    now.push(performance.now() - started);
    const ids = found.map((h) => Number(h.row.name.slice(1, -4)));
    if (ids.join() === old.join()) agree++;
  }
  db.close();
  return {
    chunks,
    dbBytesPer10k: Math.round((grown / chunks) * 10_000),
    rows: stats(rows),
    previous: stats(previous),
    kept: stats(now),
    loadMs,
    keptMiB: round(memory.bytes / 2 ** 20),
    sameTop20: `${agree}/${QUERIES}`,
  };
}

function tableBytes(db: ReturnType<typeof openDb>['db']): number {
  const row = db.prepare(`SELECT sum(pgsize) AS n FROM dbstat WHERE name LIKE 'search_chunks%' OR name LIKE 'search_embedded%'`).get() as { n: number | null };
  return row.n ?? 0;
}

const dir = mkdtempSync(join(tmpdir(), 'folder-mcp-meaning-'));
try {
  const embed = await throughput(2000);
  const queries = SIZES.map((n) => queryTimes(n, dir));
  const rssMiB = Math.round(process.resourceUsage().maxRSS / 1024);
  console.log(`embedding throughput (test embedder over HTTP, batches of ${EMBED_BATCH}, 2 in flight): ${embed.perSecond} chunks/s (${embed.chunks} in ${embed.ms} ms)`);
  console.log('');
  console.log('| chunks | index growth per 10k chunks | rows read per query (main-thread fallback): p50 / p99 | before: JS scan of kept vectors: p50 / p99 | after: SIMD scan + exact re-rank: p50 / p99 | load into memory | held in memory | same top 20 as before |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const q of queries) {
    console.log(
      `| ${q.chunks} | ${(q.dbBytesPer10k / 1024 / 1024).toFixed(1)} MiB | ${q.rows.p50} / ${q.rows.p99} ms | ${q.previous.p50} / ${q.previous.p99} ms | ${q.kept.p50} / ${q.kept.p99} ms | ${q.loadMs} ms | ${q.keptMiB} MiB | ${q.sameTop20} |`,
    );
  }
  console.log('');
  console.log(`peak RSS of this process (index built and scanned in it): ${rssMiB} MiB; dimension ${DIMENSION}, int8 vectors, exact scan, ${QUERIES} queries each`);
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/meaning.json', JSON.stringify({ dimension: DIMENSION, embed, queries, peakRssMiB: rssMiB, node: process.version, at: new Date().toISOString() }, null, 2) + '\n');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
