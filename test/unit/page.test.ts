import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDb, type Db } from '../../src/index/db.ts';
import type { EntryRow } from '../../src/entry.ts';
import { silentLogger } from '../../src/log.ts';
import { decodeCursor, encodeCursor } from '../../src/protocol/cursor.ts';
import { fingerprint, parseListParams } from '../../src/query/filter.ts';
import { createPager, explainPlan, MAX_LOOKUPS, type Pager } from '../../src/query/page.ts';
import { matchesQuery, planQuery, type Plan, type PlanOptions } from '../../src/query/plan.ts';

const R = 'file:///r/';

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function entry(uri: string, parent: string | null): EntryRow {
  const name = decodeURIComponent(uri.replace(/\/$/, '').split('/').at(-1)!);
  const dot = name.lastIndexOf('.');
  const kind = uri.endsWith('/') ? 1 : 0;
  return { uri, parent, root: 0, name, ext: dot < 0 ? '' : name.slice(dot + 1), kind, size: 1, mtime: 0, mime: 'text/plain', ino: 0, dev: 0 };
}

const SEGMENTS = ['a', 'b', 'math', 'mathematic', 'src', 'caf%C3%A9', 'x.y', 'a%20b'];
const NAMES = ['a.md', 'b.txt', 'README', 'x.ts', 'caf%C3%A9.md', '.gitignore', 'math', 'math.md', 'q.MD', 'z_1.ts'];

/** A random tree: every file's ancestors exist as collections. */
function generate(rand: () => number, count: number, tag = ''): EntryRow[] {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const rows = new Map<string, EntryRow>([[R, entry(R, null)]]);
  while (rows.size < count) {
    let dir = R;
    for (let d = Math.floor(rand() * 4); d > 0; d--) {
      const child = dir + pick(SEGMENTS) + '/';
      if (!rows.has(child)) rows.set(child, entry(child, dir));
      dir = child;
    }
    const uri = dir + tag + Math.floor(rand() * 50) + pick(NAMES);
    if (!rows.has(uri)) rows.set(uri, entry(uri, dir));
  }
  return [...rows.values()];
}

function insertAll(db: Db, rows: readonly EntryRow[]) {
  const stmt = db.prepare(
    `INSERT OR REPLACE INTO entries (uri, parent, root, name, ext, kind, size, mtime, mime, ino, dev)
     VALUES (@uri, @parent, @root, @name, @ext, @kind, @size, @mtime, @mime, @ino, @dev)`,
  );
  db.transaction(() => rows.forEach((r) => stmt.run(r)))();
}

function allRows(db: Db): EntryRow[] {
  return db.prepare(`SELECT * FROM entries ORDER BY uri`).all() as EntryRow[];
}

/** Pages to the end, checking every page's invariants; returns the URIs seen in order. */
function walk(pager: Pager, plan: Plan, limit: number, budget: number, between?: () => void): string[] {
  const seen: string[] = [];
  let key: string | null = null;
  for (let pages = 0; pages < 100_000; pages++) {
    const page = pager.listPage(plan, key, limit, budget);
    assert.ok(page.rows.length <= limit);
    for (const row of page.rows) {
      assert.ok(key === null || row.uri > key, 'rows come after the cursor');
      assert.ok(page.lastScanned !== null && row.uri <= page.lastScanned);
      seen.push(row.uri);
    }
    if (page.exhausted) return seen;
    assert.ok(page.lastScanned !== null && (key === null || page.lastScanned > key), 'paging progresses');
    key = page.lastScanned;
    between?.();
  }
  assert.fail('walk did not end');
}

