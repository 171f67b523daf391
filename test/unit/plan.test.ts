import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { succ } from '../../src/keys.ts';
import { parseListParams } from '../../src/query/filter.ts';
import {
  intersectRanges,
  matchesQuery,
  matchesTemplate,
  planQuery,
  unionRanges,
  type KeyRange,
  type Plan,
} from '../../src/query/plan.ts';

const R = 'file:///r/';
const q = (params: unknown) => parseListParams(params, 'resources/list');
const ranges = (params: unknown) => planQuery(q(params)).ranges;
const inRanges = (rs: readonly KeyRange[], uri: string) => rs.some((r) => uri >= r.lo && (r.hi === null || uri < r.hi));

describe('succ', () => {
  it('is the smallest string after every extension', () => {
    assert.equal(succ('abc'), 'abd');
    assert.equal(succ('a/'), 'a0');
    assert.equal(succ(''), null);
    assert.equal(succ('a\uffff'), 'b');
    assert.equal(succ('\uffff\uffff'), null);
    assert.equal(succ('a~'), 'a\u007f');
  });
});

describe('range algebra', () => {
  it('union merges overlapping and touching ranges, drops empty ones', () => {
    assert.deepEqual(
      unionRanges([
        { lo: 'c', hi: 'd' },
        { lo: 'a', hi: 'b' },
        { lo: 'b', hi: 'c' },
        { lo: 'x', hi: 'x' },
        { lo: 'e', hi: null },
        { lo: 'f', hi: 'g' },
      ]),
      [
        { lo: 'a', hi: 'd' },
        { lo: 'e', hi: null },
      ],
    );
  });
  it('intersection', () => {
    assert.deepEqual(
      intersectRanges(
        [
          { lo: 'a', hi: 'c' },
          { lo: 'e', hi: null },
        ],
        [
          { lo: 'b', hi: 'f' },
          { lo: 'g', hi: 'h' },
        ],
      ),
      [
        { lo: 'b', hi: 'c' },
        { lo: 'e', hi: 'f' },
        { lo: 'g', hi: 'h' },
      ],
    );
    assert.deepEqual(intersectRanges([{ lo: 'a', hi: 'b' }], [{ lo: 'b', hi: 'c' }]), []);
  });
});

