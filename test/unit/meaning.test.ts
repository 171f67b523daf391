// The pure parts of meaning search: chunks with their places and lines, int8
// quantisation and cosine, reciprocal rank fusion, the checks every provider
// answer passes (src/search/chunks.ts, vectors.ts, embed-provider.ts), the
// SIMD dot kernel and the in-memory vector store (dot-kernel.ts,
// vector-store.ts); and the store kept in step with a real index by
// MeaningReader, against a scan of the rows (meaning-reader.ts).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import type { Place } from '../../src/content/converters/types.ts';
import { chunkText } from '../../src/search/chunks.ts';
import { checkVectors, defaultEmbedApi, DimensionError, embedEndpoint, EmbedError, type EmbedProvider } from '../../src/search/embed-provider.ts';
import { Embeddings } from '../../src/search/embeddings.ts';
import { cosineInt8, dequantise, fuseRanks, normalise, quantise } from '../../src/search/vectors.ts';
import { dotKernel, wasmMemory } from '../../src/search/dot-kernel.ts';
import { VectorStore } from '../../src/search/vector-store.ts';
import { MeaningReader } from '../../src/search/meaning-reader.ts';
import { openDb, setMeta } from '../../src/index/db.ts';
import { openDatabase } from '../../src/sqlite.ts';
import { silentLogger } from '../../src/log.ts';
import { rng as seeded } from '../../bench/tree.ts';
import { tempDir, waitFor } from '../basics.ts';
import { join } from 'node:path';

const lines = (n: number, width = 9) => Array.from({ length: n }, (_, i) => `l${String(i + 1).padStart(width - 2, '0')}`).join('\n') + '\n';

describe('chunkText', () => {
  const cases: { name: string; text: string; places?: Place[]; max?: number; overlap?: number; want: [number, number, string?][] }[] = [
    { name: 'empty text: no chunk', text: '', want: [] },
    { name: 'blank text: no chunk', text: '\n  \n\n', want: [] },
    { name: 'short text: one chunk, its lines', text: 'a\nb\nc\n', want: [[1, 3]] },
    { name: 'no final newline', text: 'a\nb', want: [[1, 2]] },
    // 10 lines of 10 characters (newline included), 30 per chunk, overlap 10: one line shared.
    { name: 'lines grouped, one line of overlap', text: lines(10, 10), max: 30, overlap: 10, want: [[1, 3], [3, 5], [5, 7], [7, 9], [9, 10]] },
    { name: 'no overlap', text: lines(6, 10), max: 30, overlap: 0, want: [[1, 3], [4, 6]] },
    { name: 'a long line is cut', text: 'x'.repeat(25) + '\n', max: 10, overlap: 0, want: [[1, 1], [1, 1], [1, 1]] },
    {
      name: 'never across a place, each chunk keeps its place',
      text: 'page one\nmore\npage two\n',
      places: [
        { offset: 0, unit: 'page', number: 1 },
        { offset: 14, unit: 'page', number: 2 },
      ],
      want: [[1, 2, 'page 1'], [3, 3, 'page 2']],
    },
    {
      name: 'text before the first place has none',
      text: 'intro\nsheet\n',
      places: [{ offset: 6, unit: 'sheet', number: 1, name: 'S' }],
      want: [[1, 1], [2, 2, 'sheet 1']],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const chunks = chunkText(c.text, c.places, c.max, c.overlap);
      assert.deepEqual(
        chunks.map((ch) => (ch.place ? [ch.lineStart, ch.lineEnd, `${ch.place.unit} ${ch.place.number}`] : [ch.lineStart, ch.lineEnd])),
        c.want,
      );
      for (const ch of chunks) {
        assert.equal(c.text.slice(ch.offset, ch.offset + ch.text.length), ch.text);
        assert.ok(ch.text.length <= (c.max ?? 1500));
      }
    });
  }

  test('every character is in some chunk, and chunks move forward', () => {
    const text = Array.from({ length: 400 }, (_, i) => 'w'.repeat((i * 37) % 90) + ` line ${i}`).join('\n');
    const chunks = chunkText(text, [], 300, 60);
    let covered = 0;
    for (const ch of chunks) {
      assert.ok(ch.offset <= covered, 'no gap');
      assert.ok(ch.offset + ch.text.length > covered, 'moves forward');
      covered = ch.offset + ch.text.length;
    }
    assert.equal(covered, text.length);
  });
});

