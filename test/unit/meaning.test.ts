// The pure parts of meaning search: chunks with their places and lines, int8
// quantisation and cosine, reciprocal rank fusion, and the checks every
// provider answer passes (src/search/chunks.ts, vectors.ts, embed-provider.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Place } from '../../src/content/converters/types.ts';
import { chunkText } from '../../src/search/chunks.ts';
import { checkVectors, defaultEmbedApi, embedEndpoint, EmbedError } from '../../src/search/embed-provider.ts';
import { cosineInt8, dequantise, fuseRanks, normalise, quantise } from '../../src/search/vectors.ts';

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

  const bad: { name: string; vectors: unknown[]; count: number; dimension?: number; error: RegExp }[] = [
    { name: 'too few vectors', vectors: [[1, 2]], count: 2, error: /1 vectors for 2 texts/ },
    { name: 'wrong dimension', vectors: [[1, 2, 3]], count: 1, dimension: 2, error: /dimension 3, expected 2/ },
    { name: 'mixed dimensions', vectors: [[1, 2], [1]], count: 2, error: /dimension 1, expected 2/ },
    { name: 'NaN', vectors: [[1, NaN]], count: 1, error: /not a finite number/ },
    { name: 'null (JSON NaN)', vectors: [[1, null]], count: 1, error: /not a finite number/ },
    { name: 'empty vector', vectors: [[]], count: 1, error: /empty/ },
    { name: 'not an array', vectors: ['x'], count: 1, error: /empty or missing/ },
  ];
  for (const c of bad) {
    test(`refused: ${c.name}`, () => {
      assert.throws(() => checkVectors(c.vectors, c.count, c.dimension), (e: Error) => e instanceof EmbedError && c.error.test(e.message));
    });
  }
  test('accepted: floats of one dimension', () => {
    assert.deepEqual(checkVectors([[1, 2], [3, 4]], 2, 2).map((v) => [...v]), [[1, 2], [3, 4]]);
  });
});