describe('planQuery ranges', () => {
  const TABLE: [string, unknown, KeyRange[]][] = [
    ['no filter', {}, [{ lo: '', hi: null }]],
    ['prefix', { prefix: `${R}src/` }, [{ lo: `${R}src/`, hi: `${R}src0` }]],
    ['prefix ending mid-name', { prefix: `${R}ma` }, [{ lo: `${R}ma`, hi: `${R}mb` }]],
    ['prefix non-ASCII', { prefix: `${R}café` }, [{ lo: `${R}caf%C3%A9`, hi: `${R}caf%C3%A:` }]],
    ['prefix percent-encoded lowercase', { prefix: `${R}caf%c3%a9` }, [{ lo: `${R}caf%C3%A9`, hi: `${R}caf%C3%A:` }]],
    [
      'uri_path without separator',
      { filters: { uri_paths: [`${R}math`] } },
      [
        { lo: `${R}math`, hi: `${R}math\u0000` },
        { lo: `${R}math#`, hi: `${R}math$` },
        { lo: `${R}math/`, hi: `${R}math0` },
        { lo: `${R}math?`, hi: `${R}math@` },
      ],
    ],
    ['uri_path ending in /', { filters: { uri_paths: [`${R}math/`] } }, [{ lo: `${R}math/`, hi: `${R}math0` }]],
    ['uri_path ending in ?', { filters: { uri_paths: ['mcp://x?'] } }, [{ lo: 'mcp://x?', hi: 'mcp://x@' }]],
    ['uri_path ending in #', { filters: { uri_paths: ['mcp://x#'] } }, [{ lo: 'mcp://x#', hi: 'mcp://x$' }]],
    [
      'uri_paths union, nested ones absorbed',
      { filters: { uri_paths: [`${R}a/`, `${R}a/b/`, `${R}c/`] } },
      [
        { lo: `${R}a/`, hi: `${R}a0` },
        { lo: `${R}c/`, hi: `${R}c0` },
      ],
    ],
    [
      'prefix AND uri_paths',
      { prefix: `${R}src/`, filters: { uri_paths: [`${R}src/a/`, `${R}doc/`] } },
      [{ lo: `${R}src/a/`, hi: `${R}src/a0` }],
    ],
    ['disjoint prefix and uri_path: empty', { prefix: `${R}src/`, filters: { uri_paths: [`${R}doc/`] } }, []],
    ['uriPattern head', { filter: { uriPatterns: [`${R}src/**/*.ts`] } }, [{ lo: `${R}src/`, hi: `${R}src0` }]],
    ['uriPattern head stops at a brace', { filter: { uriPatterns: [`${R}{a,b}/*`] } }, [{ lo: R, hi: 'file:///r0' }]],
    ['uriPattern non-ASCII head', { filter: { uriPatterns: [`${R}é*`] } }, [{ lo: `${R}%C3%A9`, hi: `${R}%C3%A:` }]],
    ['uriPattern without head', { filter: { uriPatterns: ['**/*.md'] } }, [{ lo: '', hi: null }]],
    [
      'uriPatterns union AND prefix',
      { prefix: `${R}s`, filter: { uriPatterns: [`${R}src/*`, `${R}test/*`, `${R}s*`] } },
      [{ lo: `${R}s`, hi: `${R}t` }],
    ],
  ];
  for (const [name, params, expected] of TABLE) {
    it(name, () => assert.deepEqual(ranges(params), expected));
  }

  it('uri_path .../math admits math, math/x, math?x, math#x but not mathematic', () => {
    const plan = planQuery(q({ filters: { uri_paths: [`${R}math`] } }));
    for (const uri of [`${R}math`, `${R}math/x`, `${R}math/`, `${R}math?q`, `${R}math#f`]) assert.ok(inRanges(plan.ranges, uri), uri);
    for (const uri of [`${R}mathematic`, `${R}math-x`, `${R}mat`, `${R}math.txt`]) assert.ok(!inRanges(plan.ranges, uri), uri);
  });

  it('parent narrows to the collection and is carried', () => {
    const plan = planQuery(q({ uri: `${R}src/` }), { parent: `${R}src/` });
    assert.equal(plan.parent, `${R}src/`);
    assert.deepEqual(plan.ranges, [{ lo: `${R}src/`, hi: `${R}src0` }]);
    assert.throws(() => planQuery(q({ uri: `${R}src/` })), TypeError);
  });
});

describe('degenerate patterns', () => {
  it('`{}` and `{,}` (match only the empty string) plan and match without throwing', () => {
    for (const pattern of ['{}', '{,}', '{{}}']) {
      const query = q({ filter: { uriPatterns: [pattern], namePatterns: [pattern] } });
      const plan = planQuery(query);
      assert.equal(plan.residual({ uri: 'file:///r/x', name: 'x' }), false);
      assert.equal(matchesQuery(query, { uri: 'file:///r/x', name: 'x' }), false);
    }
  });
});

describe('planQuery exts', () => {
  const exts = (params: unknown) => planQuery(q(params)).exts;
  it('from namePatterns, uriPatterns, and their intersection', () => {
    assert.equal(exts({}), null);
    assert.deepEqual(exts({ filter: { namePatterns: ['*.md', '*.{txt,md}'] } }), ['md', 'txt']);
    assert.equal(exts({ filter: { namePatterns: ['*.md', 'README*'] } }), null);
    assert.deepEqual(exts({ filter: { uriPatterns: [`${R}**/*.ts`] } }), ['ts']);
    assert.deepEqual(exts({ filter: { namePatterns: ['*.{md,ts}'], uriPatterns: [`${R}**/*.{ts,js}`] } }), ['ts']);
    assert.deepEqual(exts({ filter: { namePatterns: ['a*'], uriPatterns: [`${R}**/*.ts`] } }), ['ts']);
  });
  it('an empty intersection is an empty plan', () => {
    const plan = planQuery(q({ filter: { namePatterns: ['*.md'], uriPatterns: [`${R}**/*.ts`] } }));
    assert.deepEqual(plan.exts, []);
    assert.deepEqual(plan.ranges, []);
  });
});