describe('vectors', () => {
  test('quantise round-trips within a scale step', () => {
    const v = Float32Array.from([0.5, -1, 0.25, 0, 0.003]);
    const q = quantise(v);
    assert.equal(q.bytes[1], -127);
    dequantise(q).forEach((x, i) => assert.ok(Math.abs(x - v[i]!) <= q.scale / 2 + 1e-9));
  });

  test('a zero vector quantises to zero and scores 0', () => {
    const q = quantise(new Float32Array(4));
    assert.deepEqual([...q.bytes], [0, 0, 0, 0]);
    assert.equal(cosineInt8(normalise(Float32Array.from([1, 0, 0, 0])), q.bytes), 0);
  });

  test('cosine over int8 agrees with float cosine', () => {
    const a = Float32Array.from([0.1, 0.7, -0.2, 0.4]);
    const b = Float32Array.from([0.3, 0.5, -0.1, 0.2]);
    const ua = normalise(a);
    const ub = normalise(b);
    const exact = ua.reduce((s, x, i) => s + x * ub[i]!, 0);
    assert.ok(Math.abs(cosineInt8(ua, quantise(b).bytes) - exact) < 0.01);
    assert.ok(Math.abs(cosineInt8(ua, quantise(a).bytes) - 1) < 0.001);
  });

  test('reciprocal rank fusion', () => {
    const cases: { rankings: string[][]; want: string[] }[] = [
      { rankings: [], want: [] },
      { rankings: [['a', 'b', 'c']], want: ['a', 'b', 'c'] },
      // b is second in both: 2/62 beats a's 1/61 + nothing.
      { rankings: [['a', 'b'], ['c', 'b']], want: ['b', 'a', 'c'] },
      // A tie keeps the first ranking's order.
      { rankings: [['a'], ['b']], want: ['a', 'b'] },
    ];
    for (const c of cases) assert.deepEqual(fuseRanks(c.rankings).map((r) => r.key), c.want, JSON.stringify(c.rankings));
    assert.equal(fuseRanks([['a'], ['a']])[0]!.score, 2 / 61);
  });
});

describe('embedding provider answers', () => {
  test('default API by URL path, and the endpoint', () => {
    assert.equal(defaultEmbedApi('http://localhost:11434'), 'ollama');
    assert.equal(defaultEmbedApi('http://localhost:1234/v1'), 'openai');
    assert.equal(defaultEmbedApi('http://localhost:1234/v1/'), 'openai');
    assert.equal(defaultEmbedApi('https://api.example.com/proxy/v1'), 'openai');
    assert.equal(embedEndpoint('http://h:1/', 'ollama').href, 'http://h:1/api/embed');
    assert.equal(embedEndpoint('http://h:1/v1/', 'openai').href, 'http://h:1/v1/embeddings');
  });

  const bad: { name: string; vectors: unknown[]; count: number; dimension?: number; error: RegExp; changed?: number }[] = [
    { name: 'too few vectors', vectors: [[1, 2]], count: 2, error: /1 vectors for 2 texts/ },
    { name: 'another dimension, all alike (a model changed?)', vectors: [[1, 2, 3]], count: 1, dimension: 2, error: /dimension 3, expected 2/, changed: 3 },
    { name: 'another dimension in part', vectors: [[1, 2, 3], [1, 2]], count: 2, dimension: 2, error: /dimension 3, expected 2/ },
    { name: 'mixed dimensions', vectors: [[1, 2], [1]], count: 2, error: /dimension 1, expected 2/ },
    { name: 'NaN', vectors: [[1, NaN]], count: 1, error: /not a finite/ },
    { name: 'null (JSON NaN)', vectors: [[1, null]], count: 1, error: /not a finite/ },
    { name: 'past float32 (finite as a number, Infinity as kept)', vectors: [[1, 1e39]], count: 1, error: /not a finite float32 number/ },
    // What an OpenAI answer with an item missing left: a hole, skipped by every() and map().
    { name: 'a hole', vectors: Object.assign(new Array(2), { 0: [1, 2] }), count: 2, error: /missing vector/ },
    { name: 'empty vector', vectors: [[]], count: 1, error: /empty/ },
    { name: 'not an array', vectors: ['x'], count: 1, error: /empty or missing/ },
  ];
  for (const c of bad) {
    test(`refused: ${c.name}`, () => {
      assert.throws(
        () => checkVectors(c.vectors, c.count, c.dimension),
        (e: Error) => e instanceof EmbedError && c.error.test(e.message) && (e instanceof DimensionError ? e.answered : undefined) === c.changed,
      );
    });
  }
  test('accepted: floats of one dimension', () => {
    assert.deepEqual(checkVectors([[1, 2], [3, 4]], 2, 2).map((v) => [...v]), [[1, 2], [3, 4]]);
  });
});


