import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fingerprint, FilterError, parseListParams, type ListMethod } from '../../src/query/filter.ts';

const METHODS: ListMethod[] = ['resources/list', 'resources/templates/list', 'tools/list', 'prompts/list'];
const many = (n: number) => Array.from({ length: n }, (_, i) => `p${i}*`);

// [name, params, method, exact message]
const ERRORS: [string, unknown, ListMethod, string][] = [
  ['params not an object', 'x', 'resources/list', 'Invalid params: params must be an object'],
  ['params an array', [], 'tools/list', 'Invalid params: params must be an object'],
  ['cursor a number', { cursor: 3 }, 'resources/list', 'Invalid params: cursor must be a string'],
  ['prefix a number', { prefix: 1 }, 'resources/list', 'Invalid params: prefix must be a string'],
  ['prefix an array', { prefix: ['a'] }, 'resources/templates/list', 'Invalid params: prefix must be a string'],
  ['filters a string', { filters: 'x' }, 'tools/list', 'Invalid params: filters must be an object'],
  ['uri_paths a string', { filters: { uri_paths: 'mcp://tools/' } }, 'tools/list', 'Invalid params: filters.uri_paths must be an array of strings'],
  ['uri_paths item a number', { filters: { uri_paths: ['a', 2] } }, 'prompts/list', 'Invalid params: filters.uri_paths[1] must be a string'],
  ['filter an array', { filter: [] }, 'resources/list', 'Invalid params: filter must be an object'],
  ['namePatterns a string', { filter: { namePatterns: '*.md' } }, 'resources/list', 'Invalid params: filter.namePatterns must be an array of strings'],
  ['uriPatterns item null', { filter: { uriPatterns: [null] } }, 'resources/list', 'Invalid params: filter.uriPatterns[0] must be a string'],
  ['uri a number', { uri: 5 }, 'resources/list', 'Invalid params: uri must be a string'],
  ['uri on tools/list', { uri: 'file:///r/' }, 'tools/list', 'Invalid params: uri is not accepted by tools/list'],
  ['uri on templates', { uri: 'file:///r/' }, 'resources/templates/list', 'Invalid params: uri is not accepted by resources/templates/list'],
  ['unclosed class', { filter: { namePatterns: ['*.md', '[abc'] } }, 'resources/list', "Invalid pattern in namePatterns: '[abc' — unclosed '['"],
  ['unclosed brace', { filter: { uriPatterns: ['file:///{a,b'] } }, 'resources/list', "Invalid pattern in uriPatterns: 'file:///{a,b' — unclosed '{'"],
  ['trailing backslash', { filter: { namePatterns: ['a\\'] } }, 'tools/list', "Invalid pattern in namePatterns: 'a\\' — trailing '\\' escapes nothing"],
  ['empty pattern', { filter: { namePatterns: [''] } }, 'prompts/list', "Invalid pattern in namePatterns: '' — empty pattern"],
  // Repeated up to the length a pattern may have, then its length: a 900 KB one was echoed whole (a red-team finding).
  ['pattern too long', { filter: { namePatterns: ['x'.repeat(257)] } }, 'resources/list', `Invalid pattern in namePatterns: '${'x'.repeat(256)}… (257 characters)' — pattern exceeds maximum length of 256 characters`],
  ['pattern far too long', { filter: { uriPatterns: ['y'.repeat(900_000)] } }, 'resources/list', `Invalid pattern in uriPatterns: '${'y'.repeat(256)}… (900000 characters)' — pattern exceeds maximum length of 256 characters`],
  ['too many alternatives', { filter: { namePatterns: ['{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}'] } }, 'resources/list', "Invalid pattern in namePatterns: '{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}' — brace expansion exceeds 64 alternatives"],
  ['too many namePatterns', { filter: { namePatterns: many(101) } }, 'resources/list', 'Too many patterns: 101 exceeds maximum of 100'],
  ['too many uriPatterns', { filter: { uriPatterns: many(150) } }, 'resources/list', 'Too many patterns: 150 exceeds maximum of 100'],
  ['too many uri_paths', { filters: { uri_paths: many(101) } }, 'tools/list', 'Too many uri_paths: 101 exceeds maximum of 100'],
  // Order: syntax before counts.
  ['syntax before count', { filter: { namePatterns: [...many(200), '[x'] } }, 'resources/list', "Invalid pattern in namePatterns: '[x' — unclosed '['"],
  ['namePatterns syntax before uriPatterns syntax', { filter: { uriPatterns: ['[u'], namePatterns: ['[n'] } }, 'resources/list', "Invalid pattern in namePatterns: '[n' — unclosed '['"],
  ['uriPatterns syntax before namePatterns count', { filter: { namePatterns: many(101), uriPatterns: ['{'] } }, 'resources/list', "Invalid pattern in uriPatterns: '{' — unclosed '{'"],
];