describe('compiled globs across queries', () => {
  const rows = [`${R}a.md`, `${R}b.ts`, `${R}x/README`, `${R}x/y.md`].map((uri) => ({ uri, name: uri.slice(uri.lastIndexOf('/', uri.length - 2) + 1) }));
  for (const [name, params] of [
    ['string-method globs (kept between queries)', { filter: { namePatterns: ['*.md', 'README'], uriPatterns: [`${R}x/*`] } }],
    ['automaton globs (compiled per query)', { filter: { namePatterns: ['{a,y}.md'], uriPatterns: [`${R}**/*.md`] } }],
  ] as const) {
    it(`${name}: every parse of the same params plans and matches alike, and work only counts up`, () => {
      const first = planQuery(q(params));
      const expected = rows.map((r) => first.residual(r));
      for (let i = 0; i < 3; i++) {
        const plan = planQuery(q(params));
        assert.deepEqual(plan.exts, first.exts);
        assert.deepEqual(plan.ranges, first.ranges);
        const before = plan.residualWork!();
        assert.deepEqual(rows.map((r) => plan.residual(r)), expected);
        assert.ok(plan.residualWork!() > before, 'matching is charged');
      }
    });
  }
});

describe('matchesTemplate', () => {
  const t = { uriTemplate: `${R}{+path}`, name: 'r' };
  const tq = (params: unknown) => parseListParams(params, 'resources/templates/list');
  it('prefix: the template starts with it, or it starts with the literal head', () => {
    assert.ok(matchesTemplate(tq({ prefix: 'file:///' }), t));
    assert.ok(matchesTemplate(tq({ prefix: `${R}src/deep/` }), t));
    assert.ok(matchesTemplate(tq({ prefix: `${R}café` }), t));
    assert.ok(!matchesTemplate(tq({ prefix: 'file:///s/' }), t));
    assert.ok(!matchesTemplate(tq({ prefix: 'file:///rr/' }), t));
  });
  it('uri_paths likewise, with the path boundary', () => {
    assert.ok(matchesTemplate(tq({ filters: { uri_paths: ['file:///r'] } }), t));
    assert.ok(matchesTemplate(tq({ filters: { uri_paths: [`${R}src`] } }), t));
    assert.ok(!matchesTemplate(tq({ filters: { uri_paths: ['file:///rr'] } }), t));
  });
  it('a template without an expression is a fixed URI', () => {
    const fixed = { uriTemplate: `${R}x`, name: 'x' };
    assert.ok(!matchesTemplate(tq({ prefix: `${R}x/y` }), fixed));
    assert.ok(matchesTemplate(tq({ prefix: `${R}x` }), fixed));
  });
  it('globs apply to the template text and name', () => {
    assert.ok(matchesTemplate(tq({ filter: { namePatterns: ['r'], uriPatterns: [`${R}*`] } }), t));
    assert.ok(!matchesTemplate(tq({ filter: { namePatterns: ['s'] } }), t));
  });
});

// ---- property check: plan (ranges + exts + parent + residual) == brute force ----

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

interface Row {
  uri: string;
  name: string;
  ext: string;
  parent: string | null;
}

