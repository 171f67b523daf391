// End to end: the filter model of docs/listing.md over the stdio wire (the
// server in process, test/in-process.ts), against
// a generated tree. Every expectation is computed here, independently of
// src/query: plain startsWith, the SEP-1292 boundary rule written out again,
// and a tiny glob-to-RegExp for the benign patterns the cases use.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { DEFAULT_PAGE_SIZE } from '../../src/config.ts';
import { bigTree, CLI, connect, connectInProcess, ERAS, listAll, notFoundCode, serveTree, tempDir, tempTree, waitFor, writeTree, type Connected, type LooseResult } from '../helpers.ts';

const INVALID_PARAMS = -32602;
const FILTER_CHANGED = 'Filter parameters must not change between paginated requests';

/** The tree: nested dirs, several extensions, math/ vs mathematic/, awkward names. */
function generateTree(): Record<string, string> {
  const files: Record<string, string> = {};
  const exts = ['ts', 'js', 'md', 'json', 'txt'];
  for (let a = 0; a < 4; a++) {
    for (let b = 0; b < 4; b++) {
      for (let c = 0; c < 12; c++) files[`src/p${a}/q${b}/f${c}.${exts[(a + b + c) % exts.length]}`] = `${a}${b}${c}\n`;
    }
  }
  for (let i = 0; i < 40; i++) files[`lib/mod${String(i).padStart(2, '0')}.${exts[i % 3]}`] = `${i}\n`;
  Object.assign(files, {
    'math/add.ts': 'a\n',
    'math/sub/mul.ts': 'm\n',
    'math/README.md': 'r\n',
    'mathematic/proof.md': 'p\n',
    'mathematic/x.ts': 'x\n',
    'math.txt': 'mt\n',
    'math-extra.md': 'me\n',
    'README.md': '# r\n',
    'Makefile': 'all:\n',
    '.env': 'A=1\n',
    'src/.config/settings.json': '{}\n',
    'docs/Guide.MD': 'g\n',
    'docs/guide.md': 'g\n',
    'docs/with space.md': 's\n',
    'docs/hash#1.md': 'h\n',
    'docs/what?.md': 'w\n',
    'docs/br[1].txt': 'b\n',
    'docs/café.md': 'c\n',
    'café/crème.txt': 'c\n',
    'café/sub/x.md': 'x\n',
    'cafe/plain.txt': 'p\n',
    '日本/語.md': 'j\n',
    '日本/テスト.ts': 't\n',
    'dir with space/a b.txt': 'ab\n',
    'empty/': '',
  });
  return files;
}

// ---- the independent reference -------------------------------------------

/** Percent-encodes what canonical file URIs encode among the chars our cases use (non-ASCII, space). */
const enc = (s: string) => s.replace(/[^\x21-\x7e]/gu, (c) => encodeURIComponent(c));

/** SEP-1292 boundary rule, written out again: p itself, p ending in a separator, or p then a separator. */
function uriPathHolds(uri: string, p: string): boolean {
  if (uri === p) return true;
  if (!uri.startsWith(p)) return false;
  return /[/?#]$/.test(p) || '/?#'.includes(uri.charAt(p.length));
}

// Glob -> RegExp for benign test patterns: `*`, `**`, `**/`, `?`, classes, braces, escapes.
function globRegExp(glob: string): RegExp {
  let re = '';
  let depth = 0;
  const cps = Array.from(glob);
  for (let i = 0; i < cps.length; i++) {
    const c = cps[i]!;
    if (c === '\\') re += escapeRe(cps[++i]!);
    else if (c === '*') {
      let n = 1;
      while (cps[i + 1] === '*') {
        n++;
        i++;
      }
      const segStart = i - n < 0 || cps[i - n] === '/';
      if (n === 1) re += '[^/]*';
      else if (segStart && cps[i + 1] === '/') {
        i++;
        re += '(?:.*/)?';
      }
      else re += '.*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      let body = '';
      let negate = false;
      if (cps[i + 1] === '!' || cps[i + 1] === '^') {
        negate = true;
        i++;
      }
      while (cps[++i] !== ']') body += cps[i] === '\\' ? '\\' + cps[++i] : cps[i];
      re += negate ? `[^/${body}]` : `(?!/)[${body}]`;
    } else if (c === '{') {
      depth++;
      re += '(?:';
    } else if (c === '}' && depth > 0) {
      depth--;
      re += ')';
    }
    else if (c === ',' && depth > 0) re += '|';
    else re += escapeRe(c);
  }
  return new RegExp(`^${re}$`, 'u');
}
const escapeRe = (c: string) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

type Item = { uri: string; name: string };
type Check = (r: Item) => boolean;
const starts = (p: string): Check => (r) => r.uri.startsWith(p);
const paths = (...ps: string[]): Check => (r) => ps.some((p) => uriPathHolds(r.uri, p));
const names = (...gs: string[]): Check => (r) => gs.some((g) => globRegExp(g).test(r.name));
const uris = (...gs: string[]): Check => (r) => gs.some((g) => globRegExp(g).test(r.uri));
const childOf = (c: string): Check => (r) => r.uri.startsWith(c) && r.uri !== c && !r.uri.slice(c.length).replace(/\/$/, '').includes('/');
const all = (...cs: Check[]): Check => (r) => cs.every((c) => c(r));
const none: Check = () => false;

// ---- wire helpers ------------------------------------------------------------

/** Expects a JSON-RPC error with exactly this code and message. */
async function rejectsExactly(promise: Promise<unknown>, code: number, message: string): Promise<void> {
  try {
    await promise;
  } catch (error) {
    const e = error as { code: number; message: string };
    assert.equal(e.code, code, `code of: ${e.message}`);
    assert.equal(e.message, message);
    return;
  }
  assert.fail(`expected error ${code} '${message}', but the request succeeded`);
}

async function rejectsCode(promise: Promise<unknown>, code: number): Promise<void> {
  try {
    await promise;
  } catch (error) {
    assert.equal((error as { code: number }).code, code, (error as Error).message);
    return;
  }
  assert.fail(`expected error ${code}, but the request succeeded`);
}

/** Walks to the end and checks the page invariants: no duplicates, ascending URI order, page size respected. */
async function walk(conn: Connected, params: Record<string, unknown>, pageSize: number, method = 'resources/list', key = 'resources'): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const result = await conn.request(method, cursor ? { ...params, cursor } : params);
    const page = result[key] as LooseResult[];
    assert.ok(page.length <= pageSize, `page of ${page.length} > ${pageSize}`);
    for (const item of page) seen.push((item.uri ?? item.uriTemplate) as string);
    cursor = result.nextCursor as string | undefined;
    assert.ok(++pages < 100_000, 'pagination does not end');
  } while (cursor);
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i - 1]! < seen[i]!, `order/duplicate at ${i}: ${seen[i - 1]} then ${seen[i]}`);
  return seen;
}