function randomBytes(r: () => number, dimension: number): Int8Array {
  const out = new Int8Array(dimension);
  for (let i = 0; i < dimension; i++) out[i] = Math.round(r() * 254 - 127);
  return out;
}

function randomUnit(r: () => number, dimension: number): Float32Array {
  const v = new Float32Array(dimension);
  for (let i = 0; i < dimension; i++) v[i] = r() * 2 - 1;
  return normalise(v);
}

describe('dot kernel (WebAssembly SIMD)', () => {
  for (const dimension of [16, 48, 768]) {
    test(`int8 x int16 sums agree with JavaScript's, dimension ${dimension}`, () => {
      const r = seeded(dimension);
      const memory = wasmMemory(4, 16);
      const dots = dotKernel(memory);
      const n = 37;
      const query = new Int16Array(memory.buffer, 0, dimension);
      const vectors = new Int8Array(memory.buffer, 8192, n * dimension);
      for (let i = 0; i < dimension; i++) query[i] = Math.round(r() * 65534 - 32767) >> 4;
      vectors.set(randomBytes(r, n * dimension));
      // Extremes too: -127 and 127 against the largest query values.
      vectors.fill(127, 0, dimension);
      dots(8192, n, dimension, 0, 4096);
      const out = new Int32Array(memory.buffer, 4096, n);
      for (let row = 0; row < n; row++) {
        let sum = 0;
        for (let d = 0; d < dimension; d++) sum += vectors[row * dimension + d]! * query[d]!;
        assert.equal(out[row], sum, `row ${row}`);
      }
    });
  }
});

describe('VectorStore', () => {
  /** The nearest documents as a plain exact scan ranks them: best chunk per document by cosineInt8. */
  function exact(docs: Map<number, Int8Array[]>, query: Float32Array, k: number, allowed: (doc: number) => boolean = () => true) {
    const best: { doc: number; score: number }[] = [];
    for (const [doc, chunks] of docs) {
      if (!allowed(doc) || chunks.length === 0) continue;
      best.push({ doc, score: Math.max(...chunks.map((c) => cosineInt8(query, c))) });
    }
    return best.sort((a, b) => b.score - a.score || a.doc - b.doc).slice(0, k);
  }

  for (const dimension of [5, 64, 100]) {
    test(`nearest agrees with an exact scan through puts, replacements, removals and compaction (dimension ${dimension})`, () => {
      const r = seeded(dimension * 7);
      const store = new VectorStore(dimension);
      const docs = new Map<number, Int8Array[]>();
      let nextId = 1;
      for (let step = 0; step < 3000; step++) {
        const doc = 1 + Math.floor(r() * 400);
        const action = r();
        if (action < 0.8) {
          const chunks = Array.from({ length: Math.floor(r() * 6) }, () => randomBytes(r, dimension));
          store.put(doc, chunks.map((bytes) => ({ id: nextId++, bytes })));
          if (chunks.length > 0) docs.set(doc, chunks);
          else docs.delete(doc);
        } else {
          store.remove(doc);
          docs.delete(doc);
        }
        if (step % 500 === 499) {
          assert.equal(store.documents, docs.size);
          assert.equal(store.size, [...docs.values()].reduce((n, c) => n + c.length, 0));
          for (const k of [1, 10, 50]) {
            const query = randomUnit(r, dimension);
            const got = store.nearest(query, k);
            const want = exact(docs, query, k);
            assert.deepEqual(got.map((g) => g.doc), want.map((w) => w.doc), `step ${step}, k ${k}`);
            got.forEach((g, i) => assert.ok(Math.abs(g.score - want[i]!.score) < 1e-9));
            const odd = (doc: number) => doc % 2 === 1;
            assert.deepEqual(store.nearest(query, k, odd).map((g) => g.doc), exact(docs, query, k, odd).map((w) => w.doc));
          }
        }
      }
    });
  }

  test('each hit names its best chunk; vectors of another length are skipped; an empty store finds nothing', () => {
    const store = new VectorStore(4);
    assert.deepEqual(store.nearest(normalise(Float32Array.from([1, 0, 0, 0])), 5), []);
    store.put(7, [
      { id: 70, bytes: Int8Array.from([0, 100, 0, 0]) },
      { id: 71, bytes: Int8Array.from([100, 0, 0, 0]) },
      { id: 72, bytes: Int8Array.from([1, 2, 3]) },
    ]);
    store.put(8, [{ id: 80, bytes: Int8Array.from([0, 0, 0, 0]) }]);
    assert.equal(store.size, 3);
    const [first, second] = store.nearest(normalise(Float32Array.from([1, 0.1, 0, 0])), 5);
    assert.deepEqual({ doc: first!.doc, chunk: first!.chunk }, { doc: 7, chunk: 71 });
    assert.deepEqual({ doc: second!.doc, score: second!.score }, { doc: 8, score: 0 });
    assert.deepEqual(store.nearest(Float32Array.from([1, 0, 0]), 5), [], 'a query of another dimension');
  });
});