describe('parseListParams errors', () => {
  for (const [name, params, method, message] of ERRORS) {
    it(name, () => {
      assert.throws(
        () => parseListParams(params, method),
        (e: unknown) => e instanceof FilterError && e.message === message,
      );
    });
  }
  it('accepts exactly 100 patterns and 256 characters', () => {
    const q = parseListParams({ filter: { namePatterns: [...many(99), 'x'.repeat(256)] } }, 'tools/list');
    assert.equal(q.namePatterns?.length, 100);
  });
});

describe('parseListParams normalisation', () => {
  it('no params, null and {} are the empty query on every method', () => {
    for (const method of METHODS) {
      for (const params of [undefined, null, {}, { filter: {}, filters: {} }, { filter: { namePatterns: [] }, filters: { uri_paths: [] } }]) {
        assert.deepEqual(parseListParams(params, method), { method });
      }
    }
  });
  it('null fields are absent; unknown fields ignored', () => {
    const q = parseListParams(
      { cursor: null, prefix: null, filter: { namePatterns: null, tags: ['x'], other: 3 }, filters: { other: 1 }, _meta: {}, extra: 1 },
      'resources/list',
    );
    assert.deepEqual(q, { method: 'resources/list' });
  });
  it("'' prefix is no prefix", () => {
    assert.deepEqual(parseListParams({ prefix: '' }, 'resources/list'), { method: 'resources/list' });
  });
  it('carries cursor and raw uri', () => {
    const q = parseListParams({ cursor: 'abc', uri: 'file:///r/café/' }, 'resources/list');
    assert.equal(q.cursor, 'abc');
    assert.equal(q.uri, 'file:///r/café/');
  });
  it('canonicalises prefix and uri_paths, dedupes and sorts', () => {
    const q = parseListParams(
      { prefix: 'file:///r/café', filters: { uri_paths: ['file:///r/b', 'file:///r/a b', 'file:///r/b', 'file:///r/caf%c3%a9'] } },
      'resources/list',
    );
    assert.equal(q.prefix, 'file:///r/caf%C3%A9');
    assert.deepEqual(q.uriPaths, ['file:///r/a%20b', 'file:///r/b', 'file:///r/caf%C3%A9']);
  });
  it('canonicalises the literal text of uriPatterns, not their metachars', () => {
    const q = parseListParams(
      { filter: { uriPatterns: ['file:///r/café/**/*.md', 'file:///r/caf%c3%a9/**/*.md', 'file:///r/{é,a b}?[é]'] } },
      'resources/list',
    );
    assert.deepEqual(q.uriPatterns, ['file:///r/caf%C3%A9/**/*.md', 'file:///r/{%C3%A9,a%20b}?[é]']);
  });
  it('keeps namePatterns as sent (names are decoded), deduped and sorted', () => {
    const q = parseListParams({ filter: { namePatterns: ['é*', 'b*', 'a*', 'b*'] } }, 'prompts/list');
    assert.deepEqual(q.namePatterns, ['a*', 'b*', 'é*']);
  });
  it('asked again, the same params give the same query and the same errors (patterns are memoised)', () => {
    for (let round = 0; round < 3; round++) {
      assert.deepEqual(parseListParams({ filter: { uriPatterns: ['file:///r/café/*.md'], namePatterns: ['*.md'] } }, 'resources/list'), {
        method: 'resources/list',
        namePatterns: ['*.md'],
        uriPatterns: ['file:///r/caf%C3%A9/*.md'],
      });
      // The same text in the other field is judged and kept by that field's rules.
      assert.deepEqual(parseListParams({ filter: { namePatterns: ['file:///r/café/*.md'] } }, 'resources/list').namePatterns, ['file:///r/café/*.md']);
      assert.throws(
        () => parseListParams({ filter: { uriPatterns: ['file:///{a'] } }, 'resources/list'),
        (e: unknown) => e instanceof FilterError && e.message === "Invalid pattern in uriPatterns: 'file:///{a' — unclosed '{'",
      );
      assert.throws(
        () => parseListParams({ filter: { namePatterns: ['file:///{a'] } }, 'resources/list'),
        (e: unknown) => e instanceof FilterError && e.message === "Invalid pattern in namePatterns: 'file:///{a' — unclosed '{'",
      );
    }
  });
  it('a pattern at the limit may grow past it when canonicalised', () => {
    const q = parseListParams({ filter: { uriPatterns: ['é'.repeat(256)] } }, 'resources/list');
    assert.equal(q.uriPatterns?.[0], '%C3%A9'.repeat(256));
  });
});