// ---- the tree servers --------------------------------------------------------

for (const era of ERAS) describe(`filtering over stdio (${era})`, () => {
  const NOT_FOUND = notFoundCode(era);
  const tree = tempTree(generateTree());
  // One server per page size on the same tree, each with its own index.
  const served = new Map(
    [1, 7, DEFAULT_PAGE_SIZE].map((size) => [
      size,
      tree.serve(({ root, state }) => {
        const args = [root, '--db', join(state, `index-${size}.db`), '--watcher', 'none'];
        if (size !== DEFAULT_PAGE_SIZE) args.push('--page-size', String(size)); // the default is not passed
        return args;
      }, { era }),
    ]),
  );
  const servers = new Map<number, Connected>(); // page size -> server
  let R: string; // the root's collection URI
  let full: Item[];
  let conn: Connected; // page size 7

  before(async () => {
    R = tree.rootUri;
    for (const [size, server] of served) servers.set(size, server.conn);
    conn = servers.get(7)!;
    const { items } = await listAll(servers.get(DEFAULT_PAGE_SIZE)!, 'resources/list', 'resources');
    full = items.map((r) => ({ uri: r.uri as string, name: r.name as string }));
  });

  test('the unfiltered listing is the whole tree', () => {
    const tree = generateTree();
    const docs = Object.keys(tree).filter((p) => !p.endsWith('/'));
    const expected = new Set([R, ...docs.map((p) => R + p.split('/').map((s) => encodeURIComponent(s)).join('/'))]);
    for (const p of Object.keys(tree)) {
      const segs = p.split('/').filter(Boolean);
      const dirs = p.endsWith('/') ? segs.length : segs.length - 1;
      for (let i = 1; i <= dirs; i++) expected.add(R + segs.slice(0, i).map((s) => encodeURIComponent(s)).join('/') + '/');
    }
    assert.deepEqual(full.map((r) => r.uri), [...expected].sort());
    assert.ok(full.length > 250, `a few hundred entries, got ${full.length}`);
  });

  // name, params, reference; `empty` marks cases whose answer must be empty.
  const cases = (): [string, Record<string, unknown>, Check, { empty?: boolean }?][] => [
    ['no params', {}, () => true],
    ['prefix: a folder', { prefix: `${R}src/` }, starts(`${R}src/`)],
    ['prefix ending mid-name', { prefix: `${R}src/p1/q2/f1` }, starts(`${R}src/p1/q2/f1`)],
    ['prefix ma (math, math.txt, mathematic, math-extra)', { prefix: `${R}ma` }, starts(`${R}ma`)],
    ['prefix with raw é', { prefix: `${R}café/` }, starts(`${R}caf%C3%A9/`)],
    ['prefix with %C3%A9', { prefix: `${R}caf%C3%A9/` }, starts(`${R}caf%C3%A9/`)],
    ['prefix with %c3%a9 (lowercase hex)', { prefix: `${R}caf%c3%a9/` }, starts(`${R}caf%C3%A9/`)],
    ['prefix ending inside a percent escape', { prefix: `${R}caf%C3` }, starts(`${R}caf%C3`)],
    ['prefix with raw 日本', { prefix: `${R}日本/` }, starts(`${R}${enc('日本')}/`)],
    ['prefix with a raw space', { prefix: `${R}dir with` }, starts(`${R}dir%20with`)],
    ['prefix with a raw ? (never in a file URI)', { prefix: `${R}docs/what?` }, none, { empty: true }],
    ['prefix with %3f', { prefix: `${R}docs/what%3f` }, starts(`${R}docs/what%3F`)],
    ['prefix file:/// (everything)', { prefix: 'file:///' }, () => true],
    ['prefix of another folder', { prefix: 'file:///nonexistent/' }, none, { empty: true }],
    ['prefix of another scheme', { prefix: 'mcp://' }, none, { empty: true }],
    ['uri_paths: .../math (not mathematic, math.txt)', { filters: { uri_paths: [`${R}math`] } }, paths(`${R}math`)],
    ['uri_paths: .../math/', { filters: { uri_paths: [`${R}math/`] } }, paths(`${R}math/`)],
    ['uri_paths: .../math?', { filters: { uri_paths: [`${R}math?`] } }, none, { empty: true }],
    ['uri_paths: .../math#', { filters: { uri_paths: [`${R}math#`] } }, none, { empty: true }],
    ['uri_paths: a document', { filters: { uri_paths: [`${R}math.txt`] } }, paths(`${R}math.txt`)],
    ['uri_paths: .../mathem (mid-name: nothing)', { filters: { uri_paths: [`${R}mathem`] } }, none, { empty: true }],
    ['uri_paths: several, OR-ed', { filters: { uri_paths: [`${R}math`, `${R}docs/`, `${R}src/p1/q1`] } }, paths(`${R}math`, `${R}docs/`, `${R}src/p1/q1`)],
    ['uri_paths: raw é', { filters: { uri_paths: [`${R}café`] } }, paths(`${R}caf%C3%A9`)],
    ['uri_paths: the root', { filters: { uri_paths: [R] } }, () => true],
    ['namePatterns *.md', { filter: { namePatterns: ['*.md'] } }, names('*.md')],
    ['namePatterns *.md, *.txt', { filter: { namePatterns: ['*.md', '*.txt'] } }, names('*.md', '*.txt')],
    ['namePatterns *.MD (case-sensitive)', { filter: { namePatterns: ['*.MD'] } }, names('*.MD')],
    ['namePatterns f1?.*', { filter: { namePatterns: ['f1?.*'] } }, names('f1?.*')],
    ['namePatterns class [a-c]*', { filter: { namePatterns: ['[a-c]*'] } }, names('[a-c]*')],
    ['namePatterns negated class [!fm]*', { filter: { namePatterns: ['[!fm]*'] } }, names('[!fm]*')],
    ['namePatterns braces', { filter: { namePatterns: ['{README,Makefile,mod0{1,2}}*'] } }, names('{README,Makefile,mod0{1,2}}*')],
    ['namePatterns **', { filter: { namePatterns: ['**'] } }, () => true],
    ['namePatterns raw non-ASCII', { filter: { namePatterns: ['café*', '語*'] } }, names('café*', '語*')],
    ['namePatterns escapes', { filter: { namePatterns: ['br\\[1\\].txt', 'what\\?.md'] } }, names('br\\[1\\].txt', 'what\\?.md')],
    ['namePatterns dotfiles', { filter: { namePatterns: ['.*'] } }, names('.*')],
    ['namePatterns literal names (dotfile, no extension, two dots)', { filter: { namePatterns: ['.env', 'Makefile', 'settings.json', 'f1.md'] } }, names('.env', 'Makefile', 'settings.json', 'f1.md')],
    ['namePatterns extension alternatives', { filter: { namePatterns: ['*.{md,MD}', 'mod0?.js'] } }, names('*.{md,MD}', 'mod0?.js')],
    ['namePatterns with a space and #', { filter: { namePatterns: ['* *', '*#*'] } }, names('* *', '*#*')],
    ['uriPatterns under src, **/*.ts', { filter: { uriPatterns: [`${R}src/**/*.ts`] } }, uris(`${R}src/**/*.ts`)],
    ['uriPatterns with no literal head **/*.json', { filter: { uriPatterns: ['**/*.json'] } }, uris('**/*.json')],
    ['uriPatterns root children only', { filter: { uriPatterns: [`${R}*`] } }, uris(`${R}*`)],
    ['uriPatterns collections', { filter: { uriPatterns: [`${R}**/`] } }, uris(`${R}**/`)],
    ['uriPatterns raw é', { filter: { uriPatterns: [`${R}café/**`] } }, uris(`${R}caf%C3%A9/**`)],
    ['uriPatterns %c3%a9', { filter: { uriPatterns: [`${R}caf%c3%a9/**`] } }, uris(`${R}caf%C3%A9/**`)],
    ['uriPatterns class and braces', { filter: { uriPatterns: [`${R}src/p{1,3}/q[0-1]/*.md`] } }, uris(`${R}src/p{1,3}/q[0-1]/*.md`)],
    ['uriPatterns several', { filter: { uriPatterns: [`${R}math/**`, '**/*.txt'] } }, uris(`${R}math/**`, '**/*.txt')],
    ['uri: a collection', { uri: `${R}math/` }, childOf(`${R}math/`)],
    ['uri: a collection without trailing /', { uri: `${R}math` }, childOf(`${R}math/`)],
    ['uri: the root', { uri: R }, childOf(R)],
    ['uri: raw é', { uri: `${R}café` }, childOf(`${R}caf%C3%A9/`)],
    ['uri: an empty collection', { uri: `${R}empty/` }, none, { empty: true }],
    ['prefix AND namePatterns', { prefix: `${R}src/p2/`, filter: { namePatterns: ['*.ts', '*.js'] } }, all(starts(`${R}src/p2/`), names('*.ts', '*.js'))],
    ['uri_paths AND uriPatterns', { filters: { uri_paths: [`${R}math`, `${R}lib`] }, filter: { uriPatterns: ['**/*.ts'] } }, all(paths(`${R}math`, `${R}lib`), uris('**/*.ts'))],
    [
      'all four',
      { prefix: `${R}src/p`, filters: { uri_paths: [`${R}src/p0`, `${R}src/p3/`] }, filter: { namePatterns: ['f?.*'], uriPatterns: [`${R}**/q{0,2}/*`] } },
      all(starts(`${R}src/p`), paths(`${R}src/p0`, `${R}src/p3/`), names('f?.*'), uris(`${R}**/q{0,2}/*`)),
    ],
    ['both glob fields', { filter: { namePatterns: ['*.md'], uriPatterns: [`${R}docs/*`] } }, all(names('*.md'), uris(`${R}docs/*`))],
    ['uri AND namePatterns', { uri: R, filter: { namePatterns: ['math*'] } }, all(childOf(R), names('math*'))],
    ['uri AND prefix mid-name', { uri: `${R}lib/`, prefix: `${R}lib/mod1` }, all(childOf(`${R}lib/`), starts(`${R}lib/mod1`))],
    ['uri AND uri_paths elsewhere: nothing', { uri: `${R}lib/`, filters: { uri_paths: [`${R}math`] } }, none, { empty: true }],
    ['disjoint prefix and uri_paths: nothing', { prefix: `${R}src/`, filters: { uri_paths: [`${R}docs/`] } }, none, { empty: true }],
    ['namePatterns and uriPatterns with no common extension: nothing', { filter: { namePatterns: ['*.md'], uriPatterns: ['**/*.ts'] } }, none, { empty: true }],
    ['empty arrays and {} are absent', { filters: { uri_paths: [] }, filter: { namePatterns: [], uriPatterns: [] } }, () => true],
    ['filter {} and filters {}', { filter: {}, filters: {} }, () => true],
    ['unknown filter fields are ignored', { filter: { descriptionPatterns: ['x'], mimeTypes: 3 }, filters: { other: true } }, () => true],
    ['null params are absent', { prefix: null, filter: null, filters: null }, () => true],
  ];

  test('every param alone and combined matches the reference, on every page size', async () => {
    for (const [name, params, check, opts] of cases()) {
      const expected = full.filter(check).map((r) => r.uri);
      if (opts?.empty) assert.equal(expected.length, 0, `${name}: the reference should be empty`);
      else assert.ok(expected.length > 0, `${name}: the reference should not be empty`);
      for (const [size, server] of servers) {
        const got = await walk(server, params, size);
        assert.deepEqual(got, expected, `${name} (page size ${size})`);
      }
    }
  });

  test(`the default page size is ${DEFAULT_PAGE_SIZE}`, async () => {
    const first = await servers.get(DEFAULT_PAGE_SIZE)!.request('resources/list', {});
    assert.equal((first.resources as unknown[]).length, Math.min(full.length, DEFAULT_PAGE_SIZE));
    assert.equal(typeof first.nextCursor, full.length > DEFAULT_PAGE_SIZE ? 'string' : 'undefined');
  });

  test('a cursor is bound to its normalised filter', async () => {
    const page = (params: Record<string, unknown>) => conn.request('resources/list', params);
    const first = await page({ prefix: `${R}src/` });
    const cursor = first.nextCursor as string;
    assert.ok(cursor);
    // A change of any param, on the next page:
    for (const changed of [
      {},
      { prefix: `${R}src/p` },
      { prefix: `${R}src/`, filter: { namePatterns: ['*'] } },
      { prefix: `${R}src/`, filters: { uri_paths: [`${R}src`] } },
      { prefix: `${R}src/`, filter: { uriPatterns: [`${R}**`] } },
      { prefix: `${R}src/`, uri: `${R}src/` },
    ]) {
      await rejectsExactly(page({ ...changed, cursor }), INVALID_PARAMS, FILTER_CHANGED);
    }
    // The same filter spelled another way is the same filter.
    const spelled = await page({ prefix: `${R}src/`, cursor, filter: {}, filters: { uri_paths: [] } });
    assert.ok((spelled.resources as unknown[]).length > 0);
  });

  test('a cursor is valid with another spelling of the same filter', async () => {
    const params = { filters: { uri_paths: [`${R}café`, `${R}日本`, `${R}docs`] } };
    const expected = await walk(conn, params, 7);
    assert.ok(expected.length > 7, 'more than one page');
    const first = await conn.request('resources/list', params);
    const firstUris = (first.resources as LooseResult[]).map((r) => r.uri as string);
    for (const other of [
      { filters: { uri_paths: [`${R}caf%C3%A9`, `${R}${enc('日本')}`, `${R}docs`] } },
      { filters: { uri_paths: [`${R}docs`, `${R}${enc('日本')}`, `${R}caf%c3%a9`, `${R}café`] } }, // order and duplicates do not matter
      { ...params, filter: { namePatterns: [] } },
    ]) {
      const rest = await walk(conn, { ...other, cursor: first.nextCursor }, 7);
      assert.deepEqual([...firstUris, ...rest], expected, JSON.stringify(other));
    }
    await rejectsExactly(conn.request('resources/list', { prefix: `${R}café`, cursor: first.nextCursor as string }), INVALID_PARAMS, FILTER_CHANGED);
  });

  test('a uri cursor is valid with another spelling of the collection', async () => {
    const lib = await walk(conn, { uri: `${R}lib/` }, 7);
    const first = await conn.request('resources/list', { uri: `${R}lib` });
    const firstUris = (first.resources as LooseResult[]).map((r) => r.uri as string);
    for (const other of [`${R}lib/`, `${R}lib`, `${R}math/../lib/`, `${R.replace('file://', 'file://localhost')}lib/`]) {
      const rest = await walk(conn, { uri: other, cursor: first.nextCursor }, 7);
      assert.deepEqual([...firstUris, ...rest], lib, other);
    }
    await rejectsExactly(conn.request('resources/list', { uri: `${R}math/`, cursor: first.nextCursor as string }), INVALID_PARAMS, FILTER_CHANGED);
  });

  test('a cursor from another list method is refused', async () => {
    const first = await conn.request('resources/list', {});
    await rejectsExactly(conn.request('resources/templates/list', { cursor: first.nextCursor as string }), INVALID_PARAMS, FILTER_CHANGED);
  });

  test('garbage and tampered cursors are -32602', async () => {
    const first = await conn.request('resources/list', { prefix: `${R}src/` });
    const cursor = first.nextCursor as string;
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    for (const bad of ['', 'x', 'not a cursor!', '%%%', cursor + 'A', cursor.slice(0, -1), flip(cursor, 0), flip(cursor, 10), flip(cursor, cursor.length - 1), 'A'.repeat(20_000)]) {
      await rejectsExactly(conn.request('resources/list', { prefix: `${R}src/`, cursor: bad }), INVALID_PARAMS, 'Invalid cursor');
    }
    await rejectsExactly(conn.request('resources/list', { cursor: 42 }), INVALID_PARAMS, 'Invalid params: cursor must be a string');
  });

  test('uri: a document is -32602, a missing collection is -32002', async () => {
    await rejectsExactly(conn.request('resources/list', { uri: `${R}math.txt` }), INVALID_PARAMS, `Invalid params: uri is not a collection: ${R}math.txt`);
    await rejectsCode(conn.request('resources/list', { uri: `${R}nope/` }), NOT_FOUND);
    await rejectsCode(conn.request('resources/list', { uri: 'file:///etc/' }), NOT_FOUND);
    await rejectsCode(conn.request('resources/list', { uri: `${R}math/add.ts/` }), NOT_FOUND);
  });

  test('validation errors, with their exact messages, in the SEP processing order', async () => {
    const list = (params: Record<string, unknown>) => conn.request('resources/list', params);
    const p257 = 'a'.repeat(257);
    const many = Array.from({ length: 101 }, (_, i) => `p${i}*`);
    const errors: [Record<string, unknown>, string][] = [
      [{ prefix: 3 }, 'Invalid params: prefix must be a string'],
      [{ filters: { uri_paths: 'file:///x' } }, 'Invalid params: filters.uri_paths must be an array of strings'],
      [{ filters: { uri_paths: [1] } }, 'Invalid params: filters.uri_paths[0] must be a string'],
      [{ filters: 'x' }, 'Invalid params: filters must be an object'],
      [{ filter: [] }, 'Invalid params: filter must be an object'],
      [{ filter: { namePatterns: '*.md' } }, 'Invalid params: filter.namePatterns must be an array of strings'],
      [{ filter: { uriPatterns: ['ok', null] } }, 'Invalid params: filter.uriPatterns[1] must be a string'],
      [{ uri: 7 }, 'Invalid params: uri must be a string'],
      [{ filter: { namePatterns: many } }, 'Too many patterns: 101 exceeds maximum of 100'],
      [{ filter: { uriPatterns: many } }, 'Too many patterns: 101 exceeds maximum of 100'],
      [{ filters: { uri_paths: many } }, 'Too many uri_paths: 101 exceeds maximum of 100'],
      [{ filter: { namePatterns: [p257] } }, `Invalid pattern in namePatterns: '${p257.slice(0, 256)}… (257 characters)' — pattern exceeds maximum length of 256 characters`],
      [{ filter: { namePatterns: ['a[b'] } }, "Invalid pattern in namePatterns: 'a[b' — unclosed '['"],
      [{ filter: { uriPatterns: ['{a,b'] } }, "Invalid pattern in uriPatterns: '{a,b' — unclosed '{'"],
      [{ filter: { uriPatterns: ['[z-a]'] } }, "Invalid pattern in uriPatterns: '[z-a]' — invalid range 'z-a' in '[...]'"],
      [{ filter: { namePatterns: ['x\\'] } }, "Invalid pattern in namePatterns: 'x\\' — trailing '\\' escapes nothing"],
      [{ filter: { namePatterns: [''] } }, "Invalid pattern in namePatterns: '' — empty pattern"],
      [{ filter: { namePatterns: ['{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}'] } }, "Invalid pattern in namePatterns: '{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}' — brace expansion exceeds 64 alternatives"],
      // Order: syntax before counts, counts before the cursor.
      [{ filter: { namePatterns: [...many, 'a[b'] } }, "Invalid pattern in namePatterns: 'a[b' — unclosed '['"],
      [{ filter: { namePatterns: many }, cursor: 'garbage' }, 'Too many patterns: 101 exceeds maximum of 100'],
      [{ filter: { namePatterns: ['a[b'] }, cursor: 'garbage' }, "Invalid pattern in namePatterns: 'a[b' — unclosed '['"],
    ];
    for (const [params, message] of errors) await rejectsExactly(list(params), INVALID_PARAMS, message);
    // Exactly 100 patterns and a 256-char pattern are fine.
    await list({ filter: { namePatterns: many.slice(0, 100), uriPatterns: ['b'.repeat(256)] } });
    // The server still serves.
    assert.equal((await walk(conn, {}, 7)).length, full.length);
  });

  test('the same validation on resources/templates/list', async () => {
    const tl = (params: Record<string, unknown>) => conn.request('resources/templates/list', params);
    await rejectsExactly(tl({ prefix: 3 }), INVALID_PARAMS, 'Invalid params: prefix must be a string');
    await rejectsExactly(tl({ uri: R }), INVALID_PARAMS, 'Invalid params: uri is not accepted by resources/templates/list');
    await rejectsExactly(tl({ filter: { namePatterns: ['a[b'] } }), INVALID_PARAMS, "Invalid pattern in namePatterns: 'a[b' — unclosed '['");
    await rejectsExactly(tl({ cursor: 'garbage' }), INVALID_PARAMS, 'Invalid cursor');
  });

  test('hostile globs are answered and the server keeps serving', async () => {
    const hostile = [
      'a/\\\\\\\\',
      'a/\\\\\\\\\\\\\\\\\\\\\\\\',
      `${R}\\\\\\\\`,
      '*********a',
      '**/**/**/**/x',
      '*a*a*a*a*a*a*a*b',
      '*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b',
      '**a**a**a**a**a**a**a**a**a**a**a**a**a**b',
      '{'.repeat(100) + 'a' + '}'.repeat(100),
      '{'.repeat(128) + '}'.repeat(128),
      '{a,{b,{c,{d,{e,{f,{g,{h,{i,{j}}}}}}}}}}',
      '{a,b,c,d,e,f,g,h}{a,b,c,d,e,f,g,h}{a,b}',
      '[' + 'a-z'.repeat(80) + ']*',
      '[[[[[[[[[[[[[[[[]',
      '\\'.repeat(256),
      '?'.repeat(256),
    ];
    const answered: string[] = [];
    for (const g of hostile) {
      for (const params of [{ filter: { namePatterns: [g] } }, { filter: { uriPatterns: [g] } }, { prefix: R, filter: { uriPatterns: [g, `${R}**/x`], namePatterns: [g] } }]) {
        try {
          await walk(conn, params, 7);
          answered.push('ok');
        } catch (error) {
          assert.equal((error as { code: number }).code, INVALID_PARAMS, `${g}: ${(error as Error).message}`);
          answered.push('-32602');
        }
      }
    }
    assert.equal(answered.length, hostile.length * 3);
    // The same patterns on the in-memory lists.
    for (const [method, key] of [
      ['resources/templates/list', 'resourceTemplates'],
      ['tools/list', 'tools'],
      ['prompts/list', 'prompts'],
    ] as const) {
      for (const g of hostile) {
        try {
          await walk(conn, { filter: { namePatterns: [g], uriPatterns: [g] } }, 7, method, key);
        } catch (error) {
          assert.equal((error as { code: number }).code, INVALID_PARAMS, `${method} ${g}: ${(error as Error).message}`);
        }
      }
    }
    assert.equal((await walk(conn, { prefix: `${R}math/` }, 7)).length, 5);
  });

  test('**/**/**/**/x and *a*a*a*a*a*a*a*b match what they should', async () => {
    const got = await walk(conn, { filter: { uriPatterns: ['**/**/**/**/mul.ts'] } }, 7);
    assert.deepEqual(got, [`${R}math/sub/mul.ts`]);
    const star = await walk(conn, { filter: { namePatterns: ['*a*a*'] } }, 7);
    assert.deepEqual(star, full.filter(names('*a*a*')).map((r) => r.uri));
  });

  test('templates: prefix and uri_paths against uriTemplate and its literal head', async () => {
    const tl = async (params: Record<string, unknown>) =>
      ((await conn.request('resources/templates/list', params)).resourceTemplates as LooseResult[]).map((t) => t.uriTemplate);
    const template = `${R}{+path}`;
    assert.deepEqual(await tl({}), [template]);
    for (const params of [
      { prefix: `${R}src/p1/deeper/` }, // deeper than the head: the template can expand there
      { prefix: R },
      { prefix: 'file:///' },
      { prefix: `${R}{+` },
      { prefix: `${R}café/` },
      { filters: { uri_paths: [`${R}math`] } },
      { filters: { uri_paths: [R.slice(0, -1)] } },
      { filter: { uriPatterns: [`${R}\\{+path\\}`] } },
      { filter: { uriPatterns: ['**'] } },
      { filter: { namePatterns: [tree.root.split('/').at(-1)!] } },
    ]) {
      assert.deepEqual(await tl(params), [template], JSON.stringify(params));
    }
    for (const params of [
      { prefix: 'file:///nonexistent/' },
      { prefix: 'mcp://' },
      { filters: { uri_paths: ['file:///nonexistent'] } },
      { filters: { uri_paths: [R.slice(0, -2)] } },
      { filter: { uriPatterns: [`${R}src/**`] } },
      { filter: { namePatterns: ['nomatch*'] } },
    ]) {
      assert.deepEqual(await tl(params), [], JSON.stringify(params));
    }
  });
});