describe('MeaningReader: vectors kept in memory follow the index', () => {
  test('writes, rewrites, removals and a new model, seen from a second connection, as a scan of the rows ranks them', () => {
    const dir = tempDir('folder-mcp-meaning-');
    try {
      const file = join(dir.path, 'index.db');
      const { db } = openDb(file, silentLogger);
      const dimension = 24;
      const r = seeded(35);
      const insertEntry = db.prepare(`INSERT INTO entries (uri, parent, root, name, ext, kind, size, mtime, mime, ino, dev) VALUES (?, 'file:///b/', 0, ?, 'txt', 0, 1, 0, 'text/plain', ?, 0)`);
      const insertDoc = db.prepare(`INSERT INTO search_docs (id, uri, mtime, size, text) VALUES (?, ?, 0, 1, 1)`);
      const insertText = db.prepare(`INSERT INTO search_fts (rowid, body) VALUES (CAST(? AS INTEGER), ?)`);
      const deleteChunks = db.prepare(`DELETE FROM search_chunks WHERE doc = ?`);
      const insertChunk = db.prepare(
        `INSERT INTO search_chunks (id, doc, start, length, line_start, line_end, place, hash, scale, vec) VALUES (?, ?, 0, 4, 1, 1, NULL, 'h', 1, ?)`,
      );
      const docs = 300;
      for (let id = 1; id <= docs; id++) {
        const uri = `file:///b/f${String(id).padStart(4, '0')}.txt`;
        insertEntry.run(uri, `f${id}.txt`, id);
        insertDoc.run(id, uri);
        insertText.run(id, 'text of the file');
      }
      let nextChunk = 1;
      const write = (doc: number, chunks: number) =>
        db.transaction(() => {
          deleteChunks.run(doc);
          for (let c = 0; c < chunks; c++) insertChunk.run(nextChunk++, doc, new Uint8Array(randomBytes(r, dimension).buffer));
        })();
      setMeta(db, 'embed_model', 'a');
      setMeta(db, 'embed_dimension', String(dimension));
      // More than a load page (2,048 chunks), so that loading takes several pages and a document spans two.
      for (let doc = 1; doc <= docs; doc++) write(doc, 1 + (doc % 13));
      const reader = openDatabase(file, db.driver, { readOnly: true });
      try {
        const kept = new MeaningReader(reader, true);
        const rows = new MeaningReader(reader);
        const everything = { ranges: [{ lo: '', hi: null }], residual: () => true, exact: true };
        const scoped = { ranges: [{ lo: 'file:///b/f01', hi: 'file:///b/f02' }], residual: (row: { name: string }) => !row.name.endsWith('3.txt'), exact: false };
        const same = (what: string) => {
          for (const scope of [everything, scoped]) {
            const query = randomUnit(r, dimension);
            const want = rows.search(query, scope, 10).hits.map((h) => `${h.row.name}:${h.line}:${h.score.toFixed(6)}`);
            const got = kept.search(query, scope, 10);
            assert.equal(got.truncated, false);
            assert.deepEqual(got.hits.map((h) => `${h.row.name}:${h.line}:${h.score.toFixed(6)}`), want, what);
          }
        };
        same('first load');
        assert.equal(kept.memory?.complete, true);
        for (let round = 0; round < 5; round++) {
          for (let i = 0; i < 20; i++) write(1 + Math.floor(r() * docs), Math.floor(r() * 4));
          db.transaction(() => deleteChunks.run(1 + Math.floor(r() * docs)))();
          same(`after round ${round} of writes and removals`);
        }
        assert.equal(kept.memory?.chunks, (db.prepare(`SELECT count(*) AS n FROM search_chunks`).get() as { n: number }).n);
        // Another model: everything is embedded again (here: new vectors), and the kept ones are dropped.
        db.transaction(() => {
          db.exec(`DELETE FROM search_chunks`);
          setMeta(db, 'embed_model', 'b');
        })();
        for (let doc = 1; doc <= 50; doc++) write(doc, 2);
        same('another model');
        assert.equal(kept.memory?.chunks, 100);
      } finally {
        reader.close();
        db.close();
      }
    } finally {
      dir.cleanup();
    }
  });

  test('a load past the deadline answers from what is loaded, says so, and goes on where it stopped', () => {
    const dir = tempDir('folder-mcp-meaning-');
    try {
      const file = join(dir.path, 'index.db');
      const { db } = openDb(file, silentLogger);
      const dimension = 8;
      const r = seeded(8);
      db.transaction(() => {
        for (let id = 1; id <= 3000; id++) {
          const uri = `file:///b/f${String(id).padStart(4, '0')}.txt`;
          db.prepare(`INSERT INTO entries (uri, parent, root, name, ext, kind, size, mtime, mime, ino, dev) VALUES (?, 'file:///b/', 0, ?, 'txt', 0, 1, 0, 'text/plain', ?, 0)`).run(uri, `f${id}.txt`, id);
          db.prepare(`INSERT INTO search_docs (id, uri, mtime, size, text) VALUES (?, ?, 0, 1, 1)`).run(id, uri);
          db.prepare(`INSERT INTO search_fts (rowid, body) VALUES (CAST(? AS INTEGER), 'x')`).run(id);
          db.prepare(`INSERT INTO search_chunks (id, doc, start, length, line_start, line_end, hash, scale, vec) VALUES (?, ?, 0, 1, 1, 1, 'h', 1, ?)`).run(id, id, new Uint8Array(randomBytes(r, dimension).buffer));
        }
        setMeta(db, 'embed_model', 'a');
        setMeta(db, 'embed_dimension', String(dimension));
      })();
      const kept = new MeaningReader(db, true);
      const scope = { ranges: [{ lo: '', hi: null }], residual: () => true, exact: true };
      const early = kept.search(randomUnit(r, dimension), scope, 5, performance.now() - 1);
      assert.equal(early.truncated, true);
      assert.equal(kept.memory?.complete, false);
      assert.ok(kept.memory!.chunks > 0 && kept.memory!.chunks < 3000, `one page loaded (${kept.memory!.chunks})`);
      while (!kept.continueLoading(1000));
      assert.deepEqual(kept.memory && { chunks: kept.memory.chunks, complete: kept.memory.complete }, { chunks: 3000, complete: true });
      assert.equal(kept.search(randomUnit(r, dimension), scope, 5).truncated, false);
      db.close();
    } finally {
      dir.cleanup();
    }
  });
});