function generateRows(rand: () => number, count: number): Row[] {
  const SEGMENTS = ['a', 'b', 'math', 'mathematic', 'src', 'caf%C3%A9', 'x.y', 'a%20b', '.env', 'A', 'm-1', 'Z_'];
  const NAMES = ['a.md', 'b.txt', 'README', 'x.ts', 'caf%C3%A9.md', '.gitignore', 'math', 'math.md', 'a.tar.gz', 'Q.MD', 'z_1.ts', 'dot.', 'mathematic'];
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const rows = new Map<string, Row>();
  const dirs = new Set<string>(['file:///r/']);
  while (rows.size < count) {
    let dir = 'file:///r/';
    const depth = Math.floor(rand() * 4);
    for (let d = 0; d < depth; d++) {
      dir += pick(SEGMENTS) + '/';
      dirs.add(dir);
    }
    const sep = rand();
    // Mostly file URIs, some with '?' and '#' to exercise uri_paths boundaries.
    const leaf = pick(NAMES) + (sep < 0.05 ? '?q=1' : sep < 0.1 ? '#frag' : '');
    rows.set(dir + leaf, { uri: dir + leaf, name: decodeURIComponent(leaf.replace(/[?#].*/, '')), ext: '', parent: dir });
  }
  for (const dir of dirs) {
    const name = dir === 'file:///r/' ? 'r' : decodeURIComponent(dir.slice(0, -1).split('/').at(-1)!);
    rows.set(dir, { uri: dir, name, ext: '', parent: dir === 'file:///r/' ? null : dir.replace(/[^/]*\/$/, '') });
  }
  for (const row of rows.values()) {
    const dot = row.name.lastIndexOf('.');
    row.ext = dot < 0 ? '' : row.name.slice(dot + 1);
  }
  return [...rows.values()].sort((x, y) => (x.uri < y.uri ? -1 : 1));
}

function randomParams(rand: () => number, rows: Row[]): { params: Record<string, unknown>; parent?: string } {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const cut = () => {
    const uri = pick(rows).uri;
    const r = rand();
    if (r < 0.3) return uri; // whole URI
    if (r < 0.6) return uri.slice(0, uri.lastIndexOf('/', uri.length - 2) + 1); // a collection
    if (r < 0.7) return uri.replace(/%C3%A9/g, 'é'); // the other spelling
    return uri.slice(0, 10 + Math.floor(rand() * (uri.length - 9))); // mid-name
  };
  const NAME_GLOBS = ['*.md', '*.{md,txt}', 'README*', '?.ts', '[a-c]*', '*', '.*', 'math', 'caf*', 'café.md', '*.MD', '*.gz', '*[!d]', '{a,b}.*'];
  const URI_GLOBS = ['file:///r/**', 'file:///r/**/*.md', '**/b/*', 'file:///r/*/*.ts', '**/math', 'file:///r/a/**/*.{md,txt}', 'file:///r/**/café.md', '**/*#frag', '*'];
  const some = <T>(f: () => T) => Array.from({ length: 1 + Math.floor(rand() * 3) }, f);
  const params: Record<string, unknown> = {};
  const filter: Record<string, unknown> = {};
  if (rand() < 0.4) params.prefix = cut();
  if (rand() < 0.4) params.filters = { uri_paths: some(cut) };
  if (rand() < 0.4) filter.namePatterns = some(() => pick(NAME_GLOBS));
  if (rand() < 0.4) filter.uriPatterns = some(() => (rand() < 0.3 ? cut() + pick(['*', '**', '/*.md', '?']) : pick(URI_GLOBS)));
  if (Object.keys(filter).length > 0) params.filter = filter;
  if (rand() < 0.15) {
    const parent = pick(rows.filter((r) => r.uri.endsWith('/'))).uri;
    params.uri = parent;
    return { params, parent };
  }
  return { params };
}

/** What the SQL executor does with a plan, in memory. */
function execute(plan: Plan, rows: Row[]): string[] {
  return rows
    .filter((row) => inRanges(plan.ranges, row.uri))
    .filter((row) => plan.exts === null || plan.exts.includes(row.ext))
    .filter((row) => plan.parent === undefined || row.parent === plan.parent)
    .filter((row) => plan.residual(row))
    .map((row) => row.uri);
}

describe('plan equals brute force', () => {
  it('for 2,000 URIs and 1,500 random filters', () => {
    const rand = rng(20240601);
    const rows = generateRows(rand, 2000);
    let nonEmpty = 0;
    for (let i = 0; i < 1500; i++) {
      const { params, parent } = randomParams(rand, rows);
      const query = q(params);
      const opts = parent === undefined ? {} : { parent };
      const expected = rows.filter((row) => matchesQuery(query, row, opts)).map((row) => row.uri);
      const plan = planQuery(query, opts);
      assert.deepEqual(execute(plan, rows), expected, JSON.stringify(params));
      // Ranges are sorted and disjoint.
      for (let k = 1; k < plan.ranges.length; k++) {
        const prev = plan.ranges[k - 1]!;
        assert.ok(prev.hi !== null && prev.hi < plan.ranges[k]!.lo, JSON.stringify(plan.ranges));
      }
      if (expected.length > 0) nonEmpty++;
    }
    // The generator must produce filters that select something, or the check is vacuous.
    assert.ok(nonEmpty > 300, `only ${nonEmpty} non-empty results`);
  });
});