// ---- templates pagination, raw capabilities ---------------------------------

for (const era of ERAS) describe(`templates over several roots (${era})`, () => {
  test('page through templates with a filter, page size 1', async () => {
    const dirs = [tempDir('fm-a-'), tempDir('fm-b-'), tempDir('fm-c-')];
    const state = tempDir('folder-mcp-state-');
    const conn = await connectInProcess([...dirs.map((d) => d.path), '--db', join(state.path, 'i.db'), '--page-size', '1', '--watcher', 'none'], { era });
    try {
      const uris = dirs.map((d) => pathToFileURL(d.path).href + '/{+path}').sort();
      assert.deepEqual(await walk(conn, {}, 1, 'resources/templates/list', 'resourceTemplates'), uris);
      assert.deepEqual(await walk(conn, { prefix: 'file:///' }, 1, 'resources/templates/list', 'resourceTemplates'), uris);
      const first = await conn.request('resources/templates/list', { prefix: 'file:///' });
      await rejectsExactly(conn.request('resources/templates/list', { cursor: first.nextCursor as string }), INVALID_PARAMS, FILTER_CHANGED);
      const nameOf = dirs[1]!.path.split('/').at(-1)!;
      assert.deepEqual(
        await walk(conn, { filter: { namePatterns: [nameOf] } }, 1, 'resources/templates/list', 'resourceTemplates'),
        [pathToFileURL(dirs[1]!.path).href + '/{+path}'],
      );
    } finally {
      await conn.close();
      for (const d of [...dirs, state]) d.cleanup();
    }
  });
});