const CASES: [string, unknown, PlanOptions?][] = [
  ['everything', {}],
  ['prefix', { prefix: `${R}a/` }],
  ['prefix mid-name', { prefix: `${R}ma` }],
  ['uri_paths with boundary', { filters: { uri_paths: [`${R}math`, `${R}src/`] } }],
  ['namePatterns with exts', { filter: { namePatterns: ['*.md', '*.ts'] } }],
  ['namePatterns without exts', { filter: { namePatterns: ['README*', 'a*'] } }],
  ['namePatterns literal names', { filter: { namePatterns: ['README', '{math,x.y}', 'caf%C3%A9.md', '.gitignore'] } }],
  ['literal names and a wildcard', { filter: { namePatterns: ['README', '*.ts'] } }],
  ['uriPatterns', { filter: { uriPatterns: [`${R}**/math/*.md`, `${R}b/**`] } }],
  ['non-ASCII in two spellings', { filter: { uriPatterns: [`${R}café/**`, `${R}**/caf%c3%a9.md`] } }],
  ['parent', { uri: `${R}a/` }, { parent: `${R}a/` }],
  ['parent with globs', { uri: R, filter: { namePatterns: ['*.{md,txt}'] } }, { parent: R }],
  ['everything combined', { prefix: `${R}a`, filters: { uri_paths: [`${R}a/`] }, filter: { namePatterns: ['*.md'], uriPatterns: ['**/b/*'] } }],
  ['empty by exts', { filter: { namePatterns: ['*.md'], uriPatterns: ['**.ts'] } }],
  ['empty by ranges', { prefix: `${R}a/`, filters: { uri_paths: [`${R}b/`] } }],
];

describe('listPage', () => {
  let db: Db;
  let pager: Pager;
  before(() => {
    db = openDb(':memory:', silentLogger).db;
    insertAll(db, generate(rng(7), 1500));
    pager = createPager(db);
  });
  after(() => db.close());

  for (const [name, params, opts] of CASES) {
    it(`${name}: pages of 1, 7, 200 and short budgets equal brute force`, () => {
      const query = parseListParams(params, 'resources/list');
      const plan = planQuery(query, opts);
      const expected = allRows(db)
        .filter((row) => matchesQuery(query, row, opts))
        .map((row) => row.uri);
      for (const [limit, budget] of [
        [1, 1e9],
        [7, 1e9],
        [200, 1e9],
        [7, 1],
        [7, 3],
        [200, 10],
      ] as const) {
        assert.deepEqual(walk(pager, plan, limit, budget), expected, `limit ${limit} budget ${budget}`);
      }
    });
  }

  it('prefix, uri_paths and uriPatterns with `~`, `^` and `%` raw find the names listed with them encoded (they found nothing)', () => {
    const own = openDb(':memory:', silentLogger).db;
    try {
      const uris = [R, `${R}100%25`, `${R}backup%7E`, `${R}dir%7E/`, `${R}dir%7E/inner.txt`, `${R}x%5Ey`];
      insertAll(own, uris.map((uri) => entry(uri, uri === R ? null : uri.endsWith('/') || !uri.includes('%7E/') ? R : `${R}dir%7E/`)));
      const list = (params: unknown) => walk(createPager(own), planQuery(parseListParams(params, 'resources/list')), 100, 1e9);
      assert.deepEqual(list({ prefix: `${R}dir~/` }), [`${R}dir%7E/`, `${R}dir%7E/inner.txt`]);
      assert.deepEqual(list({ prefix: `${R}backup~` }), [`${R}backup%7E`]);
      assert.deepEqual(list({ filters: { uri_paths: [`${R}dir~`, `${R}x^y`, `${R}100%`] } }), [`${R}100%25`, `${R}dir%7E/`, `${R}dir%7E/inner.txt`, `${R}x%5Ey`]);
      assert.deepEqual(list({ filter: { uriPatterns: [`${R}dir~/**`] } }), [`${R}dir%7E/`, `${R}dir%7E/inner.txt`]);
    } finally {
      own.close();
    }
  });

  it('a budget-limited page returns early with rows examined counted', () => {
    // Neither a literal name nor an extension: a primary-key scan, which the budget cuts short.
    const plan = planQuery(parseListParams({ filter: { namePatterns: ['math.m?'] } }, 'resources/list'));
    const page = pager.listPage(plan, null, 200, 5);
    assert.equal(page.exhausted, false);
    assert.ok(page.rows.length <= 5);
    assert.ok(page.lastScanned !== null);
  });

  it('the last full page says it is the last (no cursor to an empty page)', () => {
    const plan = planQuery(parseListParams({ prefix: `${R}a/` }, 'resources/list'));
    const total = walk(pager, plan, 1e6, 1e9).length;
    const page = pager.listPage(plan, null, total, 1e9);
    assert.equal(page.rows.length, total);
    assert.equal(page.exhausted, true);
  });

  it('resumes from a real cursor round trip', () => {
    const query = parseListParams({ filter: { namePatterns: ['*.md'] } }, 'resources/list');
    const plan = planQuery(query);
    const fp = fingerprint(query);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const key = cursor === undefined ? null : decodeCursor(cursor, 'secret', fp);
      const page = pager.listPage(plan, key, 13, 40);
      seen.push(...page.rows.map((r) => r.uri));
      cursor = page.exhausted ? undefined : encodeCursor({ key: page.lastScanned!, fingerprint: fp }, 'secret');
    } while (cursor !== undefined);
    assert.deepEqual(seen, walk(pager, plan, 1e6, 1e9));
  });

  it('random filters, random limits and budgets: equals brute force', () => {
    const rand = rng(99);
    const rows = allRows(db);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
    const cut = () => {
      const uri = pick(rows).uri;
      return rand() < 0.5 ? uri : uri.slice(0, 10 + Math.floor(rand() * (uri.length - 9)));
    };
    for (let i = 0; i < 150; i++) {
      const params: Record<string, unknown> = {};
      if (rand() < 0.5) params.prefix = cut();
      if (rand() < 0.4) params.filters = { uri_paths: [cut(), cut()] };
      const filter: Record<string, unknown> = {};
      if (rand() < 0.5) filter.namePatterns = [pick(['*.md', '*.{md,txt}', 'README', '*a*', '?.ts', '*.MD', '{math,a.md}', '.gitignore'])];
      if (rand() < 0.3) filter.uriPatterns = [cut() + pick(['*', '**', '/*.md'])];
      params.filter = filter;
      const query = parseListParams(params, 'resources/list');
      const plan = planQuery(query);
      const expected = rows.filter((row) => matchesQuery(query, row)).map((r) => r.uri);
      const limit = 1 + Math.floor(rand() * 20);
      const budget = 1 + Math.floor(rand() * 50);
      assert.deepEqual(walk(pager, plan, limit, budget), expected, JSON.stringify(params));
    }
  });
});