describe('Embeddings: what a provider answers never stops the embedder nor corrupts the index', () => {
  /** A provider whose answers the test decides, request by request. */
  function scripted(answer: (texts: string[]) => Float32Array[]) {
    const provider = { model: 'm', origin: 'http://provider', answer, embed: async (texts: string[]) => provider.answer(texts) };
    return provider;
  }
  const vectorsOf = (dimension: number) => (texts: string[]) => texts.map((_, k) => Float32Array.from({ length: dimension }, (_, i) => (i === k % dimension ? 1 : 0.1)));

  test('two dimensions in answers sent at once to a fresh index: none kept; a TypeError is a failure to wait out; both recover', async () => {
    const { db } = openDb(':memory:', silentLogger);
    db.prepare(`INSERT INTO search_docs (id, uri, mtime, size, text) VALUES (1, 'file:///d.txt', 1, 1, 1)`).run();
    // About 40 chunks: three batches of 16, the first two sent at once.
    const body = Array.from({ length: 600 }, (_, i) => `line ${i} of a document long enough for many chunks`).join('\n');
    db.prepare(`INSERT INTO search_fts (rowid, body) VALUES (1, ?)`).run(body);
    let requests = 0;
    const provider = scripted((texts) => vectorsOf(++requests % 2 === 1 ? 4 : 8)(texts));
    const embeddings = new Embeddings(db, provider as unknown as EmbedProvider, silentLogger);
    embeddings.start();
    try {
      await waitFor(() => embeddings.status().failing !== null, 10_000, 'the failure');
      assert.equal(embeddings.status().failing, 'vectors of different dimensions');
      assert.equal((db.prepare('SELECT count(*) AS n FROM search_chunks').get() as { n: number }).n, 0, 'nothing kept of mixed answers');
      provider.answer = () => {
        throw new TypeError("Cannot read properties of undefined (reading 'length')");
      };
      await waitFor(() => embeddings.status().failing === 'an unexpected error', 10_000, 'the unexpected error, as a failure');
      provider.answer = vectorsOf(4);
      await waitFor(() => embeddings.status().failing === null && embeddings.status().embedded === 1, 30_000, 'the recovery');
      const lengths = db.prepare('SELECT DISTINCT length(vec) AS n FROM search_chunks').all() as { n: number }[];
      assert.deepEqual(lengths.map((r) => r.n), [4]);
    } finally {
      await embeddings.close();
      db.close();
    }
  });

  test('a failing provider is not asked by searches that can do without it for 10 s, then asked again, even with nothing left to embed', async () => {
    // Held for good, a hybrid search stayed text only while the provider answered again (the document that failed
    // deleted meanwhile: nothing left for the background to embed, so nothing to clear the failure; a review finding).
    const { db } = openDb(':memory:', silentLogger);
    db.prepare(`INSERT INTO search_docs (id, uri, mtime, size, text) VALUES (1, 'file:///d.txt', 1, 1, 1)`).run();
    db.prepare(`INSERT INTO search_fts (rowid, body) VALUES (1, 'a document')`).run();
    const provider = scripted(() => {
      throw new EmbedError('HTTP 500: model crashed', 'HTTP 500');
    });
    const embeddings = new Embeddings(db, provider as unknown as EmbedProvider, silentLogger);
    embeddings.start();
    try {
      await waitFor(() => embeddings.status().failing !== null, 10_000, 'the failure');
      assert.equal(embeddings.queryHold(), 'HTTP 500', 'a search that can do without meaning does not ask it now');
      db.prepare(`DELETE FROM search_docs WHERE id = 1`).run();
      provider.answer = vectorsOf(4);
      const later = performance.now() + 60_000 + 1;
      assert.equal(embeddings.queryHold(later), null, 'past the hold (the back-off at most), it is asked again');
      await embeddings.embedQuery('a question');
      assert.equal(embeddings.queryHold(), null, 'answered: no hold');
      // A query that fails holds the next ones for 10 s, with its reason.
      provider.answer = () => {
        throw new EmbedError('no answer within 100 ms', 'no answer in time');
      };
      await assert.rejects(embeddings.embedQuery('another'), EmbedError);
      assert.ok(embeddings.queryHold() !== null);
      assert.equal(embeddings.queryHold(performance.now() + 10_001), null);
    } finally {
      await embeddings.close();
      db.close();
    }
  });

  test('a stored vector of another length than the index holds is embedded again, not reused by its text (it stayed unsearchable)', async () => {
    const { db } = openDb(':memory:', silentLogger);
    const body = 'one short document\n';
    db.prepare(`INSERT INTO search_docs (id, uri, mtime, size, text) VALUES (1, 'file:///d.txt', 1, 1, 1)`).run();
    db.prepare(`INSERT INTO search_fts (rowid, body) VALUES (1, ?)`).run(body);
    setMeta(db, 'embed_model', 'm');
    setMeta(db, 'embed_dimension', '4');
    // What answers sent at once to a fresh index left: a chunk of this text, of 8 dimensions in a 4-dimension index.
    const [chunk] = chunkText(body);
    const hash = createHash('sha256').update(chunk!.text).digest('base64');
    db.prepare(`INSERT INTO search_chunks (id, doc, start, length, line_start, line_end, place, hash, scale, vec) VALUES (1, 1, 0, ?, 1, 1, NULL, ?, 1, ?)`).run(
      chunk!.text.length,
      hash,
      new Uint8Array(8),
    );
    const asked: string[] = [];
    const provider = { model: 'm', origin: 'http://provider', embed: async (texts: string[]) => (asked.push(...texts), texts.map(() => Float32Array.from([1, 0, 0, 0]))) };
    const embeddings = new Embeddings(db, provider as unknown as EmbedProvider, silentLogger);
    embeddings.start();
    try {
      await waitFor(() => embeddings.status().embedded === 1, 30_000, 'the document embedded');
      assert.deepEqual(asked, [chunk!.text], 'its text asked for again');
      const lengths = db.prepare('SELECT length(vec) AS n FROM search_chunks').all() as { n: number }[];
      assert.deepEqual(lengths.map((r) => r.n), [4]);
    } finally {
      await embeddings.close();
      db.close();
    }
  });
});