/** An initialize result's capabilities, read loosely. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the test reads nested keys of whatever was sent
type Capabilities = Record<string, any>;

/** The initialize result as sent: SDK clients strip capability keys they do not know. */
async function rawInitialize(args: string[]): Promise<Capabilities> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  try {
    child.stdin.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
      }) + '\n',
    );
    let buffered = '';
    return await new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code) => reject(new Error(`server exited (${code}) before answering`)));
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        for (const line of buffered.split('\n').slice(0, -1)) {
          const message = JSON.parse(line) as { id?: number; result?: Capabilities };
          if (message.id === 1) resolve(message.result!);
        }
      });
    });
  } finally {
    child.stdin.end();
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.on('exit', r)));
  }
}

describe('capabilities on the wire', () => {
  test('filtering capabilities, and the same under experimental', async () => {
    const dir = tempDir();
    const state = tempDir('folder-mcp-state-');
    try {
      const result = await rawInitialize([dir.path, '--db', join(state.path, 'i.db'), '--watcher', 'none']);
      const caps = result.capabilities;
      const methods = ['resources/list', 'resources/templates/list', 'tools/list', 'prompts/list'];
      assert.deepEqual(caps.resources.filtering, { supported: ['namePatterns', 'uriPatterns'] });
      assert.deepEqual(caps.tools?.filtering, { supported: ['namePatterns'] });
      assert.deepEqual(caps.prompts?.filtering, { supported: ['namePatterns'] });
      assert.deepEqual(caps.experimental.filtering, {
        resources: { supported: ['namePatterns', 'uriPatterns'] },
        tools: { supported: ['namePatterns'] },
        prompts: { supported: ['namePatterns'] },
      });
      assert.deepEqual(caps.experimental.prefix, { methods });
      assert.deepEqual(caps.experimental.uri_paths, { methods });
      assert.deepEqual(caps.experimental.uri, { methods: ['resources/list'] });
    } finally {
      dir.cleanup();
      state.cleanup();
    }
  });
});