describe('listPage under concurrent writes', () => {
  for (const [name, params] of [
    ['everything', {}],
    ['exts', { filter: { namePatterns: ['*.md', '*.txt'] } }],
    ['prefix and glob', { prefix: `${R}a`, filter: { namePatterns: ['*a*'] } }],
  ] as const) {
    it(`${name}: every untouched row is seen exactly once`, () => {
      const db = openDb(':memory:', silentLogger).db;
      try {
        const rand = rng(3);
        const initial = generate(rand, 1200);
        insertAll(db, initial);
        const pager = createPager(db);
        const query = parseListParams(params, 'resources/list');
        const plan = planQuery(query);
        const deleted = new Set<string>();
        const inserted = new Set<string>();
        const del = db.prepare(`DELETE FROM entries WHERE uri = ?`);
        let round = 0;
        const seen = walk(pager, plan, 5, 12, () => {
          // Delete a few live rows and add new ones, before and after the cursor.
          const live = allRows(db);
          for (let k = 0; k < 3; k++) {
            const victim = live[Math.floor(rand() * live.length)]!.uri;
            del.run(victim);
            deleted.add(victim);
          }
          const fresh = generate(rand, 6, `n${round++}-`).filter((r) => !live.some((l) => l.uri === r.uri));
          insertAll(db, fresh);
          fresh.forEach((r) => inserted.add(r.uri));
        });
        assert.equal(new Set(seen).size, seen.length, 'no duplicates');
        const existed = new Set([...initial.map((r) => r.uri), ...inserted]);
        for (const uri of seen) assert.ok(existed.has(uri), `${uri} never existed`);
        const untouched = initial.filter((r) => !deleted.has(r.uri) && matchesQuery(query, r)).map((r) => r.uri);
        const seenSet = new Set(seen);
        for (const uri of untouched) assert.ok(seenSet.has(uri), `missed ${uri}`);
        assert.ok(untouched.length > 20 && deleted.size > 10, 'the walk was long enough to matter');
      } finally {
        db.close();
      }
    });
  }
});

