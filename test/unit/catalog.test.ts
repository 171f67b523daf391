// Unit tests of the catalog's pure parts (search query parsing, match
// location, path encoding, tool arguments -> filter model) and of the content
// index against a real FolderIndex on a real temp folder.
import assert from 'node:assert/strict';
import { rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { lazyCatalog } from '../../src/app.ts';
import type { Catalog } from '../../src/catalog/catalog.ts';
import { ContentSearch, isTextMime, locate } from '../../src/search/content-search.ts';
import { boundSnippet } from '../../src/search/search-reader.ts';
import { encodeRelative, escapeGlob, prefixUris } from '../../src/catalog/paths.ts';
import { scopeQuery } from '../../src/catalog/scope.ts';
import { parseSearchQuery, SearchQueryError } from '../../src/search/search-query.ts';
import { searchTool } from '../../src/catalog/search.ts';
import { resourceGroups } from '../../src/catalog/groups.ts';
import type { ServerContext } from '../../src/protocol/context.ts';
import { ToolFailure } from '../../src/catalog/tool.ts';
import { entryRow } from '../../src/index/scan.ts';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { silentLogger } from '../../src/log.ts';
import { matchesQuery, planQuery } from '../../src/query/plan.ts';
import { makeRoot, pathToUri } from '../../src/uri.ts';
import { tempDir, waitFor, writeTree } from '../basics.ts';

describe('parseSearchQuery', () => {
  const cases: [string, string, string[]][] = [
    ['fox', '"fox"', ['fox']],
    ['quick  brown fox', '"quick" "brown" "fox"', ['quick', 'brown', 'fox']],
    ['"brown fox" jumps', '"brown fox" "jumps"', ['"brown fox"', 'jumps']],
    ['pars*', '"pars"*', ['pars*']],
    ['NEAR(a b)', '"NEAR(a" "b)"', ['NEAR(a', 'b)']],
    ['a OR b', '"a" "OR" "b"', ['a', 'OR', 'b']],
    ['-secret', '"-secret"', ['-secret']],
    ['col:value', '"col:value"', ['col:value']],
    ['x * y', '"x" "y"', ['x', 'y']],
    ['^start', '"^start"', ['^start']],
    ['say "a ""b"', '"say" "a " "b"', ['say', '"a "', '"b"']],
    ['word"phrase here"', '"word" "phrase here"', ['word', '"phrase here"']],
    ['café', '"café"', ['café']],
    ['foo.*', '"foo.*"', ['foo.*']],
    // Control characters separate words: a NUL inside a quoted term ended SQLite's string.
    ['a\u0000b', '"a" "b"', ['a', 'b']],
    ['"x\u0000y" z\tw', '"x y" "z" "w"', ['"x y"', 'z', 'w']],
  ];
  for (const [input, match, terms] of cases) {
    test(`${JSON.stringify(input)} -> ${match}`, () => {
      const parsed = parseSearchQuery(input);
      assert.equal(parsed.match, match);
      assert.deepEqual(parsed.terms, terms);
    });
  }

  test('malformed and empty queries are clear errors', () => {
    assert.throws(() => parseSearchQuery('say "hello'), (e: Error) => e instanceof SearchQueryError && /Unbalanced quote/.test(e.message));
    assert.throws(() => parseSearchQuery('* - : ""'), /no words/);
    assert.throws(() => parseSearchQuery('   '), /no words/);
    assert.throws(() => parseSearchQuery('x'.repeat(1001)), /longer than 1000/);
    assert.throws(() => parseSearchQuery(Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ')), /more than 16 terms/);
  });

  test('prefix terms are bounded: three letters at least, four at most (a one-letter prefix matches most words)', () => {
    assert.throws(() => parseSearchQuery('w*'), (e: Error) => e instanceof SearchQueryError && /w\* is too short/.test(e.message));
    assert.throws(() => parseSearchQuery('parser ab*'), /ab\* is too short: a prefix needs at least 3/);
    assert.throws(() => parseSearchQuery('w* f* a* b* c* d* e* g* h* i* j* k* l* m* n* o*'), /too short/);
    assert.throws(() => parseSearchQuery('abc* def* ghi* jkl* mno*'), /more than 4 prefix/);
    assert.equal(parseSearchQuery('abc* def* ghi* jkl* plain words').terms.length, 6);
    assert.equal(parseSearchQuery('"é*"').terms[0], '"é*"', 'a star inside a phrase is text, not a prefix');
  });

  test('a prefix is the token before the *: other characters split the word, and each part is a token of its own (a red-team finding)', () => {
    // FTS5 reads "the-a"* as the phrase `the` then `a*`: a one-letter prefix, with four letters in the word.
    for (const query of ['the-a*', 'of.s*', "don't*", 'x_y*', 'a/b/c*', 'abc-de*', 'the–a*']) {
      assert.throws(() => parseSearchQuery(query), /is too short/, query);
    }
    for (const [query, match] of [
      ['the-abc*', '"the-abc"*'],
      ['über-straße*', '"über-straße"*'],
      ['v1.2.345*', '"v1.2.345"*'],
    ] as const) {
      assert.equal(parseSearchQuery(query).match, match, query);
    }
  });
});

describe('locate', () => {
  const body = 'first line\nsecond has the word\n  third: the word again\n';
  test('line and line text of the first highlight', () => {
    assert.deepEqual(locate('…has the \u0001word\u0002 …', body), { line: 2, text: 'second has the word', snippet: '…has the «word» …' });
    assert.equal(locate('third: the \u0001word\u0002 again', body).line, 3);
    assert.equal(locate('\u0001first\u0002 line', body).line, 1);
  });
  test('falls back to a case-insensitive search, then to line 1', () => {
    assert.equal(locate('x \u0001THIRD\u0002 y', body).line, 3);
    assert.equal(locate('no highlight at all', body).line, 1);
  });
  test('long lines are trimmed, snippets put on one line', () => {
    const long = `${'a '.repeat(200)}needle`;
    const found = locate('\u0001needle\u0002', long);
    assert.ok(found.text.length <= 241);
    assert.equal(locate('a\nb \u0001c\u0002', 'a\nb c').snippet, 'a b «c»');
  });
  test('a snippet is at most 320 characters around its first highlight, however much lies between its tokens (a red-team finding: a megabyte a hit)', () => {
    const filler = '\u0003'.repeat(1_000_000);
    const body = `alpha ${filler} needle\n`;
    const found = locate(`alpha ${filler} \u0001needle\u0002`, body);
    assert.equal(found.line, 1);
    assert.ok(found.snippet.length <= 322, `${found.snippet.length} characters`);
    assert.match(found.snippet, /^…\u0003+ «needle»$/);
    const table = `| a |\n${'|---|\n'.repeat(200_000)}| the word |\n`;
    const cut = locate(`\u0001a\u0002 ${'|---| '.repeat(200_000)}| the word |`, table).snippet;
    assert.ok(cut.length <= 322 && cut.startsWith('«a»') && cut.endsWith('…'), cut.slice(0, 40));
  });
  test('a match in the second of two sheets of one layout is placed in the second: the text before it is unique only far back', () => {
    const sheet = (n: number, row: string) => `## Sheet ${n}\n| when | who |\n${'| --- '.repeat(30)}|\n| ${row} |\n`;
    const body = sheet(1, '2024 acme') + sheet(2, '2024 initech');
    const found = locate(`…Sheet 2\n| when | who |\n${'| --- '.repeat(30)}|\n| \u00012024\u0002 initech |`, body);
    assert.equal(found.line, 8);
    assert.equal(found.text, '| 2024 initech |');
  });
  test('boundSnippet cuts at a character, and closes a highlight it cut open (pure)', () => {
    const emoji = `${'😀'.repeat(300)}`;
    const around = boundSnippet(`${emoji}\u0001w\u0002${emoji}`);
    assert.equal(Buffer.from(around).toString(), around, 'no lone surrogate');
    assert.equal(around.indexOf('\u0001'), around.lastIndexOf('\u0001'));
    const open = boundSnippet(`\u0001${'w'.repeat(1000)}\u0002`);
    assert.equal(open.length, 322);
    assert.ok(open.startsWith('\u0001w') && open.endsWith('\u0002…'), 'closed, then cut');
    assert.equal(boundSnippet('short \u0001w\u0002'), 'short \u0001w\u0002');
  });
});

describe('paths', () => {
  test('encodeRelative spells paths as the index does, without normalising', () => {
    const root = '/srv/p';
    for (const rel of ['src/main.ts', 'docs/café.md', 'with space/a#b?.md', 'x/[y]{z}%.txt', 'emoji/😀.md']) {
      assert.equal(`file://${root}/${encodeRelative(rel)}`, pathToUri(`${root}/${rel}`, false), rel);
    }
    assert.equal(encodeRelative('a/../b/./c'), 'a/../b/./c');
  });
  test('escapeGlob leaves no metachar active', () => {
    assert.equal(escapeGlob('file:///a*b/[x]{y}?\\'), 'file:///a\\*b/\\[x\\]\\{y\\}\\?\\\\');
  });
  test('prefixUris: a URI as is (canonical), a relative path under every root', () => {
    const roots = [makeRoot('/srv/a'), makeRoot('/srv/b')];
    assert.deepEqual(prefixUris('file:///srv/a/caf\u00e9', roots), ['file:///srv/a/caf%C3%A9']);
    assert.deepEqual(prefixUris('./src/ma', roots), ['file:///srv/a/src/ma', 'file:///srv/b/src/ma']);
  });
});

describe('scopeQuery', () => {
  const one = [makeRoot('/srv/p*x')];
  const two = [makeRoot('/srv/a'), makeRoot('/srv/b')];
  const row = (uri: string) => ({ uri, name: decodeURIComponent(uri.replace(/\/$/, '').split('/').pop()!) });

  test('relative globs match under the root only, whatever the root name holds', () => {
    const q = scopeQuery({ glob: ['src/**/*.ts'] }, one);
    assert.ok(matchesQuery(q, row('file:///srv/p*x/src/a/b.ts')));
    assert.ok(!matchesQuery(q, row('file:///srv/pyx/src/a/b.ts')));
    assert.ok(!matchesQuery(q, row('file:///srv/p*x/lib/b.ts')));
    // The literal head of each glob is a key range: the plan reads only the root's src/.
    assert.deepEqual(planQuery(q).ranges, [{ lo: 'file:///srv/p*x/src/', hi: 'file:///srv/p*x/src0' }]);
  });

  test('names, prefixes, several roots', () => {
    const q = scopeQuery({ name: ['*.md'], prefix: 'docs/' }, two);
    assert.ok(matchesQuery(q, row('file:///srv/b/docs/x.md')));
    assert.ok(!matchesQuery(q, row('file:///srv/b/src/x.md')));
    assert.ok(!matchesQuery(q, row('file:///srv/b/docs/x.txt')));
    const single = scopeQuery({ prefix: 'docs/caf\u00e9' }, [makeRoot('/srv/a')]);
    assert.equal(single.prefix, 'file:///srv/a/docs/caf%C3%A9');
  });

  test('bad patterns and conflicting arguments are tool failures with the pattern named', () => {
    assert.throws(() => scopeQuery({ glob: ['a/[b'] }, one), (e: Error) => e instanceof ToolFailure && e.message.startsWith("Invalid pattern in glob: 'a/[b'"));
    assert.throws(() => scopeQuery({ name: ['{a,b'] }, one), /Invalid pattern in name/);
    assert.throws(() => scopeQuery({ glob: Array.from({ length: 101 }, () => '*') }, one), /Too many patterns/);
    assert.throws(() => scopeQuery({ glob: ['*.md'], prefix: 'docs/x' }, two), /either a relative prefix that names a folder/);
  });
});

test('isTextMime', () => {
  for (const t of ['text/plain', 'text/typescript', 'application/json', 'application/ld+json', 'image/svg+xml', 'application/x-sh', 'application/toml']) {
    assert.ok(isTextMime(t), t);
  }
  for (const t of ['image/png', 'application/pdf', 'application/octet-stream', 'application/zip', 'inode/directory']) {
    assert.ok(!isTextMime(t), t);
  }
});

describe('ContentSearch on a real index', () => {
  test('builds, follows apply(), drops what vanished, and skips binaries and big files', async () => {
    const dir = tempDir();
    const state = tempDir('folder-mcp-state-');
    try {
      writeTree(dir.path, {
        'a.md': 'alpha beta\n',
        'sub/b.txt': 'beta gamma\n',
        'bin.dat': Buffer.from([0, 1, 2, 3]),
        'huge.txt': 'delta '.repeat(400),
      });
      const root = makeRoot(dir.path);
      const index = new FolderIndex({ roots: [root], dbFile: join(state.path, 'i.db'), log: silentLogger, gitignore: true, exclude: [] });
      const search = new ContentSearch(index, silentLogger, 1000);
      index.readiness.catchUp(Promise.resolve()); // no live layer: caught up with the disk once scanned
      search.start();
      await search.idle();
      const scope = { ...planQuery({ method: 'resources/list' }), exact: true };
      const hits = (q: string) => search.search(parseSearchQuery(q), scope, 10).map((h) => h.row.name);
      assert.deepEqual(hits('beta').sort(), ['a.md', 'b.txt']);
      assert.deepEqual(hits('delta'), [], 'over the size cap: not indexed');
      assert.deepEqual(search.progress, { done: 2, total: 2, complete: true, waiting: 0, rechecking: false });

      // A live change, as the watcher reports it.
      const path = join(dir.path, 'a.md');
      writeFileSync(path, 'epsilon only\n');
      const stats = statSync(path);
      index.apply({ upserted: [entryRow(path, 'a.md', false, stats, root.uri, 0)], removed: [] });
      await search.idle();
      assert.deepEqual(hits('alpha'), []);
      assert.deepEqual(hits('epsilon'), ['a.md']);
      // A removed collection takes its documents with it.
      rmSync(join(dir.path, 'sub'), { recursive: true });
      index.apply({ upserted: [], removed: [pathToFileURL(join(dir.path, 'sub')).href + '/'] });
      await search.idle();
      assert.deepEqual(hits('gamma'), []);
      await search.close();
      index.close();

      // A restart on the warm index: the persisted content index still answers.
      const again = new FolderIndex({ roots: [root], dbFile: join(state.path, 'i.db'), log: silentLogger, gitignore: true, exclude: [] });
      const search2 = new ContentSearch(again, silentLogger, 1000);
      again.readiness.catchUp(Promise.resolve()); // no live layer: caught up with the disk once scanned
      search2.start();
      await search2.idle();
      assert.deepEqual(search2.search(parseSearchQuery('epsilon'), scope, 10).map((h) => h.row.name), ['a.md']);
      await search2.close();
      again.close();
    } finally {
      dir.cleanup();
      state.cleanup();
    }
  });
});

test("the first build waits for the index's catch-up with the disk: nothing counted or written before it is over, changes meanwhile kept", async () => {
  const dir = tempDir();
  const state = tempDir('folder-mcp-state-');
  try {
    writeTree(dir.path, { 'a.md': 'alpha\n', 'sub/b.txt': 'beta\n' });
    const root = makeRoot(dir.path);
    const index = new FolderIndex({ roots: [root], dbFile: join(state.path, 'i.db'), log: silentLogger, gitignore: true, exclude: [] });
    const search = new ContentSearch(index, silentLogger);
    // What src/app.ts gives a cold start: the live sync's catch-up with the disk (watcher up, what changed behind the scan checked).
    let open!: () => void;
    index.readiness.catchUp(new Promise<void>((resolve) => (open = resolve)));
    search.start();
    await index.readiness.reached('scanned');
    // A change the catch-up brings in while the build waits: followed once it runs, not lost.
    const path = join(dir.path, 'c.md');
    writeFileSync(path, 'gamma\n');
    index.apply({ upserted: [entryRow(path, 'c.md', false, statSync(path), root.uri, 0)], removed: [] });
    // Not gated, a build of three small files counts them within milliseconds of the scan.
    const counted = await waitFor(() => search.progress.total > 0, 3000).then(
      () => true,
      () => false,
    );
    assert.equal(counted, false, 'the build started before the catch-up was over');
    // The change is known and not indexed yet: a search says so.
    assert.deepEqual(search.progress, { done: 0, total: 0, complete: false, waiting: 1, rechecking: false });
    const scope = { ...planQuery({ method: 'resources/list' }), exact: true };
    const hits = (q: string) => search.search(parseSearchQuery(q), scope, 10).map((h) => h.row.name);
    assert.deepEqual(['alpha', 'beta', 'gamma'].flatMap(hits), []);
    open();
    await search.idle();
    assert.deepEqual(search.progress, { done: 3, total: 3, complete: true, waiting: 0, rechecking: false });
    assert.deepEqual(['alpha', 'beta', 'gamma'].flatMap(hits), ['a.md', 'b.txt', 'c.md']);
    await search.close();
    index.close();

    // A catch-up that fails still lets the build run; one that never ends does not hold up close().
    const again = new FolderIndex({ roots: [root], dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [] });
    const failed = new ContentSearch(again, silentLogger);
    again.readiness.catchUp(Promise.reject(new Error('the watcher failed')));
    failed.start();
    await failed.idle();
    assert.deepEqual(failed.progress, { done: 3, total: 3, complete: true, waiting: 0, rechecking: false });
    await failed.close();
    again.close();
    const third = new FolderIndex({ roots: [root], dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [] });
    const held = new ContentSearch(third, silentLogger);
    third.readiness.catchUp(new Promise(() => {}));
    held.start();
    await third.readiness.reached('scanned');
    await held.close();
    assert.deepEqual(held.progress, { done: 0, total: 0, complete: false, waiting: 0, rechecking: false });
    third.close();
  } finally {
    dir.cleanup();
    state.cleanup();
  }
});

test('a warm restart answers from the last index and says it is re-checking until it has caught up with the disk and checked every document', async () => {
  const dir = tempDir();
  const state = tempDir('folder-mcp-state-');
  try {
    writeTree(dir.path, { 'a.md': 'alpha\n', 'b.md': 'beta\n' });
    const root = makeRoot(dir.path);
    const dbFile = join(state.path, 'i.db');
    const options = { roots: [root], dbFile, log: silentLogger, gitignore: true, exclude: [] };
    const index = new FolderIndex(options);
    const search = new ContentSearch(index, silentLogger);
    index.readiness.catchUp(Promise.resolve()); // no live layer: caught up with the disk once scanned
    search.start();
    await search.idle();
    assert.equal(search.progress.rechecking, false, 'a cold build is not a re-check');
    await search.close();
    index.close();
    // Edited while no server ran.
    const path = join(dir.path, 'a.md');
    writeFileSync(path, 'omega\n');

    const again = new FolderIndex(options);
    const search2 = new ContentSearch(again, silentLogger);
    // What src/app.ts gives a warm start: the live sync's catch-up, which finds what changed since the last run.
    let open!: () => void;
    again.readiness.catchUp(new Promise<void>((resolve) => (open = resolve)));
    search2.start();
    await search2.idle();
    const scope = { ...planQuery({ method: 'resources/list' }), exact: true };
    const hits = (q: string) => search2.search(parseSearchQuery(q), scope, 10).map((h) => h.row.name);
    // Complete (answers at once, from the last run's index) and every document checked, but the edit is not
    // known yet: the answer must say it may be stale.
    assert.deepEqual(search2.progress, { done: 2, total: 2, complete: true, waiting: 0, rechecking: true });
    assert.deepEqual(hits('omega'), []);
    // The search tool says so, in its text and its structured result.
    const ctx = { index: again, roots: [root], log: silentLogger } as unknown as ServerContext;
    const stale = await searchTool.run({ ctx, search: search2 }, { query: 'omega', limit: 20 });
    assert.equal(stale.structuredContent!.rechecking, true);
    assert.match(String(stale.content[0]!.text), /being re-checked against the disk; a file changed since may be missing/);
    // The catch-up finds the edit, then ends.
    again.apply({ upserted: [entryRow(path, 'a.md', false, statSync(path), root.uri, 0)], removed: [] });
    open();
    await again.readiness.reached('caught-up');
    await search2.idle();
    assert.deepEqual(search2.progress, { done: 2, total: 2, complete: true, waiting: 0, rechecking: false });
    assert.deepEqual(hits('omega'), ['a.md']);
    const fresh = await searchTool.run({ ctx, search: search2 }, { query: 'omega', limit: 20 });
    assert.equal(fresh.structuredContent!.rechecking, undefined);
    assert.doesNotMatch(String(fresh.content[0]!.text), /re-checked/);
    await search2.close();
    again.close();
  } finally {
    dir.cleanup();
    state.cleanup();
  }
});

test('the lazily loaded catalog loads once, and a failed load fails each catalog request with its error', async () => {
  let loads = 0;
  const listed = { tools: [] };
  const catalog = lazyCatalog(async () => {
    loads++;
    return { listTools: async () => listed } as unknown as Catalog;
  });
  assert.equal(loads, 0, 'nothing loads before the first request');
  const [a, b] = await Promise.all([catalog.listTools({}), catalog.listTools({})]);
  assert.equal(a, listed);
  assert.equal(b, listed);
  assert.equal(loads, 1);

  const broken = lazyCatalog(() => Promise.reject(new Error('Cannot find module catalog.js')));
  await assert.rejects(broken.listTools({}), /Cannot find module catalog\.js/);
  await assert.rejects(broken.callTool({ name: 'find' }), /Cannot find module catalog\.js/);
  await assert.rejects(broken.readReserved('mcp://groups/tools'), /Cannot find module catalog\.js/);
});

test('search says so while the content index is still being built', async () => {
  const dir = tempDir();
  const state = tempDir('folder-mcp-state-');
  try {
    writeTree(dir.path, { 'a.md': 'alpha\n' });
    const root = makeRoot(dir.path);
    const index = new FolderIndex({ roots: [root], dbFile: join(state.path, 'i.db'), log: silentLogger, gitignore: true, exclude: [] });
    await index.readiness.reached('scanned');
    // Not started: the state of the first moments after a scan.
    const search = new ContentSearch(index, silentLogger);
    const ctx = { index, roots: [root], log: silentLogger } as unknown as ServerContext;
    const result = await searchTool.run({ ctx, search }, { query: 'alpha', limit: 20 });
    assert.deepEqual(result.structuredContent!.indexing, { done: 0, total: 0 });
    assert.match(String(result.content[0]!.text), /still being built/);
    index.readiness.catchUp(Promise.resolve()); // no live layer: caught up with the disk once scanned
    search.start();
    await search.idle();
    const done = await searchTool.run({ ctx, search }, { query: 'alpha', limit: 20 });
    assert.equal(done.structuredContent!.indexing, undefined);
    assert.equal((done.structuredContent!.results as unknown[]).length, 1);
    await search.close();
    index.close();
  } finally {
    dir.cleanup();
    state.cleanup();
  }
});

test('resource groups name at most 200 top-level folders per root and count the rest', async () => {
  const dir = tempDir();
  try {
    writeTree(dir.path, Object.fromEntries(Array.from({ length: 205 }, (_, i) => [`d${String(i).padStart(3, '0')}/`, ''])));
    writeTree(dir.path, { 'file.txt': 'not a group\n' });
    const root = makeRoot(dir.path);
    const index = new FolderIndex({ roots: [root], dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [] });
    await index.readiness.reached('scanned'); // what src/server.ts waits for before any request that reads the index
    const ctx = { index, roots: [root], log: silentLogger } as unknown as ServerContext;
    const doc = await resourceGroups(ctx);
    assert.equal(doc.groups.length, 201);
    assert.deepEqual(doc.groups[0]!.uri_paths, [root.uri]);
    assert.equal(doc.groups[1]!.name, `${root.name}/d000`);
    assert.equal(doc.groups[200]!.name, `${root.name}/d199`);
    assert.deepEqual(doc.omitted, { [root.uri]: 5 });
    index.close();
  } finally {
    dir.cleanup();
  }
});