// ---- tools/list and prompts/list (same model) ------------------------------

for (const era of ERAS) describe(`tools/list and prompts/list filters (${era})`, () => {
  const tree = serveTree({ 'a.txt': 'a\n' }, ({ root, state }) => [root, '--db', join(state, 'i.db'), '--page-size', '1', '--watcher', 'none'], { era });
  let conn: Connected;
  before(() => {
    conn = tree.conn;
  });

  for (const [method, key] of [
    ['tools/list', 'tools'],
    ['prompts/list', 'prompts'],
  ] as const) {
    test(method, async (t) => {
      let fullList: LooseResult[];
      try {
        fullList = (await listAll(conn, method, key)).items;
      } catch (error) {
        if ((error as { code: number }).code === -32601) return t.skip(`${method} is not wired yet`);
        throw error;
      }
      if (fullList.length === 0) return t.skip(`no ${key} offered`);
      const items = fullList.map((i) => ({ uri: (i.uri ?? '') as string, name: i.name as string }));
      const byName = (got: string[]) => got;
      const walkNames = async (params: Record<string, unknown>) => {
        const out: string[] = [];
        let cursor: string | undefined;
        do {
          const r = await conn.request(method, cursor ? { ...params, cursor } : params);
          out.push(...(r[key] as LooseResult[]).map((i) => i.name as string));
          cursor = r.nextCursor as string | undefined;
        } while (cursor);
        return byName(out);
      };
      const first = items[0]!;
      const expectNames = (check: Check) => items.filter(check).map((i) => i.name);
      assert.deepEqual(await walkNames({}), items.map((i) => i.name));
      assert.deepEqual(await walkNames({ filter: { namePatterns: [first.name] } }), expectNames(names(first.name)));
      assert.deepEqual(await walkNames({ filter: { namePatterns: ['*'] } }), items.map((i) => i.name));
      assert.deepEqual(await walkNames({ filter: { namePatterns: ['no-such-*'] } }), []);
      if (first.uri) {
        const group = first.uri.slice(0, first.uri.lastIndexOf('/'));
        assert.deepEqual(await walkNames({ filters: { uri_paths: [group] } }), expectNames(paths(group)));
        assert.deepEqual(await walkNames({ prefix: first.uri }), expectNames(starts(first.uri)));
        assert.deepEqual(await walkNames({ filter: { uriPatterns: [`${group}/*`] } }), expectNames(uris(`${group}/*`)));
      }
      await rejectsExactly(conn.request(method, { uri: 'file:///x/' }), INVALID_PARAMS, `Invalid params: uri is not accepted by ${method}`);
      await rejectsExactly(conn.request(method, { prefix: 3 }), INVALID_PARAMS, 'Invalid params: prefix must be a string');
      await rejectsExactly(conn.request(method, { filter: { namePatterns: ['a[b'] } }), INVALID_PARAMS, "Invalid pattern in namePatterns: 'a[b' — unclosed '['");
      await rejectsExactly(conn.request(method, { cursor: 'garbage' }), INVALID_PARAMS, 'Invalid cursor');
      if (items.length > 1) {
        const page = await conn.request(method, {});
        await rejectsExactly(conn.request(method, { filter: { namePatterns: ['*'] }, cursor: page.nextCursor as string }), INVALID_PARAMS, FILTER_CHANGED);
      }
    });
  }
});