describe('explainPlan', () => {
  let db: Db;
  before(() => {
    db = openDb(':memory:', silentLogger).db;
    insertAll(db, generate(rng(11), 300));
  });
  after(() => db.close());

  const EXPECT: [string, unknown, RegExp, PlanOptions?][] = [
    ['prefix', { prefix: `${R}a/` }, /^SEARCH entries USING PRIMARY KEY \(uri>\? AND uri<\?\)$/],
    ['uri_paths', { filters: { uri_paths: [`${R}math`, `${R}src/`] } }, /^SEARCH entries USING PRIMARY KEY \(uri>\? AND uri<\?\)$/],
    ['uriPatterns', { filter: { uriPatterns: [`${R}a/**/x*`] } }, /^SEARCH entries USING PRIMARY KEY/],
    ['exts', { filter: { namePatterns: ['*.md', '*.txt'] } }, /^SEARCH entries USING INDEX entries_by_ext \(ext=\? AND uri>\?\)$/],
    ['exts with prefix', { prefix: `${R}a/`, filter: { namePatterns: ['*.md'] } }, /^SEARCH entries USING INDEX entries_by_ext \(ext=\? AND uri>\? AND uri<\?\)$/],
    ['literal names', { filter: { namePatterns: ['README', '{math,x}.md'] } }, /^SEARCH entries USING INDEX entries_by_name \(name=\? AND uri>\?\)$/],
    ['literal names with prefix', { prefix: `${R}a/`, filter: { namePatterns: ['README'] } }, /^SEARCH entries USING INDEX entries_by_name \(name=\? AND uri>\? AND uri<\?\)$/],
    ['parent', { uri: `${R}a/` }, /^SEARCH entries USING INDEX entries_by_parent \(parent=\? AND uri>\? AND uri<\?\)$/, { parent: `${R}a/` }],
  ];
  for (const [name, params, detail, opts] of EXPECT) {
    it(`${name} plan searches an index, never scans`, () => {
      const details = explainPlan(db, planQuery(parseListParams(params, 'resources/list'), opts));
      assert.ok(details.length > 0);
      for (const d of details) {
        assert.match(d, detail);
        assert.doesNotMatch(d, /SCAN entries|TEMP B-TREE/);
      }
    });
  }
  it(`names or extensions times ranges past ${MAX_LOOKUPS} look-ups: a scan of the primary key, which the budget bounds, with the same rows`, () => {
    // 100 uri_paths, 100 patterns of (up to) 64 literal names: millions of look-ups a page before.
    const bits = (k: number) => '{a,b}'.repeat(6).replace(/^/, `n${k}`);
    const some = allRows(db).find((row) => row.uri.startsWith(`${R}a/`) && row.kind === 0)!.name;
    const params = {
      filters: { uri_paths: Array.from({ length: 99 }, (_, i) => `${R}p${String(i).padStart(3, '0')}`).concat(`${R}a/`) },
      filter: { namePatterns: Array.from({ length: 99 }, (_, k) => bits(k)).concat(some) },
    };
    const query = parseListParams(params, 'resources/list');
    const plan = planQuery(query);
    assert.ok(plan.names !== null && plan.names.length * plan.ranges.length > MAX_LOOKUPS);
    for (const d of explainPlan(db, plan)) assert.match(d, /^SEARCH entries USING PRIMARY KEY/);
    const expected = allRows(db).filter((row) => matchesQuery(query, row)).map((row) => row.uri);
    assert.ok(expected.length > 0, `${some} under a/ matches`);
    assert.deepEqual(walk(createPager(db), plan, 7, 50), expected);
    // A few names in a few ranges keep their index.
    const few = planQuery(parseListParams({ filters: { uri_paths: [`${R}a/`, `${R}b/`] }, filter: { namePatterns: [some] } }, 'resources/list'));
    for (const d of explainPlan(db, few)) assert.match(d, /USING INDEX entries_by_name/);
  });
  it('an empty plan runs nothing', () => {
    const plan = planQuery(parseListParams({ prefix: 'x', filters: { uri_paths: ['y'] } }, 'resources/list'));
    assert.deepEqual(explainPlan(db, plan), []);
  });
});
