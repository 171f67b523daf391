// The scan budget counts matching work, not only rows: 100 patterns of 256
// chars must yield short pages after a few rows, not one page that matches
// each pattern against thousands of rows while every other request waits.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDb, type Db } from '../../src/index/db.ts';
import type { EntryRow } from '../../src/entry.ts';
import { silentLogger } from '../../src/log.ts';
import { compileGlob, MatchCache } from '../../src/query/glob.ts';
import { parseListParams } from '../../src/query/filter.ts';
import { createPager, type Pager } from '../../src/query/page.ts';
import { matchesQuery, planQuery } from '../../src/query/plan.ts';

const R = 'file:///r/';
const COSTLY = '**a'.repeat(80) + '**b';
const plan = (params: unknown) => planQuery(parseListParams(params, 'resources/list'));

function row(uri: string): EntryRow {
  const name = uri.replace(/\/$/, '').split('/').at(-1)!;
  const dot = name.lastIndexOf('.');
  return { uri, parent: R, root: 0, name, ext: dot < 0 ? '' : name.slice(dot + 1), kind: 0, size: 1, mtime: 0, mime: 'text/plain', ino: 0, dev: 0 };
}

describe('glob work', () => {
  const workOf = (pattern: string, text: string) => {
    const g = compileGlob(pattern);
    const before = g.work;
    g.match(text);
    return g.work - before;
  };
  it('is a step or two for the shapes answered with string methods', () => {
    for (const g of ['abc', '*.md', 'src/*', 'src/**']) assert.equal(workOf(g, 'src/x/readme.md'), 1, g);
    assert.equal(workOf('*.md', 'x'.repeat(40)), 3);
  });
  it('is small for ordinary patterns and large for costly ones', () => {
    assert.ok(workOf('f?.*', 'f1.txt') < 32);
    assert.ok(workOf(`${R}**/*.ts`, `${R}src/some/dir/file-name.ts`) < 200);
    assert.ok(workOf(COSTLY, `${R}` + 'a'.repeat(100)) > 5_000);
  });
  it('accumulates across matches, and a text seen before costs a step per char', () => {
    const g = compileGlob('*x*y');
    g.match('axby');
    const one = g.work;
    assert.ok(one > 16 + 4);
    g.match('axby');
    assert.equal(g.work, one + 16 + 4);
  });
  it('a long text against `**a**a...` costs about its length once the sets are known', () => {
    const g = compileGlob(COSTLY);
    const text = `${R}${'a'.repeat(10_000)}`;
    g.match(text);
    const first = g.work;
    g.match(text);
    assert.equal(g.work - first, 16 + text.length);
  });
});

describe('the match cache room', () => {
  it('is shared, never overdrawn, and a matcher short of room still answers right', () => {
    const patterns = ['**a**a**a**b', '*a*?[a-c]*', '{a,b}**/[!x]*', '**/*.md', 'a?**c', '[a-z]**z'];
    const rand = (() => {
      let x = 7;
      return () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32);
    })();
    const texts = Array.from({ length: 400 }, () =>
      Array.from({ length: 1 + Math.floor(rand() * 40) }, () => 'ab/cxz.md'[Math.floor(rand() * 9)]).join(''),
    );
    for (const room of [0, 3, 20, 200, 5_000]) {
      const cache = new MatchCache(room);
      const tight = patterns.map((p) => compileGlob(p, { cache }));
      const roomy = patterns.map((p) => compileGlob(p));
      for (const text of texts) {
        tight.forEach((g, i) => assert.equal(g.match(text), roomy[i]!.match(text), `${patterns[i]} on ${text}, room ${room}`));
        assert.ok(cache.room >= 0 && cache.room <= room);
      }
    }
  });
});

describe('residualWork', () => {
  it('is absent without globs', () => {
    assert.equal(plan({ prefix: R, filters: { uri_paths: [R] } }).residualWork, undefined);
  });
  it('sums the work of every glob of the plan', () => {
    const p = plan({ filter: { namePatterns: ['*.md', 'f?.*'], uriPatterns: [`${R}**/*.ts`] } });
    assert.equal(p.residualWork!(), 0);
    p.residual({ uri: `${R}a/f1.ts`, name: 'f1.ts' });
    assert.ok(p.residualWork!() > 0);
  });
});

describe('listPage under a work budget', () => {
  let db: Db;
  let pager: Pager;
  const A = 'a'.repeat(40);
  const uris = Array.from({ length: 120 }, (_, i) => `${R}${A}/f${String(i).padStart(5, '0')}${A}.txt`);
  before(() => {
    db = openDb(':memory:', silentLogger).db;
    const stmt = db.prepare(
      `INSERT INTO entries (uri, parent, root, name, ext, kind, size, mtime, mime, ino, dev) VALUES (@uri, @parent, @root, @name, @ext, @kind, @size, @mtime, @mime, @ino, @dev)`,
    );
    db.transaction(() => uris.forEach((u) => stmt.run(row(u))))();
    pager = createPager(db);
  });
  after(() => db.close());

  it('examines few rows per page for costly patterns, and still reaches the end', () => {
    const many = Array.from({ length: 30 }, (_, i) => COSTLY + i);
    // Names and URIs full of 'a': the automata build wide sets on every char.
    const params = { filter: { namePatterns: [...many, 'f0002*'], uriPatterns: [...many, `${R}${A}/f0002*`] } };
    const expected = uris.filter((u) => matchesQuery(parseListParams(params, 'resources/list'), row(u)));
    assert.equal(expected.length, 10);
    let key: string | null = null;
    let pages = 0;
    const seen: string[] = [];
    for (;;) {
      // As the server does: each request parses and compiles afresh.
      const page = pager.listPage(plan(params), key, 200, 2_000);
      pages++;
      const examined = uris.filter((u) => (key === null || u > key) && u <= page.lastScanned!).length;
      assert.ok(examined >= 1 && examined <= 30, `examined ${examined} rows of 2,000 rows' worth`);
      seen.push(...page.rows.map((r) => r.uri));
      if (page.exhausted) break;
      key = page.lastScanned;
    }
    assert.deepEqual(seen, expected);
    assert.ok(pages >= 3, `${pages} pages`);
  });

  it('leaves cheap filters a full page', () => {
    const page = pager.listPage(plan({ filter: { namePatterns: ['f*.txt', 'f?.*'] } }), null, 100, 10_000);
    assert.equal(page.rows.length, 100);
  });
});