// ---- concurrent changes and the scan budget ---------------------------------

describe('pagination under concurrent changes', () => {
  test('every untouched resource is seen exactly once while files come and go', async () => {
    const dir = tempDir();
    const state = tempDir('folder-mcp-state-');
    const files: Record<string, string> = {};
    for (let i = 0; i < 60; i++) files[`d${i % 3}/f${String(i).padStart(2, '0')}.txt`] = `${i}\n`;
    writeTree(dir.path, files);
    const R = pathToFileURL(dir.path).href + '/';
    const conn = await connect([dir.path, '--db', join(state.path, 'i.db'), '--page-size', '5']);
    try {
      const before = (await listAll(conn, 'resources/list', 'resources')).items.map((r) => r.uri as string);
      const metadata = (rel: string) => conn.request('resources/metadata', { uri: R + rel });
      const indexed = (rel: string) => metadata(rel).then(() => true, () => false);
      const removed = new Set<string>();
      const added = new Set<string>();
      const mustSee = new Set<string>(); // added after the cursor: a keyset page reaches them
      const seen: string[] = [];
      let cursor: string | undefined;
      let step = 0;
      do {
        const page = await conn.request('resources/list', cursor ? { cursor } : {});
        const got = (page.resources as LooseResult[]).map((r) => r.uri as string);
        seen.push(...got);
        cursor = page.nextCursor as string | undefined;
        if (!cursor || step >= 6) continue;
        // Between pages: one file added and one removed on each side of the cursor.
        const last = got.at(-1)!;
        const gone = before.filter((u) => !u.endsWith('/') && !removed.has(u));
        const victims = [gone.find((u) => u < last), gone.findLast((u) => u > last)].filter((u): u is string => !!u);
        const newcomers = [`d0/a${step}.txt`, `d2/z${step}.txt`];
        for (const rel of newcomers) writeFileSync(join(dir.path, rel), 'new\n');
        for (const u of victims) rmSync(new URL(u));
        for (const rel of newcomers) await waitFor(() => indexed(rel), 30_000, `index sees ${rel}`);
        for (const u of victims) await waitFor(() => indexed(u.slice(R.length)).then((x) => !x), 30_000, `index drops ${u}`);
        for (const rel of newcomers) added.add(R + rel);
        for (const rel of newcomers) if (R + rel > last) mustSee.add(R + rel);
        for (const u of victims) removed.add(u);
        step++;
      } while (cursor);
      assert.ok(step >= 3, `changes happened between pages (${step})`);
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i - 1]! < seen[i]!, `ascending, no duplicates at ${seen[i]}`);
      for (const u of before) {
        if (!removed.has(u)) assert.equal(seen.filter((s) => s === u).length, 1, `untouched ${u} seen once`);
      }
      for (const u of seen) assert.ok(before.includes(u) || added.has(u), `nothing from nowhere: ${u}`);
      for (const u of seen) assert.ok(!removed.has(u) || before.includes(u), `removed ${u}`);
      for (const u of mustSee) assert.ok(seen.includes(u), `added after the cursor and seen: ${u}`);
      assert.ok(mustSee.size > 0);
    } finally {
      await conn.close();
      dir.cleanup();
      state.cleanup();
    }
  });
});