describe('fingerprint', () => {
  const fp = (params: unknown, method: ListMethod = 'resources/list') => fingerprint(parseListParams(params, method));
  it('is short, stable and ignores the cursor', () => {
    const a = fp({ prefix: 'file:///r/', filter: { namePatterns: ['*.md'] } });
    assert.match(a, /^[A-Za-z0-9_-]{16}$/);
    assert.equal(fp({ prefix: 'file:///r/', filter: { namePatterns: ['*.md'] }, cursor: 'x' }), a);
  });
  it('ignores spelling: order, duplicates, encoding, empty arrays', () => {
    assert.equal(
      fp({ filters: { uri_paths: ['file:///b', 'file:///café'] }, filter: { namePatterns: ['b', 'a'], uriPatterns: [] } }),
      fp({ filters: { uri_paths: ['file:///caf%c3%a9', 'file:///b', 'file:///b'] }, filter: { namePatterns: ['a', 'b', 'a'] } }),
    );
    assert.equal(fp({}), fp({ filter: {}, prefix: '' }));
  });
  it('names a uri collection one way: encoding, trailing slash, dot segments, localhost', () => {
    const a = fp({ uri: 'file:///r/café/' });
    for (const uri of ['file:///r/café', 'file:///r/caf%C3%A9/', 'file:///r/caf%c3%a9', 'file:///r/x/../café', 'file://localhost/r/café/']) {
      assert.equal(fp({ uri }), a, uri);
    }
    assert.notEqual(fp({ uri: 'file:///r/cafe/' }), a);
    assert.notEqual(fp({ uri: 'not a uri' }), fp({ uri: 'not a uri!' }));
  });
  it('changes with every criterion and the method', () => {
    const all = [
      fp({}),
      fp({}, 'tools/list'),
      fp({ prefix: 'a' }),
      fp({ prefix: 'b' }),
      fp({ filters: { uri_paths: ['a'] } }),
      fp({ filter: { namePatterns: ['a'] } }),
      fp({ filter: { uriPatterns: ['a'] } }),
      fp({ filter: { namePatterns: ['a', 'b'] } }),
      fp({ uri: 'a' }),
    ];
    assert.equal(new Set(all).size, all.length);
  });
});