describe('the scan budget', () => {
  const needles = ['d00/needle-a', 'd23/needle-c'];
  const tree = serveTree(
    (root) => {
      // 12,000 rows with no match between the needles: more than one page's scan budget.
      bigTree(root, 24 * 500, (i) => `d${String(Math.floor(i / 500)).padStart(2, '0')}/hay${i % 500}`);
      for (const n of needles) writeFileSync(join(root, n), '');
    },
    ({ root, state }) => [root, '--db', join(state, 'i.db'), '--page-size', '1', '--watcher', 'none'],
  );
  let conn: Connected;
  let R: string;
  before(() => {
    ({ conn, rootUri: R } = tree);
  });

  test('a selective namePattern over a big tree still reaches the end, through short pages', async () => {
    let cursor: string | undefined;
    const seen: string[] = [];
    let shortPages = 0;
    do {
      const page = await conn.request('resources/list', { filter: { namePatterns: ['needle*'] }, ...(cursor ? { cursor } : {}) });
      const got = (page.resources as LooseResult[]).map((r) => r.uri as string);
      seen.push(...got);
      cursor = page.nextCursor as string | undefined;
      if (got.length === 0 && cursor) shortPages++;
    } while (cursor);
    assert.deepEqual(seen, needles.map((n) => R + n));
    assert.ok(shortPages > 0, 'the budget cut at least one page short');
  });

  // A liveness guard, not a speed test: without a bound on matching work, one
  // page of 100 costly patterns over this tree takes minutes.
  test('100 costly patterns: every page is answered and the server keeps serving', { timeout: 120_000 }, async () => {
    const costly = Array.from({ length: 100 }, (_, i) => '**a'.repeat(80) + `**b${i}`);
    const params = { filter: { uriPatterns: costly, namePatterns: costly } };
    let cursor: string | undefined;
    for (let pages = 0; pages < 20; pages++) {
      const page = await conn.request('resources/list', cursor ? { ...params, cursor } : params);
      assert.deepEqual(page.resources, []);
      cursor = page.nextCursor as string | undefined;
      assert.ok(cursor, 'not at the end of 12,000 rows yet');
      const meta = await conn.request('resources/metadata', { uri: R + needles[0] });
      assert.equal((meta.resource as LooseResult).name, 'needle-a');
    }
  });
});
